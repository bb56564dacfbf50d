/** `GET /api/usage/*` (docs/admin-api.md, "Usage") and `GET /api/limits`. */
import { request, withQuery } from './http.js';
import type {
  LimitsInfo,
  UsageExportFormat,
  UsageExportGroup,
  UsageGroupBy,
  UsageRange,
  UsageRequestDetail,
  UsageRequestFilters,
  UsageRequestFound,
  UsageRequestPage,
  UsageSummary,
} from '@gatehouse/admin-api/types.js';

export function getUsageSummary(
  range: UsageRange,
  groupBy: UsageGroupBy | null,
  signal?: AbortSignal,
): Promise<UsageSummary> {
  return request<UsageSummary>('GET', '/api/usage/summary', {
    query: { range, groupBy: groupBy ?? undefined },
    signal,
  });
}

/** Newest first; pass the previous page's `nextCursor` for the next one. */
export function listUsageRequests(
  filters: UsageRequestFilters,
  options: { cursor?: string | null; limit?: number; signal?: AbortSignal } = {},
): Promise<UsageRequestPage> {
  return request<UsageRequestPage>('GET', '/api/usage/requests', {
    query: {
      key: filters.key || undefined,
      model: filters.model || undefined,
      status: filters.status || undefined,
      from: filters.from || undefined,
      to: filters.to || undefined,
      cursor: options.cursor ?? undefined,
      limit: options.limit === undefined ? undefined : String(options.limit),
    },
    signal: options.signal,
  });
}

/**
 * Where the browser downloads an export of the calls these filters select (`Content-Disposition:
 * attachment`, sent with the session cookie like any same-origin link).
 */
export function usageExportUrl(
  filters: UsageRequestFilters,
  format: UsageExportFormat,
  group: UsageExportGroup,
): string {
  return withQuery('/api/usage/export', {
    format,
    group,
    key: filters.key || undefined,
    model: filters.model || undefined,
    status: filters.status || undefined,
    from: filters.from || undefined,
    to: filters.to || undefined,
  });
}

export async function getUsageRequest(id: string, signal?: AbortSignal): Promise<UsageRequestDetail> {
  const { request: detail } = await request<UsageRequestFound>('GET', `/api/usage/requests/${encodeURIComponent(id)}`, {
    signal,
  });
  return detail;
}

/** Whether per-key limits are shared by every replica (Redis) or counted by each process. */
export function getLimitsInfo(signal?: AbortSignal): Promise<LimitsInfo> {
  return request<LimitsInfo>('GET', '/api/limits', { signal });
}
