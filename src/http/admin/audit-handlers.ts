/**
 * `GET /api/audit?limit=&before=&action=`: the audit log, newest first. `before` is an ISO 8601
 * time (entries strictly before it) or the `nextBefore` of the previous page (entries older
 * than that entry). Route and admin chain are in the route table.
 */
import type { FastifyRequest } from 'fastify';
import type { Static } from 'typebox';
import type { AuditQuery } from '../../admin-api/audit.js';
import type { AuditEntry, AuditPage } from '../../admin-api/types.js';
import { parseIsoTimestamp } from '../../auth/api-keys.js';
import { GatewayError } from '../../core/errors.js';
import type { AuditListQuery, AuditStore } from '../../store/store.js';
import type { AuditRecord } from '../../store/records.js';
import { usageIdTime } from '../../store/usage-id.js';
import { invalidQueryMessage } from '../route-schemas.js';

const DEFAULT_LIMIT = 50;

/** The route schema (`AuditQuery`) checked the parameters' forms; a `before` time must also exist. */
export function createAuditHandler(store: AuditStore): (request: FastifyRequest) => Promise<AuditPage> {
  return async (request) => {
    const query = request.query as Static<typeof AuditQuery>;
    const limit = query.limit ? Number(query.limit) : DEFAULT_LIMIT;
    const before = query.before ? parseBefore(query.before) : undefined;
    const action = query.action || undefined;
    // One entry more than asked tells whether there is a next page.
    const rows = await store.list({ action, before, limit: limit + 1 });
    const page = rows.slice(0, limit);
    return {
      entries: page.map(toEntry),
      nextBefore: rows.length > limit ? (page.at(-1)?.id ?? null) : null,
    };
  };
}

/** An entry id (it begins with its time) or an ISO 8601 time with `Z` or an offset. */
function parseBefore(raw: string): AuditListQuery['before'] {
  const idTime = usageIdTime(raw);
  if (idTime !== undefined) return { at: idTime, id: raw };
  const at = parseIsoTimestamp(raw);
  if (at !== undefined) return { at };
  const issues = [
    {
      path: '/before',
      message: 'must be an ISO 8601 time (2031-01-31T12:00:00Z) or the nextBefore of a previous page',
    },
  ];
  throw new GatewayError('validation_failed', { message: invalidQueryMessage(issues), details: issues });
}

function toEntry(record: AuditRecord): AuditEntry {
  return { ...record, at: new Date(record.at).toISOString() };
}
