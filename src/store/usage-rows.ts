/**
 * The one table of `usage_requests` columns, and what a batch of records becomes from it: the
 * request rows (statement parameters, or COPY text for PostgreSQL), the per-minute and per-hour
 * rollup sums, and a record read back from a row. Pure functions; the dialects run the SQL.
 */
import type { UsageRequestsTable } from './schema.js';
import { USAGE_LATENCY_BOUNDS_MS, type UsageRecord } from './records.js';

/** How a record field is stored: text, a number, either maybe null, or a 0/1 flag (no boolean type is shared). */
type ColumnKind = 'text' | 'text?' | 'number' | 'number?' | 'flag';

interface Column {
  name: keyof UsageRequestsTable;
  field: keyof UsageRecord;
  kind: ColumnKind;
}

/** `usage_requests`' columns, in the order of every INSERT, COPY and read. */
export const REQUEST_COLUMNS = [
  { name: 'id', field: 'id', kind: 'text' },
  { name: 'at', field: 'at', kind: 'number' },
  { name: 'request_id', field: 'requestId', kind: 'text' },
  { name: 'key_id', field: 'keyId', kind: 'text?' },
  { name: 'key_name', field: 'keyName', kind: 'text?' },
  { name: 'model', field: 'model', kind: 'text?' },
  { name: 'method', field: 'method', kind: 'text' },
  { name: 'endpoint', field: 'endpoint', kind: 'text' },
  { name: 'status', field: 'status', kind: 'number' },
  { name: 'streamed', field: 'streamed', kind: 'flag' },
  { name: 'input_tokens', field: 'inputTokens', kind: 'number?' },
  { name: 'output_tokens', field: 'outputTokens', kind: 'number?' },
  { name: 'cached_tokens', field: 'cachedTokens', kind: 'number?' },
  { name: 'tokens_source', field: 'tokensSource', kind: 'text?' },
  { name: 'ttfb_ms', field: 'ttfbMs', kind: 'number?' },
  { name: 'ttft_ms', field: 'ttftMs', kind: 'number?' },
  { name: 'duration_ms', field: 'durationMs', kind: 'number' },
  { name: 'bytes_in', field: 'bytesIn', kind: 'number' },
  { name: 'bytes_out', field: 'bytesOut', kind: 'number' },
  { name: 'client_aborted', field: 'clientAborted', kind: 'flag' },
  { name: 'error_class', field: 'errorClass', kind: 'text?' },
  { name: 'queue_ms', field: 'queueMs', kind: 'number?' },
  { name: 'gpu_ms', field: 'gpuMs', kind: 'number?' },
  { name: 'request_body', field: 'requestBody', kind: 'text?' },
  { name: 'response_body', field: 'responseBody', kind: 'text?' },
] as const satisfies readonly Column[];

// A record field or a table column missing from the list above fails the typecheck here.
type Listed<K extends keyof Column> = (typeof REQUEST_COLUMNS)[number][K];
const everyField: Record<Exclude<keyof UsageRecord, Listed<'field'>>, never> = {};
const everyColumn: Record<Exclude<keyof UsageRequestsTable, Listed<'name'>>, never> = {};
void everyField;
void everyColumn;

/** The captured bodies: only `get` reads them, `list` says whether there are any. */
export const BODY_COLUMNS: ReadonlyArray<keyof UsageRequestsTable> = ['request_body', 'response_body'];

/** The record fields `list` returns (all but the captured bodies), in column order. */
export const LISTED_FIELDS = REQUEST_COLUMNS.filter(({ name }) => !BODY_COLUMNS.includes(name)).map(
  ({ field }) => field,
) as ReadonlyArray<Exclude<keyof UsageRecord, 'requestBody' | 'responseBody'>>;

export type CellValue = string | number | null;

/** A record's row, as statement parameters in `REQUEST_COLUMNS` order. A plain loop: it runs once per call. */
export function requestValues(r: UsageRecord): CellValue[] {
  const values = new Array<CellValue>(REQUEST_COLUMNS.length);
  for (let i = 0; i < REQUEST_COLUMNS.length; i++) {
    const { field, kind } = REQUEST_COLUMNS[i]!;
    const value = r[field];
    values[i] = kind === 'flag' ? (value ? 1 : 0) : (value as CellValue);
  }
  return values;
}

/** A record's row as an object keyed by column name, for a Kysely insert. */
export function requestRow(r: UsageRecord): Record<string, CellValue> {
  const values = requestValues(r);
  return Object.fromEntries(REQUEST_COLUMNS.map(({ name }, i) => [name, values[i]!]));
}

/** A record from a row as a driver returns it (pg hands int8 back as text). Absent columns read as null. */
export function recordFromRow(row: Readonly<Record<string, unknown>>): UsageRecord {
  const record: Record<string, unknown> = {};
  for (const { name, field, kind } of REQUEST_COLUMNS) {
    const value = row[name] ?? null;
    record[field] =
      kind === 'flag'
        ? Number(value) === 1
        : kind === 'number'
          ? Number(value)
          : kind === 'number?'
            ? value === null
              ? null
              : Number(value)
            : value;
  }
  return record as unknown as UsageRecord;
}

/** `COPY usage_requests (...) FROM STDIN` in text format: PostgreSQL's bulk load. */
const COPY_COLUMN_LIST = REQUEST_COLUMNS.map(({ name }) => `"${name}"`).join(', ');
export const COPY_REQUESTS_SQL = `copy "usage_requests" (${COPY_COLUMN_LIST}) from stdin`;

/**
 * The records as COPY's text format: a line per row, columns separated by tabs, `\N` for null,
 * and backslash, tab, newline and carriage return escaped. PostgreSQL text cannot hold NUL, so
 * a NUL (which only a client can put in, say, a model name) becomes U+FFFD: one odd call must
 * not make the database refuse its whole batch.
 */
export function copyRows(records: readonly UsageRecord[]): string {
  let out = '';
  for (const r of records) {
    out += requestValues(r)
      .map((v) => (v === null ? '\\N' : typeof v === 'number' ? String(v) : copyText(v)))
      .join('\t');
    out += '\n';
  }
  return out;
}

const COPY_ESCAPES: Record<string, string> = { '\\': '\\\\', '\t': '\\t', '\n': '\\n', '\r': '\\r', '\0': '\uFFFD' };

function copyText(value: string): string {
  return value.replace(/[\\\t\n\r\0]/g, (c) => COPY_ESCAPES[c]!);
}

export const MINUTE_MS = 60_000;
export const HOUR_MS = 3_600_000;
export type RollupTable = 'usage_minutes' | 'usage_hours';
/** Each rollup table with the width of its buckets. */
export const ROLLUP_TABLES: ReadonlyArray<readonly [RollupTable, number]> = [
  ['usage_minutes', MINUTE_MS],
  ['usage_hours', HOUR_MS],
];

export const LATENCY_COLUMNS: readonly string[] = Object.freeze(
  Array.from({ length: USAGE_LATENCY_BOUNDS_MS.length + 1 }, (_, i) => `lat_${String(i).padStart(2, '0')}`),
);
export const SUM_COLUMNS: readonly string[] = Object.freeze([
  'requests',
  'errors',
  'aborted',
  'input_tokens',
  'output_tokens',
  'cached_tokens',
  'duration_ms_sum',
  ...LATENCY_COLUMNS,
]);
/** A rollup row's columns, in the order of its upsert: the key and key name, then the sums. */
export const ROLLUP_COLUMNS: readonly string[] = Object.freeze([
  'bucket',
  'key_id',
  'key_name',
  'model',
  ...SUM_COLUMNS,
]);
const [BUCKET, KEY_ID, MODEL, KEY_NAME, REQUESTS, ERRORS, ABORTED, INPUT, OUTPUT, CACHED, DURATION, LATENCY] = [
  'bucket',
  'key_id',
  'model',
  'key_name',
  'requests',
  'errors',
  'aborted',
  'input_tokens',
  'output_tokens',
  'cached_tokens',
  'duration_ms_sum',
  'lat_00',
].map((name) => ROLLUP_COLUMNS.indexOf(name)) as [
  number,
  number,
  number,
  number,
  number,
  number,
  number,
  number,
  number,
  number,
  number,
  number,
];

/** Whether a call counts as an error in the rollups (and exports). A client leaving is counted apart. */
export function isErrorCall(record: Pick<UsageRecord, 'status' | 'clientAborted' | 'errorClass'>): boolean {
  return !record.clientAborted && (record.status >= 400 || record.errorClass !== null);
}

/** The latency bucket a duration falls in (bounds are inclusive upper limits; overflow last). */
function latencyBucket(durationMs: number): number {
  let index = 0;
  while (index < USAGE_LATENCY_BOUNDS_MS.length && durationMs > USAGE_LATENCY_BOUNDS_MS[index]!) index++;
  return index;
}

/**
 * One rollup row per (bucket, key, model) of the batch, as upsert parameters in `ROLLUP_COLUMNS`
 * order, sorted by that key: PostgreSQL then locks rows in the same order in every replica (no
 * deadlock between concurrent batches). `''` stands for no key or model (a key column cannot be NULL).
 */
export function rollupRows(records: readonly UsageRecord[], bucketMs: number): CellValue[][] {
  const rows = new Map<string, CellValue[]>();
  let row: CellValue[] | undefined;
  for (const r of records) {
    const bucket = Math.floor(r.at / bucketMs) * bucketMs;
    const keyId = r.keyId ?? '';
    const model = r.model ?? '';
    // Consecutive calls mostly share a group: the last one is checked before building a map key.
    if (row?.[BUCKET] !== bucket || row[KEY_ID] !== keyId || row[MODEL] !== model) {
      const id = `${bucket}\u0000${keyId}\u0000${model}`;
      row = rows.get(id);
      if (!row) {
        row = new Array<CellValue>(ROLLUP_COLUMNS.length).fill(0);
        row[BUCKET] = bucket;
        row[KEY_ID] = keyId;
        row[KEY_NAME] = r.keyName;
        row[MODEL] = model;
        rows.set(id, row);
      }
    }
    if (r.keyName !== null) row[KEY_NAME] = r.keyName;
    add(row, REQUESTS, 1);
    if (isErrorCall(r)) add(row, ERRORS, 1);
    if (r.clientAborted) add(row, ABORTED, 1);
    add(row, INPUT, r.inputTokens ?? 0);
    add(row, OUTPUT, r.outputTokens ?? 0);
    add(row, CACHED, r.cachedTokens ?? 0);
    add(row, DURATION, r.durationMs);
    add(row, LATENCY + latencyBucket(r.durationMs), 1);
  }
  if (rows.size === 1) return [...rows.values()];
  return [...rows.entries()].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)).map(([, row]) => row);
}

function add(row: CellValue[], column: number, n: number): void {
  row[column] = (row[column] as number) + n;
}
