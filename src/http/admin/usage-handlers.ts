/**
 * Admin API for usage: `GET /api/usage/summary`, `GET /api/usage/requests` (the request log,
 * filtered server-side, keyset-paginated) and `GET /api/usage/requests/:id` (one call with its
 * captured bodies). Routes and the admin chain are in the route table.
 */
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { Static } from 'typebox';
import type { UsageRequestParams, UsageRequestsQuery, UsageSummaryQuery } from '../../admin-api/usage.js';
import type { UsageRequest, UsageRequestFound, UsageRequestPage, UsageSummary } from '../../admin-api/types.js';
import type { UsageListRow, UsageCursor, UsageRecord } from '../../store/records.js';
import type { UsageStore } from '../../store/store.js';
import type { UsageAccounting } from '../../usage/usage-accounting.js';
import { roleOf, type AdminIdentity } from '../../auth/admin-identity.js';
import { GatewayError } from '../../core/errors.js';
import { parseCursor, parseStatus, parseTime } from './query-params.js';

type Handler = (request: FastifyRequest, reply: FastifyReply) => Promise<unknown>;

const REQUESTS_DEFAULT_LIMIT = 100;

export interface UsageHandlerDeps {
  usage: Pick<UsageAccounting, 'summary' | 'flush'>;
  store: UsageStore;
  /** The keys a member owns: their usage is all a member sees. */
  ownedKeyIds: (userId: string) => Promise<string[]>;
  /** Key id → its owner, to name the user beside each call. */
  keyOwners: () => Promise<ReadonlyMap<string, { id: string; name: string }>>;
}

export function createUsageHandlers({ usage, store, ownedKeyIds, keyOwners }: UsageHandlerDeps): {
  summary: Handler;
  requests: Handler;
  request: Handler;
} {
  /** The keys a member's view is limited to; undefined for everyone else (they see all usage). */
  const scope = async (request: FastifyRequest): Promise<string[] | undefined> => {
    const identity = request.adminIdentity;
    return identity?.via === 'session' && identity.user.role === 'member' ? ownedKeyIds(identity.user.id) : undefined;
  };

  return {
    async summary(request) {
      const { range = '24h', groupBy = null } = request.query as Static<typeof UsageSummaryQuery>;
      // So the calls of the last half second are in (rows are written in batches).
      await usage.flush();
      return usage.summary(range, groupBy, await scope(request)) satisfies Promise<UsageSummary>;
    },

    async requests(request) {
      // The route schema (`UsageRequestsQuery`) and its refinement checked each parameter.
      const query = request.query as Static<typeof UsageRequestsQuery>;
      const keyId = query.key || undefined;
      const model = query.model || undefined;
      const status = parseStatus(query.status);
      const from = parseTime(query.from);
      const to = parseTime(query.to);
      const after = parseCursor(query.cursor);
      const limit = query.limit ? Number(query.limit) : REQUESTS_DEFAULT_LIMIT;
      await usage.flush();
      // One row more than asked tells whether there is a next page.
      const keyIds = await scope(request);
      const rows = await store.list({ keyId, keyIds, model, status, from, to, after, limit: limit + 1 });
      const page = rows.slice(0, limit);
      const owners = await keyOwners();
      const last = page.at(-1);
      return {
        requests: page.map((row) => toRequestView(row, owners)),
        nextCursor: rows.length > limit && last ? encodeCursor({ at: last.at, id: last.id }) : null,
      } satisfies UsageRequestPage;
    },

    async request(request) {
      const { id } = request.params as Static<typeof UsageRequestParams>;
      const found = await store.get(id);
      const keyIds = await scope(request);
      // A member asking for another user's call learns only that there is none for them.
      const record =
        found && (keyIds === undefined || (found.keyId !== null && keyIds.includes(found.keyId))) ? found : undefined;
      if (!record) throw new GatewayError('not_found', { message: `No usage record with id ${JSON.stringify(id)}.` });
      const captured = record.requestBody !== null || record.responseBody !== null;
      const withheld = captured && !mayReadBodies(request.adminIdentity, record.keyId, keyIds);
      return {
        request: {
          ...toRequestView({ ...record, captured }, await keyOwners()),
          requestBody: withheld ? null : record.requestBody,
          responseBody: withheld ? null : record.responseBody,
          bodiesWithheld: withheld,
        },
      } satisfies UsageRequestFound;
    },
  };
}

/**
 * Who reads captured bodies: admins (and the admin token), and the member who owns the call's
 * key. Anyone else who may see the call (a viewer) gets it without them.
 */
function mayReadBodies(
  identity: AdminIdentity | null | undefined,
  keyId: string | null,
  ownKeyIds: readonly string[] | undefined,
): boolean {
  if (!identity) return false;
  const role = roleOf(identity);
  if (role === 'admin') return true;
  return role === 'member' && keyId !== null && ownKeyIds !== undefined && ownKeyIds.includes(keyId);
}

/** One row of the request log as the API answers it (tests read it under this name). */
export type RequestView = UsageRequest;

function toRequestView(
  row: UsageListRow | (UsageRecord & { captured: boolean }),
  owners: ReadonlyMap<string, { id: string; name: string }>,
): UsageRequest {
  return {
    id: row.id,
    at: new Date(row.at).toISOString(),
    requestId: row.requestId,
    key: row.keyId === null ? null : { id: row.keyId, name: row.keyName },
    owner: (row.keyId === null ? undefined : owners.get(row.keyId)) ?? null,
    model: row.model,
    method: row.method,
    endpoint: row.endpoint,
    status: row.status,
    streamed: row.streamed,
    inputTokens: row.inputTokens,
    outputTokens: row.outputTokens,
    cachedTokens: row.cachedTokens,
    tokensSource: row.tokensSource,
    ttfbMs: row.ttfbMs,
    ttftMs: row.ttftMs,
    durationMs: row.durationMs,
    bytesIn: row.bytesIn,
    bytesOut: row.bytesOut,
    clientAborted: row.clientAborted,
    errorClass: row.errorClass,
    queueMs: row.queueMs,
    captured: row.captured,
  };
}

/** Opaque to clients: base64url of `<at>.<id>`. */
function encodeCursor(cursor: UsageCursor): string {
  return Buffer.from(`${cursor.at}.${cursor.id}`, 'utf8').toString('base64url');
}
