/** API keys and what bounds them: the keys themselves, whether limits are shared, budgets' use. */
import type { FastifyPluginAsync } from 'fastify';
import { createBudgetsHandler } from '../admin/budgets-handler.js';
import { createKeyHandlers } from '../admin/keys-handlers.js';
import { createLimitsHandler } from '../admin/limits-handlers.js';
import type { AdminServices } from '../admin-services.js';

export const keysRoutes =
  ({ deps, admin, catalog, audited, access }: AdminServices): FastifyPluginAsync =>
  async (app) => {
    const keys = createKeyHandlers({ store: admin.store, index: admin.index, catalog });
    app.get('/api/keys', access.everyone, keys.list);
    app.post('/api/keys', access.keyOwners, audited('key.create', keys.create));
    app.patch('/api/keys/:id', access.keyOwners, audited('key.update', keys.update));
    app.delete('/api/keys/:id', access.keyOwners, audited('key.delete', keys.remove));
    app.get('/api/limits', access.everyone, createLimitsHandler(deps.usage.limits));
    app.get('/api/budgets', access.everyone, createBudgetsHandler(admin.store, deps.usage, deps.now));
  };
