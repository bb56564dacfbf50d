/** Users: list, create, invite (a one-time link) and change role, models, budget or disabled. */
import type { FastifyPluginAsync } from 'fastify';
import { createUsersHandlers } from '../admin/users-handlers.js';
import type { AdminServices } from '../admin-services.js';

export const usersRoutes =
  ({ deps, admin, trust, users, audited, access }: AdminServices): FastifyPluginAsync =>
  async (app) => {
    const usersApi = createUsersHandlers({
      users,
      origin: (request) => deps.settings.publicUrl ?? trust.origin(request.raw) ?? '',
      keysChanged: () => admin.index.reload(),
    });
    app.get('/api/users', access.readers, usersApi.list);
    app.post('/api/users', access.admins, audited('user.create', usersApi.create));
    app.post('/api/users/invite', access.admins, audited('user.invite', usersApi.invite));
    app.patch('/api/users/:id', access.admins, audited('user.update', usersApi.update));
  };
