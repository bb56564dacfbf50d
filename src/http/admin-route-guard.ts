/**
 * The start-up guard of the admin API: every `/api/*` route carries the cross-site checks, and
 * either the admin session with exactly one role declaration or a place in PUBLIC_ADMIN_ROUTES;
 * an audited route receives its validation failure in the handler, which records it.
 */
import type { FastifyInstance, RouteOptions } from 'fastify';
import { declaredRoles } from './hooks/admin-role.js';
import { isAuditedHandler } from './admin/audited.js';
import type { UserRole } from '../store/records.js';

/** The only `/api/*` routes reachable without an admin session or token. */
export const PUBLIC_ADMIN_ROUTES: ReadonlySet<string> = new Set([
  '/api/session',
  '/api/setup',
  '/api/login',
  '/api/invite/accept',
  // OpenID Connect: the start of a sign-in and the provider's redirect back, both before any session.
  '/api/oidc/login',
  '/api/oidc/callback',
]);

type Hook = (...args: never[]) => unknown;

/** One `/api/*` route and who may call it (`public`: no session needed). */
export interface AdminRouteAccess {
  method: string;
  url: string;
  roles: readonly UserRole[] | 'public';
}

const routeAccess = new WeakMap<FastifyInstance, AdminRouteAccess[]>();

/** Every `/api/*` route registered on `app` so far, with its declared roles (the role tests iterate it). */
export function adminRouteAccess(app: FastifyInstance): readonly AdminRouteAccess[] {
  return routeAccess.get(app) ?? [];
}

/**
 * Refuses, at start, an `/api/*` route without the cross-site checks, or without the admin
 * session step and exactly one declared role (`allowRoles`, after the session step) unless it
 * is in PUBLIC_ADMIN_ROUTES.
 */
export function guardAdminRoutes(app: FastifyInstance, session: Hook, checks: readonly Hook[]): void {
  const seen: AdminRouteAccess[] = [];
  routeAccess.set(app, seen);
  app.addHook('onRoute', (route: RouteOptions) => {
    if (route.url !== '/api' && !route.url.startsWith('/api/')) return;
    // An audited action records a request its schema refuses too: the wrapper answers it.
    if (isAuditedHandler(route.handler)) route.attachValidation = true;
    const hooks: unknown[] =
      route.onRequest === undefined ? [] : Array.isArray(route.onRequest) ? route.onRequest : [route.onRequest];
    const what = `${String(route.method)} ${route.url}`;
    if (!checks.every((check) => hooks.includes(check))) {
      throw new Error(`route table: ${what} lacks the sameOrigin/jsonContentType checks every /api route needs`);
    }
    const methods = (Array.isArray(route.method) ? route.method : [route.method]).map(String);
    if (PUBLIC_ADMIN_ROUTES.has(route.url)) {
      for (const method of methods) seen.push({ method, url: route.url, roles: 'public' });
      return;
    }
    if (!hooks.includes(session)) {
      throw new Error(`route table: ${what} has no adminSession step; add it or list the route in PUBLIC_ADMIN_ROUTES`);
    }
    const declared = hooks.flatMap((hook, i) => {
      const roles = declaredRoles(hook);
      return roles ? [{ roles, i }] : [];
    });
    if (declared.length !== 1 || declared[0]!.i < hooks.indexOf(session)) {
      const count = declared.length;
      throw new Error(
        `route table: ${what} must declare exactly one allowRoles(...) step after adminSession (it has ${count})`,
      );
    }
    for (const method of methods) seen.push({ method, url: route.url, roles: declared[0]!.roles });
  });
}
