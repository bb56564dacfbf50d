/**
 * `allowRoles`: the admin API's authorization step, after `adminSession`. Each `/api/*` route
 * declares which roles may call it; anyone else gets `403 admin_forbidden`. The route table's
 * start-up guard refuses a signed-in route without one (`declaredRoles`), so a new route cannot
 * fall back to "every signed-in user".
 *
 * What a role may see *within* a route (a member's own keys and usage) is the handler's job;
 * this step only says who may call it at all.
 */
import type { FastifyReply, FastifyRequest } from 'fastify';
import { GatewayError } from '../../core/errors.js';
import type { UserRole } from '../../store/records.js';
import { roleOf } from '../../auth/admin-identity.js';

type RoleHook = (request: FastifyRequest, reply: FastifyReply) => Promise<void>;

const declared = new WeakMap<object, readonly UserRole[]>();

export function allowRoles(...roles: UserRole[]): RoleHook {
  if (roles.length === 0) throw new TypeError('allowRoles: name at least one role');
  const allowed = Object.freeze([...new Set(roles)]);
  const hook: RoleHook = async function allowRolesHook(request) {
    const identity = request.adminIdentity;
    // adminSession runs first and sets the identity; without one nothing is allowed.
    const role = identity ? roleOf(identity) : undefined;
    if (role === undefined || !allowed.includes(role)) {
      throw new GatewayError('admin_forbidden', {
        message: role ? `Your role (${role}) may not do this.` : 'Sign in first.',
      });
    }
  };
  declared.set(hook, allowed);
  return hook;
}

/** The roles a hook made by `allowRoles` lets through; undefined for any other hook. */
export function declaredRoles(hook: unknown): readonly UserRole[] | undefined {
  return typeof hook === 'function' ? declared.get(hook) : undefined;
}
