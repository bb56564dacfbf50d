/**
 * The rows of a usage export: the request log oldest first (`call`), or its sums per key, model
 * or day. The log is read in keyset pages, so memory holds one page (plus one sum per group)
 * whatever the range; the sums are made from the log, not the hourly rollups, so every filter
 * and any minute of `from`/`to` applies to them exactly as to the calls.
 */
import type { USAGE_EXPORT_GROUPS } from '../admin-api/usage.js';
import type { UsageListQuery, UsageStore } from '../store/store.js';
import type { UsageListRow } from '../store/records.js';
import { isErrorCall, LISTED_FIELDS } from '../store/usage-rows.js';

export type ExportGroup = (typeof USAGE_EXPORT_GROUPS)[number];

/** What the export reads: the request log's filters, with an end that is always fixed. */
export type ExportFilters = Pick<UsageListQuery, 'keyId' | 'model' | 'status' | 'from'> & { to: number };

export type ExportCell = string | number | boolean | null;
export type ExportRow = Record<string, ExportCell>;

/** Rows per store read: small enough that a SQLite page never holds the event loop for long. */
const PAGE_ROWS = 1000;

const SUM_COLUMNS = [
  'requests',
  'errors',
  'aborted',
  'inputTokens',
  'outputTokens',
  'cachedTokens',
  'durationMsAvg',
  'firstAt',
  'lastAt',
] as const;

/** The columns of a group's rows, in order: the CSV header and the JSON members. */
export function exportColumns(group: ExportGroup): readonly string[] {
  switch (group) {
    case 'call':
      return LISTED_FIELDS;
    case 'key':
      return ['keyId', 'keyName', ...SUM_COLUMNS];
    case 'model':
      return ['model', ...SUM_COLUMNS];
    case 'day':
      return ['day', ...SUM_COLUMNS];
  }
}

/** A UTC calendar day, `YYYY-MM-DD`. */
function utcDay(at: number): string {
  return new Date(at).toISOString().slice(0, 10);
}

export interface ExportOptions {
  /** The calendar day of a time, for `group=day`. */
  dayOf?: (at: number) => string;
  pageRows?: number;
}

/** The export's rows, read lazily: the next page is fetched only when the reader wants more. */
export async function* exportRows(
  store: Pick<UsageStore, 'list'>,
  group: ExportGroup,
  filters: ExportFilters,
  options: ExportOptions = {},
): AsyncGenerator<ExportRow> {
  const pages = logPages(store, filters, options.pageRows ?? PAGE_ROWS);
  if (group === 'call') {
    for await (const page of pages) for (const row of page) yield callRow(row);
  } else if (group === 'day') {
    yield* dayRows(pages, options.dayOf ?? utcDay);
  } else {
    yield* groupRows(pages, group);
  }
}

async function* logPages(
  store: Pick<UsageStore, 'list'>,
  filters: ExportFilters,
  limit: number,
): AsyncGenerator<UsageListRow[]> {
  let after: UsageListQuery['after'];
  for (;;) {
    const page = await store.list({ ...filters, oldestFirst: true, limit, ...(after ? { after } : {}) });
    if (page.length > 0) yield page;
    const last = page.at(-1);
    if (page.length < limit || !last) return;
    after = { at: last.at, id: last.id };
  }
}

function callRow(row: UsageListRow): ExportRow {
  const out: ExportRow = {};
  for (const field of LISTED_FIELDS) out[field] = field === 'at' ? iso(row.at) : row[field];
  return out;
}

/** One group's running sums. */
class Sums {
  requests = 0;
  errors = 0;
  aborted = 0;
  inputTokens = 0;
  outputTokens = 0;
  cachedTokens = 0;
  durationMs = 0;
  firstAt = Number.POSITIVE_INFINITY;
  lastAt = Number.NEGATIVE_INFINITY;
  /** The newest key name seen (rows come oldest first). */
  keyName: string | null = null;

  add(row: UsageListRow): void {
    this.requests++;
    if (isErrorCall(row)) this.errors++;
    if (row.clientAborted) this.aborted++;
    this.inputTokens += row.inputTokens ?? 0;
    this.outputTokens += row.outputTokens ?? 0;
    this.cachedTokens += row.cachedTokens ?? 0;
    this.durationMs += row.durationMs;
    this.firstAt = Math.min(this.firstAt, row.at);
    this.lastAt = Math.max(this.lastAt, row.at);
    if (row.keyName !== null) this.keyName = row.keyName;
  }

  row(): ExportRow {
    return {
      requests: this.requests,
      errors: this.errors,
      aborted: this.aborted,
      inputTokens: this.inputTokens,
      outputTokens: this.outputTokens,
      cachedTokens: this.cachedTokens,
      durationMsAvg: Math.round((this.durationMs / this.requests) * 10) / 10,
      firstAt: iso(this.firstAt),
      lastAt: iso(this.lastAt),
    };
  }
}

/** Days come in order: each is written as soon as the next begins, so only one is held. */
async function* dayRows(
  pages: AsyncIterable<UsageListRow[]>,
  dayOf: (at: number) => string,
): AsyncGenerator<ExportRow> {
  let day: string | undefined;
  let sums = new Sums();
  for await (const page of pages) {
    for (const row of page) {
      const next = dayOf(row.at);
      if (next !== day) {
        if (day !== undefined) yield { day, ...sums.row() };
        day = next;
        sums = new Sums();
      }
      sums.add(row);
    }
  }
  if (day !== undefined) yield { day, ...sums.row() };
}

/** Per key or model: one sum per group, written at the end, most requests first. */
async function* groupRows(pages: AsyncIterable<UsageListRow[]>, group: 'key' | 'model'): AsyncGenerator<ExportRow> {
  const groups = new Map<string | null, Sums>();
  for await (const page of pages) {
    for (const row of page) {
      const id = group === 'key' ? row.keyId : row.model;
      let sums = groups.get(id);
      if (!sums) groups.set(id, (sums = new Sums()));
      sums.add(row);
    }
  }
  const sorted = [...groups].sort(([a, x], [b, y]) => y.requests - x.requests || byIdNullLast(a, b));
  for (const [id, sums] of sorted) {
    yield group === 'key' ? { keyId: id, keyName: sums.keyName, ...sums.row() } : { model: id, ...sums.row() };
  }
}

function byIdNullLast(a: string | null, b: string | null): number {
  if (a === null || b === null) return a === b ? 0 : a === null ? 1 : -1;
  return a < b ? -1 : a > b ? 1 : 0;
}

function iso(at: number): string {
  return new Date(at).toISOString();
}
