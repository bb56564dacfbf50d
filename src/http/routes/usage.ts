/** Usage: totals and series, the request log and one call, and the export download. */
import type { FastifyPluginAsync } from 'fastify';
import type { Store } from '../../store/store.js';
import { createUsageExportHandler } from '../admin/usage-export.js';
import { createUsageHandlers } from '../admin/usage-handlers.js';
import type { AdminServices } from '../admin-services.js';

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
    app.get('/api/usage/summary', access.everyone, usageApi.summary);
    app.get('/api/usage/requests', access.everyone, usageApi.requests);
    app.get('/api/usage/requests/:id', access.everyone, usageApi.request);
    // Exports list every key and user: not for members, who see only their own.
    app.get(
      '/api/usage/export',
      access.readers,
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
