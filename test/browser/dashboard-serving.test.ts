/**
 * registerDashboard over HTTP (no browser): caching by kind of file, security headers on
 * HTML, the SPA fallback and where it must not apply, and the "not built" page. Uses its own
 * small build directory so it does not depend on `vite build`.
 */
import { mkdtemp, mkdir, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import Fastify, { type FastifyInstance } from 'fastify';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { DASHBOARD_CSP, registerDashboard } from '../../src/http/dashboard.js';

const INDEX = '<!doctype html><title>Gatehouse</title><script type="module" src="/assets/index-Ab12Cd34.js"></script>';

describe('registerDashboard', () => {
  let dist: string;
  let app: FastifyInstance | undefined;

  beforeAll(async () => {
    dist = await mkdtemp(path.join(tmpdir(), 'gatehouse-dist-'));
    await mkdir(path.join(dist, 'assets'));
    await writeFile(path.join(dist, 'index.html'), INDEX);
    await writeFile(path.join(dist, 'assets', 'index-Ab12Cd34.js'), 'console.log("app")');
    await writeFile(path.join(dist, 'favicon.svg'), '<svg xmlns="http://www.w3.org/2000/svg"/>');
    await writeFile(path.join(dist, '.env'), 'SECRET=1');
    await writeFile(path.join(path.dirname(dist), 'outside.txt'), 'outside');
  });

  afterAll(async () => {
    await rm(dist, { recursive: true, force: true });
  });

  afterEach(async () => {
    await app?.close();
    app = undefined;
  });

  /** Like app.ts: a not-found handler rendering the admin error shape, and the HEAD / probe. */
  async function build(root = dist): Promise<FastifyInstance> {
    app = Fastify();
    app.setNotFoundHandler((request, reply) =>
      reply.code(404).send({ error: { code: 'not_found', message: `No route for ${request.method} ${request.url}.` } }),
    );
    app.head('/', async (_request, reply) => reply.code(200).send());
    registerDashboard(app, { root });
    app.get('/api/keys', async () => ({ keys: [] }));
    await app.ready();
    return app;
  }

  const html = { accept: 'text/html,application/xhtml+xml,*/*;q=0.8' };

  it('serves index.html at / with the CSP, nosniff, no-referrer and no-cache', async () => {
    const res = await (await build()).inject({ method: 'GET', url: '/', headers: html });
    expect(res.statusCode).toBe(200);
    expect(res.body).toBe(INDEX);
    expect(res.headers['content-type']).toBe('text/html; charset=utf-8');
    expect(res.headers['content-security-policy']).toBe(DASHBOARD_CSP);
    expect(DASHBOARD_CSP).toBe(
      "default-src 'self'; img-src 'self' data:; style-src 'self' 'unsafe-inline'; connect-src 'self'; " +
        "frame-ancestors 'none'",
    );
    expect(res.headers['x-content-type-options']).toBe('nosniff');
    expect(res.headers['referrer-policy']).toBe('no-referrer');
    expect(res.headers['cache-control']).toBe('no-cache');
  });

  it('answers any other page path that accepts HTML with index.html (history routing)', async () => {
    const server = await build();
    for (const url of ['/keys', '/logs?source=model:qwen', '/models/', '/index.html', '/some/deep/path']) {
      const res = await server.inject({ method: 'GET', url, headers: html });
      expect(res.statusCode, url).toBe(200);
      expect(res.body, url).toBe(INDEX);
      expect(res.headers['content-security-policy'], url).toBe(DASHBOARD_CSP);
    }
  });

  it('never answers /api or /v1 paths with the app, and leaves API routes alone', async () => {
    const server = await build();
    for (const url of ['/api', '/api/nothing', '/api/keys/x/y', '/v1', '/v1/models']) {
      const res = await server.inject({ method: 'GET', url, headers: html });
      expect(res.statusCode, url).toBe(404);
      expect(res.json(), url).toEqual({ error: { code: 'not_found', message: `No route for GET ${url}.` } });
    }
    expect((await server.inject({ method: 'GET', url: '/api/keys', headers: html })).json()).toEqual({ keys: [] });
  });

  it('does not fall back for requests that do not accept HTML, nor for other methods', async () => {
    const server = await build();
    const json = await server.inject({ method: 'GET', url: '/keys', headers: { accept: 'application/json' } });
    expect(json.statusCode).toBe(404);
    expect(json.json()).toMatchObject({ error: { code: 'not_found' } });
    const post = await server.inject({
      method: 'POST',
      url: '/keys',
      headers: { ...html, 'content-type': 'application/json' },
      payload: '{}',
    });
    expect(post.statusCode).toBe(404);
  });

  it('caches hashed assets for a year and revalidates other files', async () => {
    const server = await build();
    const asset = await server.inject({ method: 'GET', url: '/assets/index-Ab12Cd34.js' });
    expect(asset.statusCode).toBe(200);
    expect(asset.body).toBe('console.log("app")');
    expect(asset.headers['content-type']).toMatch(/^(text|application)\/javascript/);
    expect(asset.headers['cache-control']).toBe('public, max-age=31536000, immutable');
    expect(asset.headers['x-content-type-options']).toBe('nosniff');

    const icon = await server.inject({ method: 'GET', url: '/favicon.svg' });
    expect(icon.statusCode).toBe(200);
    expect(icon.headers['content-type']).toMatch(/^image\/svg\+xml/);
    expect(icon.headers['cache-control']).toBe('no-cache');
    expect(icon.headers.etag).toBeTruthy();
    const again = await server.inject({
      method: 'GET',
      url: '/favicon.svg',
      headers: { 'if-none-match': String(icon.headers.etag) },
    });
    expect(again.statusCode).toBe(304);
  });

  it('answers a missing hashed asset with 404, not HTML (the browser would report a MIME error)', async () => {
    const res = await (await build()).inject({ method: 'GET', url: '/assets/index-Old00000.js', headers: html });
    expect(res.statusCode).toBe(404);
    expect(res.headers['content-type']).toMatch(/json/);
  });

  it('serves no dotfile and nothing outside the build directory', async () => {
    const server = await build();
    for (const url of [
      '/.env',
      '/assets/../.env',
      '/%2e%2e/outside.txt',
      '/..%2foutside.txt',
      '/assets/%2e%2e/%2e%2e/outside.txt',
    ]) {
      const res = await server.inject({ method: 'GET', url });
      expect(res.statusCode, url).toBe(404);
      expect(res.body, url).not.toContain('SECRET=1');
      expect(res.json(), url).toMatchObject({ error: { code: 'not_found' } });
    }
  });

  it('keeps the HEAD / liveness probe of the route table', async () => {
    const res = await (await build()).inject({ method: 'HEAD', url: '/' });
    expect(res.statusCode).toBe(200);
    expect(res.headers['content-security-policy']).toBeUndefined();
  });

  it('answers 503 with a "run npm run build" page until the dashboard is built, then serves it without a restart', async () => {
    const empty = await mkdtemp(path.join(tmpdir(), 'gatehouse-unbuilt-'));
    try {
      const server = await build(path.join(empty, 'dist'));
      for (const url of ['/', '/keys']) {
        const res = await server.inject({ method: 'GET', url, headers: html });
        expect(res.statusCode, url).toBe(503);
        expect(res.headers['content-type']).toBe('text/html; charset=utf-8');
        expect(res.headers['content-security-policy']).toBe(DASHBOARD_CSP);
        expect(res.headers['cache-control']).toBe('no-store');
        expect(res.body).toContain('The dashboard is not built');
        expect(res.body).toContain('npm run build');
      }
      await mkdir(path.join(empty, 'dist'));
      await writeFile(path.join(empty, 'dist', 'index.html'), INDEX);
      const built = await server.inject({ method: 'GET', url: '/', headers: html });
      expect(built.statusCode).toBe(200);
      expect(built.body).toBe(INDEX);
    } finally {
      await rm(empty, { recursive: true, force: true });
    }
  });
});
