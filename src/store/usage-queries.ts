/**
 * The request log and its rollups, for both dialects (portable SQL only).
 *
 * Why rollups: the summary API must not scan the request log. With SQLite the driver runs on
 * the proxy's event loop, so a 30-day percentile over millions of rows would stall every
 * stream. Each batch written also adds its calls to per-minute and per-hour sums (with a fixed
 * latency histogram), and summaries read those: at most a few thousand small rows.
 *
 * Why precompiled writes: a batch is hundreds of rows, every half second under load. Building
 * Kysely's query tree for each costs ~5 µs a row on the event loop; instead the SQL text of an
 * N-row insert is compiled once per chunk size (powers of two) and only the parameters are
 * laid out per batch. The statements then go to the dialect's `WriteBatch`: a worker thread
 * for SQLite (its driver is synchronous: writes must not block the proxy), one transaction on
 * the pool for PostgreSQL.
 */
import { CompiledQuery, sql, type Kysely, type RawBuilder, type Selectable } from 'kysely';
import type { Database, UsageRequestsTable } from './schema.js';
import {
  USAGE_LATENCY_BOUNDS_MS,
  type TokensSource,
  type UsageBucket,
  type UsageListRow,
  type UsageRecord,
  type UsageStore,
} from './store.js';

/** Runs write statements in one transaction; resolves with each one's affected row count. */
export type WriteBatch = (queries: readonly CompiledQuery[]) => Promise<number[]>;

const MINUTE_MS = 60_000;
const HOUR_MS = 3_600_000;
/** Largest rows per INSERT (23 columns): far below SQLite's 32,766 bound variables. */
const INSERT_CHUNK = 256;
/** Largest rows per rollup upsert (44 columns). */
const ROLLUP_CHUNK = 128;

export const LATENCY_COLUMNS: readonly string[] = Object.freeze(
  Array.from({ length: USAGE_LATENCY_BOUNDS_MS.length + 1 }, (_, i) => `lat_${String(i).padStart(2, '0')}`),
);
const SUM_COLUMNS = ['requests', 'errors', 'aborted', 'input_tokens', 'output_tokens', 'cached_tokens', 'duration_ms_sum', ...LATENCY_COLUMNS] as const;

type RollupTable = 'usage_minutes' | 'usage_hours';
type RollupRow = Record<string, number | string | null>;
/** The rollup tables seen with their column names as plain strings (32 generated columns). */
type LooseRollups = Kysely<Record<RollupTable, RollupRow>>;

export interface UsageStoreOptions {
  /**
   * How a batch of request rows is inserted. `values`: multi-row INSERTs of up to 256 rows
   * (portable). `unnest`: PostgreSQL only, one INSERT ... SELECT FROM unnest() of one array per
   * column: 23 parameters instead of 23 per row, so the server parses and plans one short
   * statement per batch instead of one with thousands of parameters per 256 rows (measured: the
   * database server's CPU per recorded call fell from ~57 µs, see docs/benchmarks.md).
   */
  requestInsert?: 'values' | 'unnest';
}

export function createUsageStore(db: Kysely<Database>, writeBatch: WriteBatch, options: UsageStoreOptions = {}): UsageStore {
  const rollups = db as unknown as LooseRollups;
  const sqlCache = new Map<string, string>();

  /**
   * Statements for `count` rows in power-of-two chunks of at most `max`: a few SQL texts, each
   * compiled by Kysely once and cached, cover every batch size; per batch only the parameters
   * are laid out.
   */
  const chunkedStatements = (
    table: 'usage_requests' | RollupTable,
    count: number,
    max: number,
    compile: (start: number, size: number) => string,
    params: (start: number, size: number) => unknown[],
  ): CompiledQuery[] => {
    const out: CompiledQuery[] = [];
    for (let i = 0; i < count; ) {
      let size = max;
      while (size > count - i) size >>= 1;
      const cacheKey = `${table}:${size}`;
      let text = sqlCache.get(cacheKey);
      if (text === undefined) {
        text = compile(i, size);
        sqlCache.set(cacheKey, text);
      }
      out.push(CompiledQuery.raw(text, params(i, size)));
      i += size;
    }
    return out;
  };

  /** Rollup upserts: add each row's sums to the stored ones. */
  const upserts = (table: RollupTable, rows: readonly RollupRow[]): CompiledQuery[] =>
    chunkedStatements(
      table,
      rows.length,
      ROLLUP_CHUNK,
      (start, size) =>
        rollups
          .insertInto(table)
          .values(rows.slice(start, start + size))
          .onConflict((oc) => oc.columns(['bucket', 'key_id', 'model']).doUpdateSet(addExcluded(table)))
          .compile().sql,
      (start, size) => flatten(rows.slice(start, start + size)),
    );

  /** Multi-row INSERTs with parameters straight from the records (no row objects). */
  const insertRows = (records: readonly UsageRecord[]): CompiledQuery[] =>
    chunkedStatements(
      'usage_requests',
      records.length,
      INSERT_CHUNK,
      (start, size) => db.insertInto('usage_requests').values(records.slice(start, start + size).map(toRow) as never).compile().sql,
      (start, size) => rowParams(records, start, size),
    );

  const insertRequests =
    options.requestInsert === 'unnest'
      ? (records: readonly UsageRecord[]) => [CompiledQuery.raw(UNNEST_INSERT_SQL, columnArrays(records))]
      : insertRows;

  return {
    // Not async on purpose: an async function keeps its arguments while it waits, and the ~500
    // records of a batch (with their rows) would outlive the write, long enough to be promoted
    // by the GC. Built and handed over in one synchronous call, they die young.
    append(records) {
      if (records.length === 0) return Promise.resolve();
      return writeBatch([
        ...insertRequests(records),
        ...upserts('usage_minutes', rollupRows(records, MINUTE_MS)),
        ...upserts('usage_hours', rollupRows(records, HOUR_MS)),
      ]).then(ignoreCounts);
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
      const row = await db.selectFrom('usage_requests').selectAll().where('id', '=', id).executeTakeFirst();
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
          .where('id', 'in', (eb) => eb.selectFrom('usage_requests').select('id').where('at', '<', cutoffs.requestsBefore).orderBy('at').limit(limit))
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

function ignoreCounts(): void {}

/** `column = <table>.column + excluded.column` for every sum; the newest key name wins. */
function addExcluded(table: RollupTable): Record<string, RawBuilder<number | string | null>> {
  const set: Record<string, RawBuilder<number | string | null>> = { key_name: sql`excluded.key_name` };
  for (const column of SUM_COLUMNS) set[column] = sql`${sql.ref(`${table}.${column}`)} + ${sql.ref(`excluded.${column}`)}`;
  return set;
}

/** Whether a call counts as an error in the rollups. A client leaving is counted apart. */
export function isErrorCall(record: Pick<UsageRecord, 'status' | 'clientAborted' | 'errorClass'>): boolean {
  return !record.clientAborted && (record.status >= 400 || record.errorClass !== null);
}

/** The latency bucket a duration falls in (bounds are inclusive upper limits; overflow last). */
export function latencyBucket(durationMs: number): number {
  const bounds = USAGE_LATENCY_BOUNDS_MS;
  let lo = 0;
  let hi = bounds.length;
  while (lo < hi) {
    const mid = (lo + hi) >> 1;
    if (durationMs <= bounds[mid]!) hi = mid;
    else lo = mid + 1;
  }
  return lo;
}

/**
 * One rollup row per (bucket, key, model) of the batch, sorted by that key: PostgreSQL then
 * locks rows in the same order in every replica (no deadlock between concurrent batches), and
 * a multi-row upsert never touches one row twice.
 */
function rollupRows(records: readonly UsageRecord[], size: number): RollupRow[] {
  const rows = new Map<string, RollupRow>();
  for (const r of records) {
    const bucket = Math.floor(r.at / size) * size;
    const keyId = r.keyId ?? '';
    const model = r.model ?? '';
    const id = `${bucket}\u0000${keyId}\u0000${model}`;
    let row = rows.get(id);
    if (!row) {
      row = { bucket, key_id: keyId, key_name: r.keyName, model, requests: 0, errors: 0, aborted: 0, input_tokens: 0, output_tokens: 0, cached_tokens: 0, duration_ms_sum: 0 };
      for (const column of LATENCY_COLUMNS) row[column] = 0;
      rows.set(id, row);
    }
    if (r.keyName !== null) row.key_name = r.keyName;
    row.requests = (row.requests as number) + 1;
    if (isErrorCall(r)) row.errors = (row.errors as number) + 1;
    if (r.clientAborted) row.aborted = (row.aborted as number) + 1;
    row.input_tokens = (row.input_tokens as number) + (r.inputTokens ?? 0);
    row.output_tokens = (row.output_tokens as number) + (r.outputTokens ?? 0);
    row.cached_tokens = (row.cached_tokens as number) + (r.cachedTokens ?? 0);
    row.duration_ms_sum = (row.duration_ms_sum as number) + r.durationMs;
    const column = LATENCY_COLUMNS[latencyBucket(r.durationMs)]!;
    row[column] = (row[column] as number) + 1;
  }
  return [...rows.entries()].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)).map(([, row]) => row);
}

/**
 * Parameters of a multi-row INSERT in the order Kysely binds them: row by row, each in the key
 * order of the first row (every row here is built by one function, so all share that order).
 */
function flatten(rows: readonly RollupRow[]): unknown[] {
  const columns = Object.keys(rows[0]!);
  const out = new Array<unknown>(rows.length * columns.length);
  let k = 0;
  for (const row of rows) for (const column of columns) out[k++] = row[column];
  return out;
}

/**
 * usage_requests' columns: name, PostgreSQL type (the unnest insert) and how a record fills it.
 * The one place that maps a record to a row: the multi-row INSERT, the unnest arrays and the
 * Kysely-compiled SQL (via toRow) all follow this order.
 */
const REQUEST_COLUMNS: ReadonlyArray<readonly [name: string, pgType: string, value: (r: UsageRecord) => unknown]> = [
  ['id', 'text', (r) => r.id],
  ['at', 'bigint', (r) => r.at],
  ['request_id', 'text', (r) => r.requestId],
  ['key_id', 'text', (r) => r.keyId],
  ['key_name', 'text', (r) => r.keyName],
  ['model', 'text', (r) => r.model],
  ['method', 'text', (r) => r.method],
  ['endpoint', 'text', (r) => r.endpoint],
  ['status', 'integer', (r) => r.status],
  ['streamed', 'integer', (r) => (r.streamed ? 1 : 0)],
  ['input_tokens', 'integer', (r) => r.inputTokens],
  ['output_tokens', 'integer', (r) => r.outputTokens],
  ['cached_tokens', 'integer', (r) => r.cachedTokens],
  ['tokens_source', 'text', (r) => r.tokensSource],
  ['ttfb_ms', 'double precision', (r) => r.ttfbMs],
  ['ttft_ms', 'double precision', (r) => r.ttftMs],
  ['duration_ms', 'double precision', (r) => r.durationMs],
  ['bytes_in', 'bigint', (r) => r.bytesIn],
  ['bytes_out', 'bigint', (r) => r.bytesOut],
  ['client_aborted', 'integer', (r) => (r.clientAborted ? 1 : 0)],
  ['error_class', 'text', (r) => r.errorClass],
  ['request_body', 'text', (r) => r.requestBody],
  ['response_body', 'text', (r) => r.responseBody],
];

const UNNEST_INSERT_SQL =
  `insert into "usage_requests" (${REQUEST_COLUMNS.map(([name]) => `"${name}"`).join(', ')}) ` +
  `select * from unnest(${REQUEST_COLUMNS.map(([, type], i) => `$${i + 1}::${type}[]`).join(', ')})`;

/** One array per column (the unnest insert's parameters), built without a row object per record. */
function columnArrays(records: readonly UsageRecord[]): unknown[][] {
  return REQUEST_COLUMNS.map(([, , value]) => records.map(value));
}

/** The parameters of a multi-row INSERT of `count` records from `start`, row after row. */
function rowParams(records: readonly UsageRecord[], start: number, count: number): unknown[] {
  const width = REQUEST_COLUMNS.length;
  const out = new Array<unknown>(count * width);
  let k = 0;
  for (let i = start; i < start + count; i++) {
    const r = records[i]!;
    for (let j = 0; j < width; j++) out[k++] = REQUEST_COLUMNS[j]![2](r);
  }
  return out;
}

function toRow(r: UsageRecord): RollupRow {
  const row: RollupRow = {};
  for (const [name, , value] of REQUEST_COLUMNS) row[name] = value(r) as RollupRow[string];
  return row;
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
