/**
 * `GET /api/audit?limit=&before=&action=`: the audit log, newest first. `before` is an ISO 8601
 * time (entries strictly before it) or the `nextBefore` of the previous page (entries older
 * than that entry). Route and admin chain are in the route table.
 */
import type { FastifyRequest } from 'fastify';
import type { Static } from 'typebox';
import type { AuditQuery } from '../../admin-api/audit.js';
import type { AuditEntry, AuditPage } from '../../admin-api/types.js';
import type { AuditStore } from '../../store/store.js';
import type { AuditRecord } from '../../store/records.js';
import { parseBefore } from './query-params.js';

const DEFAULT_LIMIT = 50;

/** The route schema (`AuditQuery`) and its refinement checked the parameters. */
export function createAuditHandler(store: AuditStore): (request: FastifyRequest) => Promise<AuditPage> {
  return async (request) => {
    const query = request.query as Static<typeof AuditQuery>;
    const limit = query.limit ? Number(query.limit) : DEFAULT_LIMIT;
    const before = parseBefore(query.before);
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

function toEntry(record: AuditRecord): AuditEntry {
  return { ...record, at: new Date(record.at).toISOString() };
}
