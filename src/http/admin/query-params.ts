/**
 * What the admin API's read routes read from a query string beyond its schema's forms
 * (`admin-api/usage.ts`, `admin-api/audit.ts`): statuses, times and cursors, and the refinements
 * that check, beside the schema, what it cannot (a time parses, a cursor decodes, `to` after `from`).
 */
import { parseIsoTimestamp } from '../../auth/api-keys.js';
import type { FieldIssue } from '../../core/schema-validator.js';
import type { AuditListQuery } from '../../store/store.js';
import type { UsageCursor } from '../../store/records.js';
import { usageIdTime } from '../../store/usage-id.js';

type Query = Record<string, unknown>;

/** A status code (`429`) or class (`2xx`) the route schema accepted; undefined when absent. */
export function parseStatus(raw: string | undefined): { min: number; max: number } | undefined {
  const text = raw?.trim().toLowerCase();
  if (!text) return undefined;
  if (text.endsWith('xx')) {
    const base = Number(text[0]) * 100;
    return { min: base, max: base + 99 };
  }
  return { min: Number(text), max: Number(text) };
}

/** Epoch ms of a time parameter; NaN when it does not parse (a refinement refused it). */
export function parseTime(raw: unknown): number | undefined {
  if (raw === undefined || raw === '') return undefined;
  return typeof raw === 'string' ? Date.parse(raw) : Number.NaN;
}

/** A `cursor` from a previous page (`nextCursor`: base64url of `<at>.<id>`). */
export function parseCursor(raw: unknown): UsageCursor | undefined {
  if (typeof raw !== 'string' || raw === '') return undefined;
  const match = /^(\d{1,16})\.([\w-]{1,64})$/.exec(Buffer.from(raw, 'base64url').toString('utf8'));
  return match ? { at: Number(match[1]), id: match[2]! } : undefined;
}

/** An audit entry id (it begins with its time) or an ISO 8601 time with `Z` or an offset. */
export function parseBefore(raw: unknown): AuditListQuery['before'] {
  if (typeof raw !== 'string' || raw === '') return undefined;
  const idTime = usageIdTime(raw);
  if (idTime !== undefined) return { at: idTime, id: raw };
  const at = parseIsoTimestamp(raw);
  return at === undefined ? undefined : { at };
}

const TIME_MESSAGE = 'must be an ISO 8601 date-time, e.g. 2030-01-31T12:00:00Z';

function timeIssues(query: Query, names: readonly string[]): FieldIssue[] {
  return names
    .filter((name) => Number.isNaN(parseTime(query[name])))
    .map((name) => ({ path: `/${name}`, message: TIME_MESSAGE }));
}

/** `GET /api/usage/requests`: `from` and `to` parse, `cursor` decodes. */
export function requestsQueryIssues(value: unknown): FieldIssue[] {
  const query = value as Query;
  const issues = timeIssues(query, ['from', 'to']);
  if (query.cursor !== undefined && query.cursor !== '' && !parseCursor(query.cursor))
    issues.push({ path: '/cursor', message: 'is not a cursor from a previous page (nextCursor)' });
  return issues;
}

/** `GET /api/usage/export`: `from` and `to` parse, and `to` is later. */
export function exportQueryIssues(value: unknown): FieldIssue[] {
  const query = value as Query;
  const issues = timeIssues(query, ['from', 'to']);
  const from = parseTime(query.from);
  const to = parseTime(query.to);
  if (from !== undefined && to !== undefined && to <= from)
    issues.push({ path: '/to', message: 'must be later than from' });
  return issues;
}

/** `GET /api/audit`: `before` is an entry id or a time that exists (not February 31). */
export function auditQueryIssues(value: unknown): FieldIssue[] {
  const { before } = value as Query;
  if (before === undefined || before === '' || parseBefore(before)) return [];
  const message = 'must be an ISO 8601 time (2031-01-31T12:00:00Z) or the nextBefore of a previous page';
  return [{ path: '/before', message }];
}
