/** A cheap scrypt cost for tests: at the production cost every sign-in costs a good fraction of a second. */
export const TEST_PASSWORD_HASH_COST = Object.freeze({ N: 1024, r: 8, p: 1 });
/** The same, as GATEHOUSE_PASSWORD_HASH_COST for the processes tests start. */
export const TEST_PASSWORD_HASH_COST_ENV = 'N=1024,r=8,p=1';
