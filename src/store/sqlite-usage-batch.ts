/**
 * Writes a usage batch on a SQLite connection: prepared one-row statements for the request
 * rows and the rollup sums, in one synchronous transaction on the event loop.
 */
import type BetterSqlite3 from 'better-sqlite3';
import type { Kysely } from 'kysely';
import { compileUsageSql } from './usage-queries.js';
import { requestValues, ROLLUP_TABLES, rollupRows } from './usage-rows.js';
import type { Database } from './schema.js';
import type { UsageRecord } from './records.js';

/** `db` (the store's Kysely over the same connection) only compiles the SQL texts; the statements run on `raw`. */
export function sqliteUsageBatchWriter(
  raw: BetterSqlite3.Database,
  db: Kysely<Database>,
): (records: readonly UsageRecord[]) => void {
  const texts = compileUsageSql(db);
  const insert = raw.prepare<unknown[]>(texts.insertRequest);
  const upserts = ROLLUP_TABLES.map(
    ([table, bucketMs]) => [raw.prepare<unknown[]>(texts.upsert[table]), bucketMs] as const,
  );
  return raw.transaction((records: readonly UsageRecord[]) => {
    for (const record of records) insert.run(requestValues(record));
    for (const [upsert, bucketMs] of upserts) for (const row of rollupRows(records, bucketMs)) upsert.run(row);
  });
}
