/**
 * PostgreSQL for tests. The server is required: when it cannot be reached, every test that
 * calls `requirePostgres()` FAILS with the reason; nothing is skipped.
 *
 * Server: GATEHOUSE_TEST_DATABASE_URL (`.ci/run` exports it), default
 * postgres://postgres@127.0.0.1:5432/test. Each test file works in schemas of its own, named
 * after the process and a random suffix, and drops them afterwards, so parallel runs (and
 * parallel files) never meet.
 */
import { randomBytes } from 'node:crypto';
import pg from 'pg';

export const TEST_DATABASE_URL = process.env.GATEHOUSE_TEST_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/test';

let reachable: Promise<void> | undefined;

/** Resolves once the server answered; rejects (every time it is asked) with how to fix it. */
export function requirePostgres(): Promise<void> {
  reachable ??= (async () => {
    const client = new pg.Client({ connectionString: TEST_DATABASE_URL, connectionTimeoutMillis: 5000 });
    try {
      await client.connect();
      await client.query('select 1');
    } catch (error) {
      throw new Error(
        `PostgreSQL is required for these tests and is not reachable at ${TEST_DATABASE_URL}: ` +
          `${(error as Error).message || String(error)}. ` +
          'Start it or point GATEHOUSE_TEST_DATABASE_URL at one.',
        { cause: error },
      );
    } finally {
      await client.end().catch(() => {});
    }
  })();
  return reachable;
}

/** Runs one query on a short-lived connection. */
export async function query<R extends pg.QueryResultRow>(
  text: string,
  values: unknown[] = [],
): Promise<pg.QueryResult<R>> {
  const client = new pg.Client({ connectionString: TEST_DATABASE_URL });
  await client.connect();
  try {
    return await client.query<R>(text, values);
  } finally {
    await client.end().catch(() => {});
  }
}

/**
 * Resolves once `count` connections named `applicationName` (a store's, `storeApplicationName`)
 * wait for a lock: a table's, a row's or an advisory one.
 */
export async function untilLockWaits(applicationName: string, count: number, timeoutMs = 10_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const { rows } = await query<{ n: number }>(
      "select count(*)::int as n from pg_stat_activity where application_name = $1 and wait_event_type = 'Lock'",
      [applicationName],
    );
    if (rows[0]?.n === count) return;
    if (Date.now() > deadline)
      throw new Error(`timed out after ${timeoutMs} ms waiting for ${count} connections of ${applicationName} to wait`);
    await new Promise((r) => setTimeout(r, 10));
  }
}

/** Hands out fresh schema names for one test file and drops them all at the end. */
export class TestSchemas {
  readonly #run = `gh_t${process.pid}_${randomBytes(3).toString('hex')}`;
  readonly #names: string[] = [];

  /** A schema name nobody has used (it does not exist yet: the gateway creates it). */
  fresh(label: string): string {
    const name = `${this.#run}_${label}`.toLowerCase();
    if (!/^[a-z_][a-z0-9_]{0,39}$/.test(name))
      throw new Error(`test schema name "${name}" is not a valid Gatehouse schema name`);
    this.#names.push(name);
    return name;
  }

  async dropAll(): Promise<void> {
    if (this.#names.length === 0) return;
    if (
      !(await requirePostgres().then(
        () => true,
        () => false,
      ))
    )
      return;
    for (const name of this.#names) await query(`drop schema if exists "${name}" cascade`);
  }
}

/**
 * The test URL with a password in it (when it has none), to prove the gateway never prints
 * it. With trust authentication the server ignores it.
 */
export function urlWithPassword(password: string): string {
  const url = new URL(TEST_DATABASE_URL);
  if (!url.password) url.password = password;
  return url.toString();
}
