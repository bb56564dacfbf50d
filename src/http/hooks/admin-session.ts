/**
 * `adminSession`: the admin API's authentication step. Lets the request through with a live
 * dashboard session or the admin Bearer token (see `admin-identity.ts`), and records who it
 * is on `request.adminIdentity` for the handler; anything else is `401 admin_unauthorized`.
 */
import type { FastifyReply, FastifyRequest } from 'fastify';
import { GatewayError } from '../../core/errors.js';
import type { AdminIdentifier, AdminIdentity } from '../../auth/admin-identity.js';

declare module 'fastify' {
  interface FastifyRequest {
    /** Set by `adminSession` on admin routes (and by `GET /api/session`); null elsewhere. */
    adminIdentity: AdminIdentity | null;
  }
}

export function adminSession(identifier: AdminIdentifier) {
  if (typeof identifier?.identify !== 'function') throw new TypeError('adminSession: an AdminIdentifier is required');
  const hint = identifier.tokenEnabled
    ? 'Sign in to the dashboard, or send Authorization: Bearer <GATEHOUSE_ADMIN_TOKEN>.'
    : 'Sign in to the dashboard (scripts: set GATEHOUSE_ADMIN_TOKEN and send it as a Bearer token).';
  return async function adminSessionHook(request: FastifyRequest, _reply: FastifyReply): Promise<void> {
    const identity = await identifier.identify(request);
    if (!identity) {
      throw new GatewayError('admin_unauthorized', {
        message: `Admin authentication required. ${hint}`,
        headers: { 'www-authenticate': 'Bearer realm="gatehouse-admin"' },
      });
    }
    request.adminIdentity = identity;
  };
}
