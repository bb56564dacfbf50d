import Fastify, { type FastifyInstance } from 'fastify';
import { describe, expect, it } from 'vitest';
import { guardAdminRoutes, PUBLIC_ADMIN_ROUTES } from '../../src/http/routes.js';

describe('the route table guard', () => {
  const session = async () => {};
  const checks = [async () => {}, async () => {}];
  const guarded = (): FastifyInstance => {
    const app = Fastify();
    guardAdminRoutes(app, session, checks);
    return app;
  };
  const handler = async () => ({});

  it('refuses to register an /api route without the admin session step', () => {
    expect(() => guarded().get('/api/models', { onRequest: checks }, handler)).toThrow(
      'route table: GET /api/models has no adminSession step; add it or list the route in PUBLIC_ADMIN_ROUTES',
    );
  });

  it('refuses to register an /api route without the cross-site checks, public or not', () => {
    expect(() => guarded().post('/api/keys', { onRequest: [session] }, handler)).toThrow(
      /lacks the sameOrigin\/jsonContentType checks/,
    );
    expect(() => guarded().post('/api/login', handler)).toThrow(/lacks the sameOrigin\/jsonContentType checks/);
  });

  it('accepts the admin chain, the public list with the checks, and routes outside /api', () => {
    const app = guarded();
    expect(() => app.get('/api/models', { onRequest: [...checks, session] }, handler)).not.toThrow();
    for (const url of PUBLIC_ADMIN_ROUTES) expect(() => app.post(url, { onRequest: checks }, handler)).not.toThrow();
    expect(() => app.get('/apiary', handler)).not.toThrow();
    expect(() => app.get('/healthz', handler)).not.toThrow();
  });

  it('lists exactly the routes the admin API documents as public', () => {
    expect([...PUBLIC_ADMIN_ROUTES].sort()).toEqual(['/api/login', '/api/session', '/api/setup']);
  });
});
