/**
 * The request log and its rollups, for both dialects (portable SQL only).
 *
 * Why rollups: the summary API must not scan the request log. With SQLite the driver runs on
 * the proxy's event loop, so a 30-day percentile over millions of rows would stall every
 * stream. Each batch written also adds its calls to per-minute and per-hour sums (with a fixed
 * latency histogram), and summaries read those: at most a few thousand small rows.
 *
 * Why the writes are not built here: a batch is hundreds of rows, every half second under load.
 * Laying them out on the proxy's thread allocated enough at once to trigger back-to-back
 * young-generation collections, which promoted every request in flight (measured as most of
 * recording's cost, docs/benchmarks.md). So `append` hands the encoded batch
 * (usage-record-codec.ts) to the dialect's `appendBatch` (the usage write thread, which decodes
 * it and builds the statements with usage-rows.ts), and this file only compiles their SQL
 * texts, once: one per chunk size (powers of two), with Kysely.
 */
import { CompiledQuery, sql, type Kysely, type RawBuilder, type Selectable } from 'kysely';
import type { Database, UsageRequestsTable } from './schema.js';
import type { TokensSource, UsageBucket, UsageListRow, UsageRecord, UsageStore } from './store.js';
import { usageIdTime } from './usage-id.js';
import { RecordSegment } from './usage-record-codec.js';
import {
  allChunkSizes,
  emptyRollupRow,
  INSERT_CHUNK,
  LATENCY_COLUMNS,
  requestRow,
  ROLLUP_CHUNK,
  SUM_COLUMNS,
  COPY_REQUESTS_SQL,
  type RollupRow,
  type RollupTable,
  type UsageSqlTexts,
} from './usage-rows.js';

/** Runs write statements in one transaction; resolves with each one's affected row count. */
export type WriteBatch = (queries: readonly CompiledQuery[]) => Promise<number[]>;
/** Writes one encoded batch of records and its rollups in one transaction. */
export type AppendBatch = (batch: RecordSegment) => Promise<void>;

/** The rollup tables seen with their column names as plain strings (32 generated columns). */
type LooseRollups = Kysely<Record<RollupTable, RollupRow>>;

/**
 * How a batch of request rows is inserted. `values`: multi-row INSERTs of up to 256 rows
 * (portable; SQLite). `copy`: PostgreSQL's COPY FROM STDIN, one per batch (usage-rows.ts).
 */
export type RequestInsert = 'values' | 'copy';

/** Every SQL text a usage batch can need, compiled by Kysely for `db`'s dialect. */
export function compileUsageSql(db: Kysely<Database>, requestInsert: RequestInsert): UsageSqlTexts {
  const rollups = db as unknown as LooseRollups;
  const sample: UsageRecord = {
    id: '', at: 0, requestId: '', keyId: null, keyName: null, model: null, method: '', endpoint: '', status: 0, streamed: false,
    inputTokens: null, outputTokens: null, cachedTokens: null, tokensSource: null, ttfbMs: null, ttftMs: null, durationMs: 0,
    bytesIn: 0, bytesOut: 0, clientAborted: false, errorClass: null, requestBody: null, responseBody: null,
  };
  const bySize = (max: number, compile: (size: number) => string): Record<number, string> =>
    Object.fromEntries(allChunkSizes(max).map((size) => [size, compile(size)]));
  const upsert = (table: RollupTable) =>
    bySize(ROLLUP_CHUNK, (size) =>
      rollups
        .insertInto(table)
        .values(Array.from({ length: size }, () => emptyRollupRow(0, '', null, '')))
        .onConflict((oc) => oc.columns(['bucket', 'key_id', 'model']).doUpdateSet(addExcluded(table)))
        .compile().sql,
    );
  return {
    requests:
      requestInsert === 'copy'
        ? { kind: 'copy', sql: COPY_REQUESTS_SQL }
        : { kind: 'values', bySize: bySize(INSERT_CHUNK, (size) => db.insertInto('usage_requests').values(Array.from({ length: size }, () => requestRow(sample)) as never).compile().sql) },
    minutes: upsert('usage_minutes'),
    hours: upsert('usage_hours'),
  };
}

export function createUsageStore(db: Kysely<Database>, writes: { appendBatch: AppendBatch; writeBatch: WriteBatch }): UsageStore {
  const rollups = db as unknown as LooseRollups;
  const { writeBatch } = writes;

  return {
    append(records) {
      if (records.length === 0) return Promise.resolve();
      const batch = new RecordSegment();
      for (const record of records) batch.append(record);
      return writes.appendBatch(batch);
    },

    appendBatch(batch) {
      return batch.count === 0 ? Promise.resolve() : writes.appendBatch(batch);
    },

    async list(query) {
      let q = db.selectFrom('usage_requests').select([
        'id', 'at', 'request_id', 'key_id', 'key_name', 'model', 'method', 'endpoint', 'status', 'streamed',
        'input_tokens', 'output_tokens', 'cached_tokens', 'tokens_source', 'ttfb_ms', 'ttft_ms', 'duration_ms',
        'bytes_in', 'bytes_out', 'client_aborted', 'error_class',
        sql<number>`case when request_body is null and response_body is null then 0 else 1 end`.as('captured'),
      ]);
      if (query.keyId !== undefined) q = q.where('key_id', '=', query.keyId);
      if (query.model !== undefined) q = q.where('model', '=', query.model);
      if (query.status !== undefined) q = q.where('status', '>=', query.status.min).where('status', '<=', query.status.max);
      if (query.from !== undefined) q = q.where('at', '>=', query.from);
      if (query.to !== undefined) q = q.where('at', '<', query.to);
      const after = query.after;
      if (after !== undefined) {
        q = q.where((eb) => eb.or([eb('at', '<', after.at), eb.and([eb('at', '=', after.at), eb('id', '<', after.id)])]));
      }
      const rows = await q.orderBy('at', 'desc').orderBy('id', 'desc').limit(query.limit).execute();
      return rows.map((row): UsageListRow => {
        const { requestBody: _request, responseBody: _response, ...rest } = fromRow({ ...row, request_body: null, response_body: null });
        return { ...rest, captured: Number(row.captured) === 1 };
      });
    },

    async get(id) {
      // The table is keyed by (at, id): the id gives the time to look in.
      const at = usageIdTime(id);
      if (at === undefined) return undefined;
      const row = await db.selectFrom('usage_requests').selectAll().where('at', '=', at).where('id', '=', id).executeTakeFirst();
      return row && fromRow(row);
    },

    async rollup(query) {
      const table: RollupTable = query.resolution === 'minute' ? 'usage_minutes' : 'usage_hours';
      const step = query.stepMs;
      if (!Number.isSafeInteger(step) || step < 1) throw new Error('rollup: stepMs must be a positive integer');
      const groupColumn = query.groupBy === 'key' ? 'key_id' : query.groupBy === 'model' ? 'model' : undefined;
      // The step as a literal, not a parameter: PostgreSQL matches the GROUP BY expression to the
      // selected one by its text, and two parameters ($1, $5) are different texts.
      const t = sql<number | string>`cast(bucket / ${sql.lit(step)} as bigint) * ${sql.lit(step)}`;
      const sums = SUM_COLUMNS.map((column) => sql<number | string>`sum(${sql.ref(column)})`.as(column));
      const groupExpr = groupColumn ? sql<string>`${sql.ref(groupColumn)}` : sql<string | null>`null`;
      let q = rollups
        .selectFrom(table)
        .select([t.as('t'), groupExpr.as('grp'), sql<string | null>`max(key_name)`.as('key_name_max'), ...sums])
        .where('bucket', '>=', query.from)
        .where('bucket', '<', query.to)
        .groupBy(t);
      if (groupColumn) q = q.groupBy(groupColumn);
      const rows = (await q.orderBy('t').orderBy('grp').execute()) as unknown as Array<Record<string, number | string | null>>;
      return rows.map((row): UsageBucket => {
        const group = row.grp === null || row.grp === undefined || row.grp === '' ? null : String(row.grp);
        return {
          bucket: Number(row.t),
          group,
          keyName: typeof row.key_name_max === 'string' ? row.key_name_max : null,
          requests: Number(row.requests),
          errors: Number(row.errors),
          aborted: Number(row.aborted),
          inputTokens: Number(row.input_tokens),
          outputTokens: Number(row.output_tokens),
          cachedTokens: Number(row.cached_tokens),
          durationMsSum: Number(row.duration_ms_sum),
          latency: LATENCY_COLUMNS.map((column) => Number(row[column] ?? 0)),
        };
      });
    },

    async prune(cutoffs, limit) {
      const counts = await writeBatch([
        // A subquery with LIMIT keeps each delete small on both engines (no DELETE ... LIMIT in PG).
        db
          .deleteFrom('usage_requests')
          .where(({ eb, refTuple, selectFrom }) =>
            eb(refTuple('at', 'id'), 'in', selectFrom('usage_requests').select(['at', 'id']).where('at', '<', cutoffs.requestsBefore).orderBy('at').limit(limit).$asTuple('at', 'id')),
          )
          .compile(),
        // Rollups are small (one row per minute or hour per key and model): no batching needed.
        db.deleteFrom('usage_minutes').where('bucket', '<', cutoffs.minutesBefore).compile(),
        db.deleteFrom('usage_hours').where('bucket', '<', cutoffs.hoursBefore).compile(),
      ]);
      return counts.reduce((a, b) => a + b, 0);
    },

    async count() {
      const row = await db
        .selectFrom('usage_requests')
        .select((eb) => eb.fn.countAll().as('n'))
        .executeTakeFirstOrThrow();
      return Number(row.n);
    },
  };
}

/** `column = <table>.column + excluded.column` for every sum; the newest key name wins. */
function addExcluded(table: RollupTable): Record<string, RawBuilder<number | string | null>> {
  const set: Record<string, RawBuilder<number | string | null>> = { key_name: sql`excluded.key_name` };
  for (const column of SUM_COLUMNS) set[column] = sql`${sql.ref(`${table}.${column}`)} + ${sql.ref(`excluded.${column}`)}`;
  return set;
}

function fromRow(row: Selectable<UsageRequestsTable>): UsageRecord {
  return {
    id: row.id,
    at: Number(row.at),
    requestId: row.request_id,
    keyId: row.key_id,
    keyName: row.key_name,
    model: row.model,
    method: row.method,
    endpoint: row.endpoint,
    status: Number(row.status),
    streamed: Number(row.streamed) === 1,
    inputTokens: nullableNumber(row.input_tokens),
    outputTokens: nullableNumber(row.output_tokens),
    cachedTokens: nullableNumber(row.cached_tokens),
    tokensSource: row.tokens_source as TokensSource | null,
    ttfbMs: nullableNumber(row.ttfb_ms),
    ttftMs: nullableNumber(row.ttft_ms),
    durationMs: Number(row.duration_ms),
    bytesIn: Number(row.bytes_in),
    bytesOut: Number(row.bytes_out),
    clientAborted: Number(row.client_aborted) === 1,
    errorClass: row.error_class,
    requestBody: row.request_body,
    responseBody: row.response_body,
  };
}

function nullableNumber(value: number | string | null): number | null {
  return value === null ? null : Number(value);
}
