/** Users: list, create, invite (a one-time link) and change role, models, budget or disabled. */
import type { FastifyPluginAsync } from 'fastify';
import { ErrorBody } from '../../admin-api/common.js';
import {
  CreatedUser,
  InviteInput,
  NewUserInput,
  UpdatedUser,
  UserList,
  UserParams,
  UserPatch,
} from '../../admin-api/users.js';
import { nestedInValueOrder, refined } from '../../core/schema-validator.js';
import { createUsersHandlers, userFieldIssues } from '../admin/users-handlers.js';
import type { AdminServices } from '../admin-services.js';
import { invalidFieldsMessage } from '../route-schemas.js';

const refused = { '4XX': ErrorBody };

/** The schemas of the user routes, by handler. */
const USER_ROUTE_SCHEMAS = {
  list: { response: { 200: UserList, ...refused } },
  create: { body: refined(NewUserInput, userFieldIssues), response: { 201: CreatedUser, ...refused } },
  invite: {
    body: refined(InviteInput, (body) => (isReinvite(body) ? [] : userFieldIssues(body))),
    response: { 200: CreatedUser, 201: CreatedUser, ...refused },
  },
  update: { params: UserParams, body: UserPatch, response: { 200: UpdatedUser, ...refused } },
};

/** `{userId}`: a new link for a user who exists; its other fields are not read. */
const isReinvite = (body: unknown) => typeof body === 'object' && body !== null && 'userId' in body;

/**
 * A refused user body names its bad fields in the message, as the handlers' own refusals do, and
 * lists a budget's problems in the order the body holds them.
 */
const config = { invalidInputMessage: invalidFieldsMessage, invalidInputOrder: nestedInValueOrder };

export const usersRoutes =
  ({ deps, admin, trust, users, audited, access }: AdminServices): FastifyPluginAsync =>
  async (app) => {
    const usersApi = createUsersHandlers({
      users,
      origin: (request) => deps.settings.publicUrl ?? trust.origin(request.raw) ?? '',
      keysChanged: () => admin.index.reload(),
    });
    const schema = USER_ROUTE_SCHEMAS;
    app.get('/api/users', { ...access.readers, schema: schema.list }, usersApi.list);
    app.post(
      '/api/users',
      { ...access.admins, config, schema: schema.create },
      audited('user.create', usersApi.create),
    );
    app.post(
      '/api/users/invite',
      { ...access.admins, config, schema: schema.invite },
      audited('user.invite', usersApi.invite),
    );
    app.patch(
      '/api/users/:id',
      { ...access.admins, config, schema: schema.update },
      audited('user.update', usersApi.update),
    );
  };
