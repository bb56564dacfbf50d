/**
 * From usage records to the parameters of the statements that write them: the request-log rows
 * and the per-minute and per-hour rollup sums. Pure functions, no database handle: they run on
 * the usage write thread (usage-write-worker.ts), next to the connection, so the proxy's thread
 * never lays out a batch. The SQL texts they pair with are compiled once by Kysely on the main
 * thread (usage-queries.ts `compileUsageSql`) and handed to the thread at its start.
 */
import { USAGE_LATENCY_BOUNDS_MS, type UsageRecord } from './store.js';

const MINUTE_MS = 60_000;
const HOUR_MS = 3_600_000;
/** Largest rows per INSERT (23 columns): far below SQLite's 32,766 bound variables. */
export const INSERT_CHUNK = 256;
/** Largest rows per rollup upsert (44 columns). */
export const ROLLUP_CHUNK = 128;

export const LATENCY_COLUMNS: readonly string[] = Object.freeze(
  Array.from({ length: USAGE_LATENCY_BOUNDS_MS.length + 1 }, (_, i) => `lat_${String(i).padStart(2, '0')}`),
);
export const SUM_COLUMNS = ['requests', 'errors', 'aborted', 'input_tokens', 'output_tokens', 'cached_tokens', 'duration_ms_sum', ...LATENCY_COLUMNS] as const;
/** A rollup row's columns, in the order of its INSERT: the upsert's key and key name, then the sums. */
export const ROLLUP_COLUMNS: readonly string[] = Object.freeze(['bucket', 'key_id', 'key_name', 'model', ...SUM_COLUMNS]);

export type RollupTable = 'usage_minutes' | 'usage_hours';
export type RollupRow = Record<string, number | string | null>;

/**
 * The SQL texts a batch needs, compiled for one dialect: a multi-row statement per power-of-two
 * row count (`chunkSizes`), keyed by that count. `requests` is either those INSERTs (SQLite) or
 * one `COPY ... FROM STDIN` (PostgreSQL).
 */
export interface UsageSqlTexts {
  requests: { kind: 'values'; bySize: Record<number, string> } | { kind: 'copy'; sql: string };
  minutes: Record<number, string>;
  hours: Record<number, string>;
}

/** A statement with its parameters, or a `COPY ... FROM STDIN` with the rows it sends. */
export type Statement = { sql: string; parameters: unknown[]; copyRows?: undefined } | { sql: string; parameters?: undefined; copyRows: string };

/**
 * usage_requests' columns and how a record fills each. The one place that maps a record to a
 * row: the multi-row INSERT, the COPY rows and the Kysely-compiled SQL (via `requestRow`) all
 * follow this order.
 */
export const REQUEST_COLUMNS: ReadonlyArray<readonly [name: string, value: (r: UsageRecord) => string | number | null]> = [
  ['id', (r) => r.id],
  ['at', (r) => r.at],
  ['request_id', (r) => r.requestId],
  ['key_id', (r) => r.keyId],
  ['key_name', (r) => r.keyName],
  ['model', (r) => r.model],
  ['method', (r) => r.method],
  ['endpoint', (r) => r.endpoint],
  ['status', (r) => r.status],
  ['streamed', (r) => (r.streamed ? 1 : 0)],
  ['input_tokens', (r) => r.inputTokens],
  ['output_tokens', (r) => r.outputTokens],
  ['cached_tokens', (r) => r.cachedTokens],
  ['tokens_source', (r) => r.tokensSource],
  ['ttfb_ms', (r) => r.ttfbMs],
  ['ttft_ms', (r) => r.ttftMs],
  ['duration_ms', (r) => r.durationMs],
  ['bytes_in', (r) => r.bytesIn],
  ['bytes_out', (r) => r.bytesOut],
  ['client_aborted', (r) => (r.clientAborted ? 1 : 0)],
  ['error_class', (r) => r.errorClass],
  ['request_body', (r) => r.requestBody],
  ['response_body', (r) => r.responseBody],
];

/**
 * PostgreSQL's bulk load: COPY parses plain text rows, where INSERT ... SELECT FROM unnest() of
 * one array per column (its predecessor here) parsed 23 array literals and planned a query per
 * batch. Server CPU per inserted row, measured: 12.2 µs (unnest) -> 8.4 µs (COPY), both before
 * the keyed-by-time indexes of migration 0004 (with them: 9.5 -> 4.6 µs).
 */
export const COPY_REQUESTS_SQL = `copy "usage_requests" (${REQUEST_COLUMNS.map(([name]) => `"${name}"`).join(', ')}) from stdin`;

/** The statements that write `records` and add them to both rollups, in this order. */
export function batchStatements(records: readonly UsageRecord[], texts: UsageSqlTexts): Statement[] {
  if (records.length === 0) return [];
  const out: Statement[] = [];
  const requests = texts.requests;
  if (requests.kind === 'copy') out.push({ sql: requests.sql, copyRows: copyRows(records) });
  else for (const [start, size] of chunkSizes(records.length, INSERT_CHUNK)) out.push({ sql: sqlFor(requests.bySize, size), parameters: rowParams(records, start, size) });
  for (const [table, size] of [['minutes', MINUTE_MS], ['hours', HOUR_MS]] as const) {
    const rows = rollupRows(records, size);
    for (const [start, n] of chunkSizes(rows.length, ROLLUP_CHUNK)) out.push({ sql: sqlFor(texts[table], n), parameters: rollupParams(rows, start, n) });
  }
  return out;
}

/**
 * `count` rows as [start, size] chunks of power-of-two sizes, largest first, each at most `max`:
 * a few SQL texts (one per size, compiled once) then cover every batch.
 */
export function chunkSizes(count: number, max: number): Array<[start: number, size: number]> {
  const out: Array<[number, number]> = [];
  for (let i = 0; i < count; ) {
    let size = max;
    while (size > count - i) size >>= 1;
    out.push([i, size]);
    i += size;
  }
  return out;
}

/** Every chunk size `chunkSizes` can produce for `max`: 1, 2, 4, ... max. */
export function allChunkSizes(max: number): number[] {
  const out: number[] = [];
  for (let size = 1; size <= max; size <<= 1) out.push(size);
  return out;
}

function sqlFor(bySize: Record<number, string>, size: number): string {
  const text = bySize[size];
  if (text === undefined) throw new Error(`usage batch: no statement compiled for ${size} rows`);
  return text;
}

/**
 * The records as COPY's text format: a line per row, columns separated by tabs, `\N` for null,
 * and backslash, tab, newline and carriage return escaped. PostgreSQL text cannot hold NUL, so
 * a NUL (which only a client can put in, say, a model name) becomes U+FFFD: one odd call must
 * not make the database refuse its whole batch.
 */
export function copyRows(records: readonly UsageRecord[]): string {
  // Cells and lines joined once each, not appended one by one: `+=` left a rope of ~50 string
  // pieces per row for V8 to flatten and collect (measured ~1.15 -> ~1.0 µs per row).
  const width = REQUEST_COLUMNS.length;
  const cells = new Array<string>(width);
  const lines = new Array<string>(records.length + 1);
  for (let i = 0; i < records.length; i++) {
    const r = records[i]!;
    for (let j = 0; j < width; j++) {
      const value = REQUEST_COLUMNS[j]![1](r);
      cells[j] = value === null ? '\\N' : typeof value === 'number' ? String(value) : copyText(value);
    }
    lines[i] = cells.join('\t');
  }
  lines[records.length] = '';
  return lines.join('\n');
}

const COPY_SPECIAL = /[\\\t\n\r\0]/;
const COPY_SPECIAL_ALL = /[\\\t\n\r\0]/g;
const COPY_ESCAPES: Record<string, string> = { '\\': '\\\\', '\t': '\\t', '\n': '\\n', '\r': '\\r', '\0': '\uFFFD' };

function copyText(value: string): string {
  return COPY_SPECIAL.test(value) ? value.replace(COPY_SPECIAL_ALL, (c) => COPY_ESCAPES[c]!) : value;
}

/** The parameters of a multi-row INSERT of `count` records from `start`, row after row. */
function rowParams(records: readonly UsageRecord[], start: number, count: number): unknown[] {
  const width = REQUEST_COLUMNS.length;
  const out = new Array<unknown>(count * width);
  let k = 0;
  for (let i = start; i < start + count; i++) {
    const r = records[i]!;
    for (let j = 0; j < width; j++) out[k++] = REQUEST_COLUMNS[j]![1](r);
  }
  return out;
}

/** A record as a row object: only to compile the INSERT's SQL text (column names and order). */
export function requestRow(r: UsageRecord): RollupRow {
  const row: RollupRow = {};
  for (const [name, value] of REQUEST_COLUMNS) row[name] = value(r);
  return row;
}

/** A rollup row with nothing added yet, its keys in `ROLLUP_COLUMNS` order. */
export function emptyRollupRow(bucket: number, keyId: string, keyName: string | null, model: string): RollupRow {
  const row: RollupRow = { bucket, key_id: keyId, key_name: keyName, model };
  for (const column of SUM_COLUMNS) row[column] = 0;
  return row;
}

/** The parameters of a multi-row rollup upsert, row after row in `ROLLUP_COLUMNS` order. */
function rollupParams(rows: readonly RollupRow[], start: number, count: number): unknown[] {
  const width = ROLLUP_COLUMNS.length;
  const out = new Array<unknown>(count * width);
  let k = 0;
  for (let i = start; i < start + count; i++) {
    const row = rows[i]!;
    for (let j = 0; j < width; j++) out[k++] = row[ROLLUP_COLUMNS[j]!];
  }
  return out;
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
  let row: RollupRow | undefined;
  for (const r of records) {
    const bucket = Math.floor(r.at / size) * size;
    const keyId = r.keyId ?? '';
    const model = r.model ?? '';
    // Consecutive calls mostly share all three (and, decoded, the very same strings): the
    // previous row then is this one, without building and looking up its map key.
    if (row === undefined || row.bucket !== bucket || row.key_id !== keyId || row.model !== model) {
      const id = `${bucket}\u0000${keyId}\u0000${model}`;
      row = rows.get(id);
      if (!row) {
        row = emptyRollupRow(bucket, keyId, r.keyName, model);
        rows.set(id, row);
      }
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
