/**
 * Runs the store contract against a real PostgreSQL server. It is required: when the server
 * cannot be reached every test here FAILS with the reason; nothing is skipped.
 *
 * Server: GATEHOUSE_TEST_DATABASE_URL, default postgres://postgres@127.0.0.1:5432/test.
 * Each run works in its own schemas (dropped afterwards), so parallel runs do not collide.
 */
import { randomBytes } from 'node:crypto';
import { Kysely, PostgresDialect } from 'kysely';
import pg from 'pg';
import { afterAll, beforeEach, describe, expect, it, vi } from 'vitest';
import { MIGRATIONS } from '../../src/store/migrations.js';
import { openPostgresStore, storeApplicationName } from '../../src/store/postgres.js';
import { untilLockWaits } from '../helpers/postgres.js';
import { describeStoreContract, keyRecord, waitFor } from './store-contract.js';
import { usageRecord } from './usage-contract.js';
import { expectUsageLogMigrated, writeOldUsageLog } from './usage-migration.js';
import {
  expectOneAdminMigrated,
  expectNameKeysMigrated,
  expectUsersKeptWithoutCap,
  writeOneAdminDatabase,
  writeUsersBeforeMaxBudget,
  writeUsersBeforeNameKey,
} from './users-migration.js';

const url = process.env.GATEHOUSE_TEST_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/test';
const run = `gh_test_${process.pid}_${randomBytes(4).toString('hex')}`;
const schemas: string[] = [];
const schemaFor = (suffix: string): string => {
  const schema = `${run}_${suffix}`;
  schemas.push(schema);
  return schema;
};

/** Checked once; every open goes through it so an unreachable server fails each test clearly. */
let reachable: Promise<void> | undefined;
function requirePostgres(): Promise<void> {
  reachable ??= (async () => {
    const client = new pg.Client({ connectionString: url, connectionTimeoutMillis: 5000 });
    try {
      await client.connect();
      await client.query('select 1');
    } catch (error) {
      throw new Error(
        `PostgreSQL is required for these tests and is not reachable at ${url}: ${(error as Error).message}. ` +
          'Start it or point GATEHOUSE_TEST_DATABASE_URL at one.',
        { cause: error },
      );
    } finally {
      await client.end().catch(() => {});
    }
  })();
  return reachable;
}

afterAll(async () => {
  if (
    !(await requirePostgres().then(
      () => true,
      () => false,
    ))
  )
    return;
  const client = new pg.Client({ connectionString: url });
  try {
    await client.connect();
    for (const schema of schemas) await client.query(`drop schema if exists "${schema}" cascade`);
  } finally {
    await client.end().catch(() => {});
  }
});

const contractSchema = schemaFor('contract');
describeStoreContract('PostgreSQL', async () => {
  await requirePostgres();
  return openPostgresStore({ url, schema: contractSchema, poolSize: 3 });
});

describe('PostgreSQL store', () => {
  beforeEach(requirePostgres);

  it('is reachable (this suite fails, never skips, without it)', async () => {
    await expect(requirePostgres()).resolves.toBeUndefined();
  });

  it('migrates a fresh schema once when several replicas open it at the same moment', async () => {
    const schema = schemaFor('race');
    const stores = await Promise.all(Array.from({ length: 4 }, () => openPostgresStore({ url, schema, poolSize: 2 })));
    try {
      const applied = stores.map((s) => s.migrationsApplied.length).sort();
      expect(applied).toEqual([0, 0, 0, Object.keys(MIGRATIONS).length]);
      const client = new pg.Client({ connectionString: url });
      await client.connect();
      try {
        const { rows } = await client.query<{ name: string }>(
          `select name from "${schema}".kysely_migration order by name`,
        );
        expect(rows.map((r) => r.name)).toEqual(Object.keys(MIGRATIONS));
      } finally {
        await client.end();
      }
    } finally {
      await Promise.all(stores.map((s) => s.close()));
    }
  });

  it('opens while another client of the database drops a schema of its own', async () => {
    const admin = new pg.Client({ connectionString: url });
    await admin.connect();
    try {
      for (let i = 0; i < 4; i++) {
        // A schema with many tables makes the catalog scan of a migration long enough to meet the drop.
        const other = `${run}_dropped_${i}`;
        const tables = Array.from({ length: 400 }, (_, t) => `create table "${other}".t${t} (a int, b text, c int)`);
        await admin.query(`create schema "${other}"; ${tables.join('; ')}`);
        const opening = openPostgresStore({ url, schema: schemaFor(`beside_${i}`), poolSize: 2 });
        await admin.query(`drop schema "${other}" cascade`);
        await (await opening).close();
      }
    } finally {
      await admin.end();
    }
  });

  it('keeps stores in different schemas of one database apart, notifications included', async () => {
    const schemaA = schemaFor('apart_a');
    const schemaB = schemaFor('apart_b');
    // No periodic resync during the test: every notification counted comes from a write.
    const a = await openPostgresStore({ url, schema: schemaA, poolSize: 2, resyncIntervalMs: 600_000 });
    const b = await openPostgresStore({ url, schema: schemaB, poolSize: 2, resyncIntervalMs: 600_000 });
    const a2 = await openPostgresStore({ url, schema: schemaA, poolSize: 2 });
    const b2 = await openPostgresStore({ url, schema: schemaB, poolSize: 2 });
    let bNotified = 0;
    let aNotified = 0;
    const stopB = b.watchKeys(() => bNotified++);
    const stopA = a.watchKeys(() => aNotified++);
    try {
      // Each watcher announces its LISTEN connection once.
      await waitFor(() => aNotified > 0 && bNotified > 0, 5000, 'both watchers listening');
      bNotified = aNotified = 0;
      await a2.keys.create(keyRecord());
      await waitFor(() => aNotified > 0, 1000, 'the same-schema store to be notified');
      // Notifications arrive in commit order: had B heard A's write, it would hear it before its own.
      await b2.keys.create(keyRecord());
      await waitFor(() => bNotified > 0, 1000, 'the other schema store to be notified of its own write');
      expect(bNotified).toBe(1);
      expect(aNotified).toBe(1);
      expect(await b.keys.count()).toBe(1);
      expect(await a.keys.count()).toBe(1);
    } finally {
      stopA();
      stopB();
      await Promise.all([a.close(), b.close(), a2.close(), b2.close()]);
    }
  });

  it('resyncs periodically even without notifications', async () => {
    const store = await openPostgresStore({ url, schema: schemaFor('resync'), poolSize: 2, resyncIntervalMs: 200 });
    vi.useFakeTimers({ toFake: ['setInterval', 'clearInterval'] });
    let notified = 0;
    const stop = store.watchKeys(() => notified++);
    try {
      // Advancing is synchronous, so the LISTEN connection's announcement cannot land in between.
      const before = notified;
      vi.advanceTimersByTime(600);
      expect(notified - before).toBe(3);
    } finally {
      stop();
      vi.useRealTimers();
      await store.close();
    }
  });

  it('makes a transaction that locks a key owner wait for the one holding that owner, and for nobody else', async () => {
    const schema = schemaFor('owner_lock');
    const store = await openPostgresStore({ url, schema, poolSize: 4 });
    const steps: string[] = [];
    let release!: () => void;
    const released = new Promise<void>((resolve) => (release = resolve));
    let holding!: () => void;
    const held = new Promise<void>((resolve) => (holding = resolve));
    try {
      const first = store.transaction(async (tx) => {
        await tx.lockKeyOwner('usr_a');
        holding();
        await released;
        steps.push('first ends');
      });
      await held;
      // Another owner, or the same owner in another schema's store, does not wait.
      await store.transaction((tx) => tx.lockKeyOwner('usr_b'));
      const elsewhere = await openPostgresStore({ url, schema: schemaFor('owner_lock_b'), poolSize: 2 });
      try {
        await elsewhere.transaction((tx) => tx.lockKeyOwner('usr_a'));
      } finally {
        await elsewhere.close();
      }

      const second = store.transaction(async (tx) => {
        await tx.lockKeyOwner('usr_a');
        steps.push('second holds');
      });
      await untilLockWaits(storeApplicationName(schema), 1);
      release();
      await Promise.all([first, second]);
      expect(steps).toEqual(['first ends', 'second holds']);
    } finally {
      release();
      await store.close();
    }
  });

  it('writes usage batches again after its connections were cut, the failed batch included', async () => {
    const schema = schemaFor('usage_reconnect');
    const store = await openPostgresStore({ url, schema, poolSize: 2 });
    const admin = new pg.Client({ connectionString: url });
    await admin.connect();
    try {
      await store.usage.append([usageRecord()]);
      const cut = await admin.query(
        'select pg_terminate_backend(pid) from pg_stat_activity where application_name = $1',
        [storeApplicationName(schema)],
      );
      expect(cut.rowCount).toBeGreaterThan(0);
      // Each of the pool's two connections may be handed out before the pool learns of the cut: the
      // batch may fail once per cut connection (the usage writer keeps it and retries); then it
      // must go through on a new one.
      const batch = [usageRecord(), usageRecord()];
      const append = () => store.usage.append(batch);
      await append().catch(append).catch(append);
      expect(await store.usage.count()).toBe(3);
      expect(await store.usage.get(batch[1]!.id)).toEqual(batch[1]);
    } finally {
      await admin.end().catch(() => {});
      await store.close();
    }
  });

  it('adds up rollups over many batches, each running the named upserts more often than PostgreSQL switches to a generic plan', async () => {
    const schema = schemaFor('usage_prepared');
    const store = await openPostgresStore({ url, schema, poolSize: 2 });
    try {
      const hour = 3_600_000;
      const base = Date.UTC(2031, 0, 1);
      // Batch n spreads its calls over n keys: 1 to 9 upserts per batch, on both pooled connections.
      const expected = new Map<string, number>();
      for (let round = 0; round < 3; round++) {
        for (let n = 1; n <= 9; n++) {
          const batch = Array.from({ length: n * 2 }, (_, i) =>
            usageRecord({ at: base + round * 1000 + i, keyId: `key_${i % n}`, keyName: `key ${i % n}`, model: 'm' }),
          );
          for (const r of batch) expected.set(r.keyId!, (expected.get(r.keyId!) ?? 0) + 1);
          await store.usage.append(batch);
        }
      }
      const byKey = await store.usage.rollup({
        resolution: 'hour',
        from: base,
        to: base + hour,
        stepMs: hour,
        groupBy: 'key',
      });
      expect(new Map(byKey.map((b) => [b.group, b.requests]))).toEqual(expected);
      expect(await store.usage.count()).toBe([...expected.values()].reduce((a, b) => a + b, 0));
    } finally {
      await store.close();
    }
  });

  it('makes the one admin password of an older version the first admin user, keeping its sessions', async () => {
    const schema = schemaFor('oneadmin');
    const pool = new pg.Pool({ connectionString: url, max: 1, options: `-c search_path=${schema}` });
    await pool.query(`create schema "${schema}"`);
    const old = new Kysely<unknown>({ dialect: new PostgresDialect({ pool }) });
    await writeOneAdminDatabase(old, { migrationTableSchema: schema });
    await old.destroy();
    const store = await openPostgresStore({ url, schema, poolSize: 2 });
    try {
      await expectOneAdminMigrated(store);
    } finally {
      await store.close();
    }
  });

  it('keeps the users of a database from before maximum budgets, each with no cap', async () => {
    const schema = schemaFor('maxbudget');
    const pool = new pg.Pool({ connectionString: url, max: 1, options: `-c search_path=${schema}` });
    await pool.query(`create schema "${schema}"`);
    const old = new Kysely<unknown>({ dialect: new PostgresDialect({ pool }) });
    await writeUsersBeforeMaxBudget(old, { migrationTableSchema: schema });
    await old.destroy();
    const store = await openPostgresStore({ url, schema, poolSize: 2 });
    try {
      await expectUsersKeptWithoutCap(store);
    } finally {
      await store.close();
    }
  });

  it('gives existing users their name keys, the oldest of look-alikes holding the name', async () => {
    const schema = schemaFor('namekey');
    const pool = new pg.Pool({ connectionString: url, max: 1, options: `-c search_path=${schema}` });
    await pool.query(`create schema "${schema}"`);
    const old = new Kysely<unknown>({ dialect: new PostgresDialect({ pool }) });
    await writeUsersBeforeNameKey(old, { migrationTableSchema: schema });
    await old.destroy();
    const store = await openPostgresStore({ url, schema, poolSize: 2 });
    try {
      await expectNameKeysMigrated(store);
    } finally {
      await store.close();
    }
  });

  it('keeps a request log written before it was keyed by time, with a key index that skips calls made without a key', async () => {
    const schema = schemaFor('oldlog');
    const pool = new pg.Pool({ connectionString: url, max: 1, options: `-c search_path=${schema}` });
    await pool.query(`create schema "${schema}"`);
    const old = new Kysely<unknown>({ dialect: new PostgresDialect({ pool }) });
    const records = await writeOldUsageLog(old, { migrationTableSchema: schema });
    await old.destroy();

    const store = await expectUsageLogMigrated(() => openPostgresStore({ url, schema, poolSize: 2 }), records);
    const client = new pg.Client({ connectionString: url });
    try {
      await client.connect();
      const { rows } = await client.query<{ indexname: string; indexdef: string }>(
        'select indexname, indexdef from pg_indexes where schemaname = $1 and tablename = $2 order by indexname',
        [schema, 'usage_requests'],
      );
      expect(rows.map((r) => r.indexname)).toEqual([
        'usage_requests_key_idx',
        'usage_requests_model_idx',
        'usage_requests_pk',
      ]);
      expect(rows[0]!.indexdef).toMatch(/\(key_id, at, id\) WHERE \(key_id IS NOT NULL\)/);
      expect(rows[2]!.indexdef).toMatch(/UNIQUE INDEX usage_requests_pk .*\(at, id\)/);
    } finally {
      await client.end();
      await store.close();
    }
  });

  it('refuses a schema name that is not a plain identifier', async () => {
    await expect(openPostgresStore({ url, schema: 'x"; drop table y; --' })).rejects.toThrow(/schema/);
  });
});
