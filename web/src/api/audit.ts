/** `GET /api/audit` (docs/admin-api.md, "Audit log"). */
import { request } from './http.js';
import type { AuditAction, AuditPage } from '@gatehouse/admin-api/types.js';

/** Newest first; pass the previous page's `nextBefore` as `before` for the next one. */
export function listAudit(
  filters: { action?: AuditAction; before?: string },
  options: { limit?: number; signal?: AbortSignal } = {},
): Promise<AuditPage> {
  return request<AuditPage>('GET', '/api/audit', {
    query: {
      action: filters.action,
      before: filters.before,
      limit: options.limit === undefined ? undefined : String(options.limit),
    },
    signal: options.signal,
  });
}
