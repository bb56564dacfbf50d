import Fastify, { type FastifyInstance } from 'fastify';
import { describe, expect, it } from 'vitest';
import { allowRoles } from '../../src/http/hooks/admin-role.js';
import { adminRouteAccess, guardAdminRoutes, PUBLIC_ADMIN_ROUTES } from '../../src/http/admin-route-guard.js';

describe('the route table guard', () => {
  const session = async () => {};
  const checks = [async () => {}, async () => {}];
  const admins = allowRoles('admin');
  const guarded = (): FastifyInstance => {
    const app = Fastify();
    guardAdminRoutes(app, session, checks);
    return app;
  };
  const handler = async () => ({});

  it('refuses to register an /api route without the admin session step', () => {
    expect(() => guarded().get('/api/models', { onRequest: [...checks, admins] }, handler)).toThrow(
      'route table: GET /api/models has no adminSession step; add it or list the route in PUBLIC_ADMIN_ROUTES',
    );
  });

  it('refuses to register a signed-in /api route that declares no role', () => {
    expect(() => guarded().get('/api/models', { onRequest: [...checks, session] }, handler)).toThrow(
      'route table: GET /api/models must declare exactly one allowRoles(...) step after adminSession (it has 0)',
    );
  });

  it('refuses two role declarations, and one placed before the session step', () => {
    expect(() =>
      guarded().get('/api/models', { onRequest: [...checks, session, admins, allowRoles('viewer')] }, handler),
    ).toThrow(/must declare exactly one allowRoles\(\.\.\.\) step after adminSession \(it has 2\)/);
    expect(() => guarded().get('/api/models', { onRequest: [...checks, admins, session] }, handler)).toThrow(
      /must declare exactly one allowRoles/,
    );
  });

  it('refuses to register an /api route without the cross-site checks, public or not', () => {
    expect(() => guarded().post('/api/keys', { onRequest: [session, admins] }, handler)).toThrow(
      /lacks the sameOrigin\/jsonContentType checks/,
    );
    expect(() => guarded().post('/api/login', handler)).toThrow(/lacks the sameOrigin\/jsonContentType checks/);
  });

  it('accepts the admin chain with a role, the public list with the checks, and routes outside /api', () => {
    const app = guarded();
    expect(() => app.get('/api/models', { onRequest: [...checks, session, admins] }, handler)).not.toThrow();
    for (const url of PUBLIC_ADMIN_ROUTES) expect(() => app.post(url, { onRequest: checks }, handler)).not.toThrow();
    expect(() => app.get('/apiary', handler)).not.toThrow();
    expect(() => app.get('/healthz', handler)).not.toThrow();
    expect(adminRouteAccess(app)).toContainEqual({ method: 'GET', url: '/api/models', roles: ['admin'] });
    expect(adminRouteAccess(app)).toContainEqual({ method: 'POST', url: '/api/login', roles: 'public' });
  });

  it('lists exactly the routes the admin API documents as public', () => {
    expect([...PUBLIC_ADMIN_ROUTES].sort()).toEqual([
      '/api/invite/accept',
      '/api/login',
      '/api/oidc/callback',
      '/api/oidc/login',
      '/api/session',
      '/api/setup',
    ]);
  });
});
