/** API keys and what bounds them: the keys themselves, whether limits are shared, budgets' use. */
import type { FastifyPluginAsync } from 'fastify';
import { ErrorBody } from '../../admin-api/common.js';
import {
  CreatedKey,
  DeletedKey,
  KeyDeleteQuery,
  KeyList,
  KeyParams,
  KeyPatch,
  NewKeyInput,
  UpdatedKey,
} from '../../admin-api/keys.js';
import { BudgetList, LimitsInfo } from '../../admin-api/limits.js';
import { createBudgetsHandler } from '../admin/budgets-handler.js';
import { createKeyHandlers } from '../admin/keys-handlers.js';
import { createLimitsHandler } from '../admin/limits-handlers.js';
import type { AdminServices } from '../admin-services.js';

const refused = { '4XX': ErrorBody };

/** The schemas of the key routes, by handler. */
export const KEY_ROUTE_SCHEMAS = {
  list: { response: { 200: KeyList, ...refused } },
  create: { body: NewKeyInput, response: { 201: CreatedKey, ...refused } },
  update: { params: KeyParams, body: KeyPatch, response: { 200: UpdatedKey, ...refused } },
  remove: { params: KeyParams, querystring: KeyDeleteQuery, response: { 200: DeletedKey, ...refused } },
};

export const keysRoutes =
  ({ deps, admin, catalog, audited, access }: AdminServices): FastifyPluginAsync =>
  async (app) => {
    const keys = createKeyHandlers({ store: admin.store, index: admin.index, catalog });
    const schema = KEY_ROUTE_SCHEMAS;
    app.get('/api/keys', { ...access.everyone, schema: schema.list }, keys.list);
    app.post('/api/keys', { ...access.keyOwners, schema: schema.create }, audited('key.create', keys.create));
    app.patch('/api/keys/:id', { ...access.keyOwners, schema: schema.update }, audited('key.update', keys.update));
    app.delete('/api/keys/:id', { ...access.keyOwners, schema: schema.remove }, audited('key.delete', keys.remove));
    app.get(
      '/api/limits',
      { ...access.everyone, schema: { response: { 200: LimitsInfo, ...refused } } },
      createLimitsHandler(deps.usage.limits),
    );
    app.get(
      '/api/budgets',
      { ...access.everyone, schema: { response: { 200: BudgetList, ...refused } } },
      createBudgetsHandler(admin.store, deps.usage, deps.now),
    );
  };
