/**
 * A request log written by a version before migration 0004 (keyed by id, with a separate
 * (at, id) index) must come through the migration whole: every row, findable by id, listed in
 * the same order, ids still unique. Each backend's test file runs this on its own engine.
 */
import type { Kysely } from 'kysely';
import { expect } from 'vitest';
import { migrateUpTo } from '../../src/store/migrations.js';
import type { Store } from '../../src/store/store.js';
import type { UsageRecord } from '../../src/store/records.js';
import { requestRow } from '../../src/store/usage-rows.js';
import { T0 } from './store-contract.js';
import { usageRecord } from './usage-contract.js';

const BEFORE_KEYED_BY_TIME = '0003_usage';
const KEYED_BY_TIME = '0004_usage_requests_keyed_by_time';

/** Builds the old schema on `old` and fills it; the caller then closes `old`. */
export async function writeOldUsageLog(
  old: Kysely<unknown>,
  options: { migrationTableSchema?: string; disableTransactions?: boolean } = {},
): Promise<UsageRecord[]> {
  await migrateUpTo(old, BEFORE_KEYED_BY_TIME, options);
  const records = Array.from({ length: 300 }, (_, i) =>
    usageRecord({
      at: T0 + Math.floor(i / 3),
      keyId: i % 4 === 0 ? null : `key_${i % 3}`,
      keyName: i % 4 === 0 ? null : `name ${i % 3}`,
      model: i % 5 === 0 ? null : `m${i % 2}`,
      // Columns added after 0004 did not exist then; they read back as null.
      queueMs: null,
      gpuMs: null,
    }),
  );
  const rowAtThatTime = (record: UsageRecord) => {
    const { queue_ms: _added, gpu_ms: _gpu, ...row } = requestRow(record);
    return row;
  };
  await (old as Kysely<Record<string, Record<string, unknown>>>)
    .insertInto('usage_requests')
    .values(records.map(rowAtThatTime))
    .execute();
  return records;
}

/** Opens the old database with today's code and checks the log survived the migration. */
export async function expectUsageLogMigrated(open: () => Promise<Store>, records: UsageRecord[]): Promise<Store> {
  const store = await open();
  expect(store.migrationsApplied[0]).toBe(KEYED_BY_TIME);
  expect(await store.usage.count()).toBe(records.length);
  for (const i of [0, 1, 2, 150, 299]) expect(await store.usage.get(records[i]!.id)).toEqual(records[i]);
  const newestFirst = [...records].sort((a, b) => b.at - a.at || (a.id < b.id ? 1 : -1)).map((r) => r.id);
  expect((await store.usage.list({ limit: 500 })).map((r) => r.id)).toEqual(newestFirst);
  const keyA = records.filter((r) => r.keyId === 'key_1');
  expect((await store.usage.list({ limit: 500, keyId: 'key_1' })).map((r) => r.id).sort()).toEqual(
    keyA.map((r) => r.id).sort(),
  );
  const again = await store.usage.append([usageRecord({ id: records[7]!.id, at: records[7]!.at })]).then(
    () => undefined,
    (e: unknown) => e as { code?: string },
  );
  expect(again?.code).toMatch(/^(SQLITE_CONSTRAINT|23505)/);
  return store;
}
