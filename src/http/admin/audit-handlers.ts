/**
 * `GET /api/audit?limit=&before=&action=`: the audit log, newest first. `before` is an ISO 8601
 * time (entries strictly before it) or the `nextBefore` of the previous page (entries older
 * than that entry). Route and admin chain are in the route table.
 */
import type { FastifyRequest } from 'fastify';
import type { AuditAction, AuditEntry, AuditPage } from '../../admin-api/types.js';
import { AUDIT_ACTIONS } from '../../audit/actions.js';
import { parseIsoTimestamp } from '../../auth/api-keys.js';
import type { AuditListQuery, AuditStore } from '../../store/store.js';
import type { AuditRecord } from '../../store/records.js';
import { usageIdTime } from '../../store/usage-id.js';
import { checkKnown, Issues, optionalString } from './query-params.js';

const DEFAULT_LIMIT = 50;
const MAX_LIMIT = 500;

export function createAuditHandler(store: AuditStore): (request: FastifyRequest) => Promise<AuditPage> {
  return async (request) => {
    const query = request.query as Record<string, unknown>;
    const issues = new Issues();
    checkKnown(query, ['limit', 'before', 'action'], issues);
    const limit = parseLimit(optionalString(query, 'limit', issues), issues);
    const before = parseBefore(optionalString(query, 'before', issues), issues);
    const action = optionalString(query, 'action', issues);
    if (action !== undefined && !(AUDIT_ACTIONS as readonly string[]).includes(action))
      issues.add('/action', `must be one of ${AUDIT_ACTIONS.join(', ')}`);
    issues.throwIfAny();
    // One entry more than asked tells whether there is a next page.
    const rows = await store.list({ action: action as AuditAction | undefined, before, limit: limit + 1 });
    const page = rows.slice(0, limit);
    return {
      entries: page.map(toEntry),
      nextBefore: rows.length > limit ? (page.at(-1)?.id ?? null) : null,
    };
  };
}

function parseLimit(raw: string | undefined, issues: Issues): number {
  if (raw === undefined) return DEFAULT_LIMIT;
  const n = /^\d+$/.test(raw) ? Number(raw) : Number.NaN;
  if (n >= 1 && n <= MAX_LIMIT) return n;
  issues.add('/limit', `must be a whole number from 1 to ${MAX_LIMIT}`);
  return DEFAULT_LIMIT;
}

/** An entry id (it begins with its time) or an ISO 8601 time with `Z` or an offset. */
function parseBefore(raw: string | undefined, issues: Issues): AuditListQuery['before'] {
  if (raw === undefined) return undefined;
  const idTime = usageIdTime(raw);
  if (idTime !== undefined) return { at: idTime, id: raw };
  const at = parseIsoTimestamp(raw);
  if (at !== undefined) return { at };
  issues.add('/before', 'must be an ISO 8601 time (2031-01-31T12:00:00Z) or the nextBefore of a previous page');
  return undefined;
}

function toEntry(record: AuditRecord): AuditEntry {
  return { ...record, at: new Date(record.at).toISOString() };
}
