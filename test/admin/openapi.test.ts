/**
 * `GET /api/openapi.json`: a valid OpenAPI 3.1 document, generated from the route schemas, that
 * lists every registered `/api` route; readable by the admin token, refused to strangers.
 */
import { Validator } from '@seriousme/openapi-schema-validator';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { adminRouteAccess } from '../../src/http/admin-route-guard.js';
import { api, startAdminGateway } from '../helpers/admin.js';
import type { TestGateway } from '../helpers/gateway.js';
import { json } from '../helpers/http.js';

const ADMIN_TOKEN = 'openapi-tests-admin-token';

describe('GET /api/openapi.json', () => {
  let gateway: TestGateway;
  beforeAll(async () => {
    gateway = await startAdminGateway('http://127.0.0.1:9', { adminToken: ADMIN_TOKEN });
  });
  afterAll(async () => {
    await gateway?.close();
  });

  const fetchDocument = async () => {
    const res = await api(gateway, 'GET', '/api/openapi.json', {
      headers: { authorization: `Bearer ${ADMIN_TOKEN}` },
    });
    expect(res.status, res.body.toString()).toBe(200);
    return json(res.body) as { openapi: string; paths: Record<string, Record<string, unknown>> };
  };

  it('is a valid OpenAPI 3.1 document', async () => {
    const document = await fetchDocument();
    expect(document.openapi).toBe('3.1.0');
    const result = await new Validator().validate(document);
    expect(result.errors).toBeUndefined();
    expect(result.valid).toBe(true);
  });

  it('lists every registered /api route with its method, and nothing outside /api', async () => {
    const document = await fetchDocument();
    const routes = adminRouteAccess(gateway.app.fastify);
    expect(routes.length).toBeGreaterThan(40);
    for (const { method, url } of routes) {
      if (method === 'HEAD') continue;
      const path = url.replace(/:([A-Za-z]+)/g, '{$1}');
      expect(document.paths[path], `${method} ${url}`).toHaveProperty(method.toLowerCase());
    }
    expect(Object.keys(document.paths).filter((path) => !path.startsWith('/api/'))).toEqual([]);
  });

  it("documents a key's body from the schema Fastify validates it with", async () => {
    const document = await fetchDocument();
    const post = document.paths['/api/keys']!.post as {
      requestBody: { content: { 'application/json': { schema: { properties: Record<string, unknown> } } } };
    };
    const body = post.requestBody.content['application/json'].schema;
    expect(body.properties.name).toMatchObject({ type: 'string', maxLength: 100 });
    expect(body.properties.limits).toBeDefined();
  });

  it("documents the users routes' bodies and params from their schemas", async () => {
    const document = await fetchDocument();
    type Operation = {
      requestBody?: { content: { 'application/json': { schema: Record<string, unknown> } } };
      parameters?: Array<{ in: string; name: string }>;
    };
    const body = (path: string, method: string) =>
      (document.paths[path]![method] as Operation).requestBody?.content['application/json'].schema;
    expect(body('/api/users', 'post')).toMatchObject({
      properties: { name: { type: 'string' }, password: { type: 'string' } },
      required: ['name', 'role'],
    });
    expect(body('/api/users/invite', 'post')).toHaveProperty('if');
    expect(body('/api/users/{id}', 'patch')).toMatchObject({ minProperties: 1, properties: { disabled: {} } });
    expect((document.paths['/api/users/{id}']!.patch as Operation).parameters).toContainEqual(
      expect.objectContaining({ in: 'path', name: 'id' }),
    );
  });

  it('documents the query parameters of the audit and usage routes from their schemas', async () => {
    const document = await fetchDocument();
    const queryOf = (path: string) =>
      ((document.paths[path]!.get as { parameters?: Array<{ in: string; name: string }> }).parameters ?? [])
        .filter((parameter) => parameter.in === 'query')
        .map((parameter) => parameter.name);
    expect(queryOf('/api/audit')).toEqual(['limit', 'before', 'action']);
    expect(queryOf('/api/usage/summary')).toEqual(['range', 'groupBy']);
    expect(queryOf('/api/usage/requests')).toEqual(['key', 'model', 'status', 'from', 'to', 'cursor', 'limit']);
    expect(queryOf('/api/usage/export')).toEqual(['from', 'to', 'format', 'group', 'key', 'model', 'status']);
  });

  it('refuses a stranger with the admin 401', async () => {
    const res = await api(gateway, 'GET', '/api/openapi.json');
    expect(res.status).toBe(401);
    expect(json(res.body)).toMatchObject({ error: { code: 'admin_unauthorized' } });
  });
});
