/** Usage: totals and series, the request log and one call, and the export download. */
import type { FastifyPluginAsync } from 'fastify';
import { ErrorBody } from '../../admin-api/common.js';
import {
  UsageExportQuery,
  UsageRequestFound,
  UsageRequestPage,
  UsageRequestParams,
  UsageRequestsQuery,
  UsageSummary,
  UsageSummaryQuery,
} from '../../admin-api/usage.js';
import { inFieldOrder, refined } from '../../core/schema-validator.js';
import type { Store } from '../../store/store.js';
import { exportQueryIssues, requestsQueryIssues } from '../admin/query-params.js';
import { createUsageExportHandler } from '../admin/usage-export.js';
import { createUsageHandlers } from '../admin/usage-handlers.js';
import type { AdminServices } from '../admin-services.js';
import { invalidQueryMessage } from '../route-schemas.js';

const refused = { '4XX': ErrorBody };

/** The schemas of the usage routes, by handler. */
const USAGE_ROUTE_SCHEMAS = {
  summary: { querystring: UsageSummaryQuery, response: { 200: UsageSummary, ...refused } },
  requests: {
    querystring: refined(UsageRequestsQuery, requestsQueryIssues),
    response: { 200: UsageRequestPage, ...refused },
  },
  request: { params: UsageRequestParams, response: { 200: UsageRequestFound, ...refused } },
  // The export's body is a CSV or JSON download: its schema documents only refusals.
  export: { querystring: refined(UsageExportQuery, exportQueryIssues), response: refused },
};

/** A refused query names each bad parameter in the message. */
const config = { invalidInputMessage: invalidQueryMessage };
/** The export lists its problems in the order its handler checked them before it had a schema. */
const exportConfig = {
  ...config,
  invalidInputOrder: inFieldOrder(['format', 'group', 'key', 'model', 'status', 'from', 'to']),
};

export const usageRoutes =
  ({ deps, admin, now, access }: AdminServices): FastifyPluginAsync =>
  async (app) => {
    const { store } = admin;
    const usageApi = createUsageHandlers({
      usage: deps.usage,
      store: store.usage,
      ownedKeyIds: async (userId) => (await store.keys.list({ ownerId: userId })).map((key) => key.id),
      keyOwners: () => keyOwnerNames(store),
    });
    const schema = USAGE_ROUTE_SCHEMAS;
    app.get('/api/usage/summary', { ...access.everyone, config, schema: schema.summary }, usageApi.summary);
    app.get('/api/usage/requests', { ...access.everyone, config, schema: schema.requests }, usageApi.requests);
    app.get('/api/usage/requests/:id', { ...access.everyone, schema: schema.request }, usageApi.request);
    // Exports list every key and user: not for members, who see only their own.
    app.get(
      '/api/usage/export',
      { ...access.readers, config: exportConfig, schema: schema.export },
      createUsageExportHandler({ usage: deps.usage, store: store.usage, now }),
    );
  };

/** Key id → the user who owns it, to name the user beside each call in the request log. */
async function keyOwnerNames(store: Store): Promise<ReadonlyMap<string, { id: string; name: string }>> {
  const [keys, users] = await Promise.all([store.keys.list(), store.users.list()]);
  const names = new Map(users.map((user) => [user.id, user.name]));
  const owners = new Map<string, { id: string; name: string }>();
  for (const key of keys) {
    const name = key.ownerId === null ? undefined : names.get(key.ownerId);
    if (name !== undefined) owners.set(key.id, { id: key.ownerId!, name });
  }
  return owners;
}
