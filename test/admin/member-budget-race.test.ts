/**
 * A member's maximum budget against two key writes at once, through the real admin API on a real
 * PostgreSQL store. Each write checks the member's other keys inside its own transaction, and
 * PostgreSQL's READ COMMITTED would let two of them read the same sum: the owner's lock makes the
 * second check wait for the first write to commit.
 */
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { storeApplicationName } from '../../src/store/postgres.js';
import { DEMO_CONFIG, startSimulator, type Simulator } from '../fakes/llama-swap/index.js';
import { api, errorCode, login } from '../helpers/admin.js';
import type { TestGateway } from '../helpers/gateway.js';
import { json } from '../helpers/http.js';
import { requirePostgres, TEST_DATABASE_URL, TestSchemas, untilLockWaits } from '../helpers/postgres.js';
import { adminApi, startUsageGateway } from '../usage/usage-helpers.js';

const PASSWORD = 'a password for a person';
const schemas = new TestSchemas();
const schema = schemas.fresh('cap_race');

let sim: Simulator;
let gateway: TestGateway;
beforeAll(async () => {
  await requirePostgres();
  sim = await startSimulator({ config: DEMO_CONFIG });
  gateway = await startUsageGateway(sim.url, { databaseUrl: TEST_DATABASE_URL, databaseSchema: schema });
}, 60_000);
afterAll(async () => {
  await gateway?.close();
  await sim?.close();
  await schemas.dropAll();
});

describe('a member’s maximum budget on PostgreSQL', () => {
  it('lets one of two key creates made at once through and refuses the other, when each fits alone but not both', async () => {
    const made = await adminApi(gateway, 'POST', '/api/users', {
      name: 'racer',
      role: 'member',
      password: PASSWORD,
      maxBudget: { tokens: 1000, period: 'day' },
    });
    expect(made.status, made.body.toString()).toBe(201);
    const { user } = json(made.body) as { user: { id: string } };
    const cookie = await login(gateway, PASSWORD, 'racer');

    // Another connection holds the key table against writes (reads still pass), so each create
    // reaches its insert before either commits: both checks read a member without keys, unless
    // the second waits for the first before reading.
    const holder = new pg.Client({ connectionString: TEST_DATABASE_URL });
    await holder.connect();
    try {
      await holder.query('begin');
      await holder.query(`lock table "${schema}".api_keys in share mode`);
      const creates = ['first', 'second'].map((name) =>
        api(gateway, 'POST', '/api/keys', { cookie, body: { name, budget: { tokens: 600, period: 'day' } } }),
      );
      // Without the owner's lock both wait at their insert; with it the second waits for the lock.
      await untilLockWaits(storeApplicationName(schema), 2);
      await holder.query('commit');

      const answers = await Promise.all(creates);
      expect(answers.map((res) => res.status).sort((a, b) => a - b)).toEqual([201, 403]);
      const refused = answers.find((res) => res.status === 403)!;
      expect(errorCode(refused)).toBe('admin_forbidden');
      expect((json(refused.body) as { error: { details: unknown } }).error.details).toEqual([
        { path: '/budget/tokens', message: 'at most 400 tokens per day remain of your maximum of 1000 tokens' },
      ]);
      const kept = await gateway.store!.keys.list({ ownerId: user.id });
      expect(kept.map((key) => key.budget.tokens)).toEqual([600]);
    } finally {
      await holder.end().catch(() => {});
    }
  });
});
