/**
 * The admin key handlers behind a minimal Fastify app: the same routes and schemas the route
 * table declares, validated and rendered as the gateway does. Admin authentication is not part of
 * these handlers and is not exercised here.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Fastify, { type FastifyError, type FastifyInstance } from 'fastify';
import { afterAll, afterEach, beforeEach, describe, expect, it } from 'vitest';
import { hashApiKey } from '../../src/auth/api-keys.js';
import { authenticateClient } from '../../src/auth/client-auth.js';
import { KeyIndex } from '../../src/auth/key-index.js';
import { AuditLog } from '../../src/audit/audit-log.js';
import { createAudited } from '../../src/http/admin/audited.js';
import { createKeyHandlers } from '../../src/http/admin/keys-handlers.js';
import { compileRequestValidator, compileResponseSerializer, invalidInputError } from '../../src/http/route-schemas.js';
import { KEY_ROUTE_SCHEMAS } from '../../src/http/routes/keys.js';
import { isGatewayError } from '../../src/core/errors.js';
import { errorBody } from '../../src/core/render-error.js';
import { openSqliteStore } from '../../src/store/sqlite.js';
import type { Store } from '../../src/store/store.js';

const root = mkdtempSync(join(tmpdir(), 'gatehouse-admin-keys-'));
afterAll(() => rmSync(root, { recursive: true, force: true }));

const NOW = Date.UTC(2030, 0, 1, 12);
let n = 0;
/** The handlers' clock; each test starts at NOW. */
let clock = NOW;
let store: Store;
let index: KeyIndex;
let app: FastifyInstance;

beforeEach(async () => {
  clock = NOW;
  store = await openSqliteStore({ dataDir: join(root, `t${n++}`) });
  index = await KeyIndex.open(store);
  const handlers = createKeyHandlers({ store, index, now: () => clock });
  const audited = createAudited(new AuditLog(store, { now: () => clock }), () => '127.0.0.1');
  app = Fastify();
  app.decorateRequest('adminIdentity', null);
  app.setValidatorCompiler(compileRequestValidator);
  app.setSerializerCompiler(compileResponseSerializer);
  app.setErrorHandler((error: FastifyError, request, reply) => {
    const gatewayError = error.validation ? invalidInputError(error, request) : error;
    if (isGatewayError(gatewayError)) return reply.code(gatewayError.status).send(errorBody(gatewayError, 'admin'));
    return reply.code(500).send({ unexpected: String(error) });
  });
  app.get('/api/keys', { schema: KEY_ROUTE_SCHEMAS.list }, handlers.list);
  app.post('/api/keys', { schema: KEY_ROUTE_SCHEMAS.create }, audited('key.create', handlers.create));
  app.patch('/api/keys/:id', { schema: KEY_ROUTE_SCHEMAS.update }, audited('key.update', handlers.update));
  app.delete('/api/keys/:id', { schema: KEY_ROUTE_SCHEMAS.remove }, audited('key.delete', handlers.remove));
  await app.ready();
});

afterEach(async () => {
  await app.close();
  await index.close();
  await store.close();
});

async function createKey(body: Record<string, unknown> = { name: 'k' }) {
  const res = await app.inject({ method: 'POST', url: '/api/keys', payload: body });
  expect(res.statusCode).toBe(201);
  return res.json<{ key: { id: string; prefix: string; priority: number }; secret: string }>();
}

describe('POST /api/keys', () => {
  it('creates a key and shows its secret once, with the record in camelCase and ISO time', async () => {
    const res = await app.inject({
      method: 'POST',
      url: '/api/keys',
      payload: {
        name: '  laptop  ',
        models: ['qwen', 'qwen', 'llama'],
        expiresAt: '2030-02-01T00:00:00Z',
        note: 'mine',
        limits: { rpm: 60, concurrent: 2 },
        budget: { tokens: 200000, period: 'week' },
      },
    });
    expect(res.statusCode).toBe(201);
    const body = res.json<{ key: Record<string, unknown>; secret: string }>();
    expect(body.secret).toMatch(/^sk-[0-9A-Za-z]{43}$/);
    expect(body.key).toEqual({
      id: expect.stringMatching(/^key_[0-9A-Za-z]{12}$/),
      name: 'laptop',
      prefix: body.secret.slice(0, 9),
      createdAt: '2030-01-01T12:00:00.000Z',
      lastUsedAt: null,
      expiresAt: '2030-02-01T00:00:00.000Z',
      revokedAt: null,
      models: ['qwen', 'llama'],
      note: 'mine',
      limits: { rpm: 60, tpm: null, concurrent: 2 },
      priority: 0,
      manage: false,
      budget: { tokens: 200000, requests: null, gpuSeconds: null, period: 'week' },
      status: 'active',
      ownerId: null,
      ownerName: null,
    });
    expect(res.body).not.toContain(hashApiKey(body.secret));
    expect((await store.keys.get(body.key.id as string))?.hash).toBe(hashApiKey(body.secret));
  });

  it('makes the new key usable by the very next request', async () => {
    const { secret, key } = await createKey();
    const result = authenticateClient({ authorization: `Bearer ${secret}` }, index, NOW);
    expect(result).toMatchObject({ mode: 'key', key: { id: key.id } });
  });

  it('reports every invalid field at once with JSON-pointer paths', async () => {
    const res = await app.inject({
      method: 'POST',
      url: '/api/keys',
      payload: {
        models: ['ok', 3, ''],
        expiresAt: 'next tuesday',
        note: 7,
        limits: { rpm: 0, tpm: 1.5, burst: 3 },
        colour: 'red',
      },
    });
    expect(res.statusCode).toBe(422);
    expect(res.json()).toEqual({
      error: {
        code: 'validation_failed',
        message: 'Validation failed.',
        details: [
          { path: '/name', message: 'required' },
          {
            path: '/colour',
            message: 'unknown field; expected one of name, models, expiresAt, note, limits, priority, manage, budget',
          },
          { path: '/models/1', message: 'must be a non-empty string' },
          { path: '/models/2', message: 'must be a non-empty string' },
          { path: '/expiresAt', message: 'must be an ISO 8601 date-time (e.g. 2030-01-31T00:00:00Z) or null' },
          { path: '/note', message: 'must be a string' },
          { path: '/limits/burst', message: 'unknown limit; expected one of rpm, tpm, concurrent' },
          { path: '/limits/rpm', message: 'must be a whole number from 1 to 1000000000, or null for no limit' },
          { path: '/limits/tpm', message: 'must be a whole number from 1 to 1000000000, or null for no limit' },
        ],
      },
    });
    expect(await store.keys.count()).toBe(0);
  });

  it('refuses an expiry in the past, an empty name and a body that is not an object', async () => {
    const past = await app.inject({
      method: 'POST',
      url: '/api/keys',
      payload: { name: 'x', expiresAt: '2029-12-31' },
    });
    expect(past.json().error.details).toEqual([{ path: '/expiresAt', message: 'must be in the future' }]);
    const empty = await app.inject({ method: 'POST', url: '/api/keys', payload: { name: '   ' } });
    expect(empty.json().error.details).toEqual([{ path: '/name', message: 'must not be empty' }]);
    const array = await app.inject({ method: 'POST', url: '/api/keys', payload: [1] });
    expect(array.statusCode).toBe(422);
    expect(array.json().error.details).toEqual([{ path: '', message: 'expected a JSON object' }]);
  });
});

describe('GET /api/keys', () => {
  it('lists keys with prefix and status, never a hash or secret', async () => {
    const a = await createKey({ name: 'a' });
    const b = await createKey({ name: 'b' });
    await store.keys.update(b.key.id, { revokedAt: NOW - 1 });
    const res = await app.inject({ method: 'GET', url: '/api/keys' });
    expect(res.statusCode).toBe(200);
    const { keys } = res.json<{ keys: Array<Record<string, unknown>> }>();
    // Both were created at the same (fixed) instant, so their order is by id: compare sorted.
    const byId = (x: unknown[], y: unknown[]) => String(x[0]).localeCompare(String(y[0]));
    expect(keys.map((k) => [k.id, k.prefix, k.status]).sort(byId)).toEqual(
      [
        [a.key.id, a.secret.slice(0, 9), 'active'],
        [b.key.id, b.secret.slice(0, 9), 'revoked'],
      ].sort(byId),
    );
    for (const s of [a.secret, b.secret]) {
      expect(res.body).not.toContain(s);
      expect(res.body).not.toContain(hashApiKey(s));
    }
    expect(keys.every((k) => !('hash' in k) && !('secret' in k))).toBe(true);
  });

  it('lists keys oldest first, the same order on every read', async () => {
    const names = ['first', 'second', 'third'];
    for (const name of names) {
      await createKey({ name });
      clock += 1000;
    }
    const read = async () =>
      (await app.inject({ method: 'GET', url: '/api/keys' })).json<{ keys: Array<{ name: string }> }>().keys;
    expect((await read()).map((k) => k.name)).toEqual(names);
    expect((await read()).map((k) => k.name)).toEqual(names);
  });

  it('shows last use recorded moments ago', async () => {
    const a = await createKey();
    index.markUsed(a.key.id, NOW - 5);
    const { keys } = (await app.inject({ method: 'GET', url: '/api/keys' })).json<{
      keys: Array<{ lastUsedAt: string }>;
    }>();
    expect(keys[0]?.lastUsedAt).toBe(new Date(NOW - 5).toISOString());
  });
});

describe('PATCH /api/keys/:id', () => {
  it('changes the given fields and answers with the updated record', async () => {
    const { key } = await createKey({ name: 'old', models: ['a'], limits: { rpm: 5 } });
    const res = await app.inject({
      method: 'PATCH',
      url: `/api/keys/${key.id}`,
      payload: { name: 'new', models: [], expiresAt: '2031-01-01', note: 'n', limits: { tpm: 1000, rpm: null } },
    });
    expect(res.statusCode).toBe(200);
    expect(res.json().key).toMatchObject({
      id: key.id,
      name: 'new',
      models: [],
      expiresAt: '2031-01-01T00:00:00.000Z',
      note: 'n',
      limits: { rpm: null, tpm: 1000, concurrent: null },
      status: 'active',
    });
  });

  it("sets, changes and clears a key's budget, and refuses a bad one with every problem named", async () => {
    const { key } = await createKey({ name: 'kids', budget: { requests: 50, gpuSeconds: 7200 } });
    const changed = await app.inject({
      method: 'PATCH',
      url: `/api/keys/${key.id}`,
      payload: { budget: { tokens: 200000, gpuSeconds: null, period: 'month' } },
    });
    expect(changed.statusCode).toBe(200);
    expect(changed.json().key.budget).toEqual({ tokens: 200000, requests: 50, gpuSeconds: null, period: 'month' });
    expect((await store.keys.get(key.id))?.budget).toEqual({
      tokens: 200000,
      requests: 50,
      gpuSeconds: null,
      period: 'month',
    });
    const cleared = await app.inject({ method: 'PATCH', url: `/api/keys/${key.id}`, payload: { budget: null } });
    expect(cleared.json().key.budget).toEqual({ tokens: null, requests: null, gpuSeconds: null, period: 'month' });
    const refused = await app.inject({
      method: 'PATCH',
      url: `/api/keys/${key.id}`,
      payload: { budget: { tokens: 0, requests: 1.5, period: 'year', dollars: 3 } },
    });
    expect(refused.statusCode).toBe(422);
    expect(refused.json().error.details).toEqual([
      { path: '/budget/dollars', message: 'unknown field; expected one of tokens, requests, gpuSeconds, period' },
      { path: '/budget/tokens', message: 'must be a whole number from 1 to 1000000000000, or null for no budget' },
      { path: '/budget/requests', message: 'must be a whole number from 1 to 1000000000000, or null for no budget' },
      { path: '/budget/period', message: 'must be one of day, week, month' },
    ]);
  });

  it("sets and changes a key's queue priority, and keeps it through a reload", async () => {
    const { key } = await createKey({ name: 'ci', priority: -3 });
    expect(key.priority).toBe(-3);
    const res = await app.inject({ method: 'PATCH', url: `/api/keys/${key.id}`, payload: { priority: 7 } });
    expect(res.statusCode).toBe(200);
    expect(res.json().key.priority).toBe(7);
    expect((await store.keys.get(key.id))?.priority).toBe(7);
    const refused = await app.inject({ method: 'PATCH', url: `/api/keys/${key.id}`, payload: { priority: 2.5 } });
    expect(refused.statusCode).toBe(422);
    expect(refused.json().error.details).toEqual([
      { path: '/priority', message: 'must be a whole number from -10 to 10 (higher goes first)' },
    ]);
  });

  it('gives a key the manage scope only when asked, changes it, and refuses anything but a boolean', async () => {
    const { key: plain } = await createKey({ name: 'plain' });
    expect((plain as unknown as { manage: boolean }).manage).toBe(false);
    const { key } = await createKey({ name: 'manager', manage: true });
    expect((await store.keys.get(key.id))?.manage).toBe(true);
    const res = await app.inject({ method: 'PATCH', url: `/api/keys/${key.id}`, payload: { manage: false } });
    expect(res.json().key.manage).toBe(false);
    expect((await store.keys.get(key.id))?.manage).toBe(false);
    const refused = await app.inject({ method: 'PATCH', url: `/api/keys/${key.id}`, payload: { manage: 'yes' } });
    expect(refused.statusCode).toBe(422);
    expect(refused.json().error.details).toEqual([{ path: '/manage', message: 'must be true or false' }]);
  });

  it('revokes a key at once for clients, and keeps the first revocation time', async () => {
    const { key, secret } = await createKey();
    const first = await app.inject({ method: 'PATCH', url: `/api/keys/${key.id}`, payload: { revoked: true } });
    expect(first.json().key).toMatchObject({ status: 'revoked', revokedAt: '2030-01-01T12:00:00.000Z' });
    expect(authenticateClient({ 'x-api-key': secret }, index, NOW)).toEqual({ error: 'revoked_api_key' });
    await store.keys.update(key.id, { revokedAt: NOW - 1000 });
    const again = await app.inject({ method: 'PATCH', url: `/api/keys/${key.id}`, payload: { revoked: true } });
    expect(again.json().key.revokedAt).toBe(new Date(NOW - 1000).toISOString());
  });

  it('refuses to reinstate a revoked key and refuses an empty patch', async () => {
    const { key } = await createKey();
    const reinstate = await app.inject({ method: 'PATCH', url: `/api/keys/${key.id}`, payload: { revoked: false } });
    expect(reinstate.statusCode).toBe(422);
    expect(reinstate.json().error.details).toEqual([
      { path: '/revoked', message: 'only true is accepted: a revoked key cannot be reinstated; create a new one' },
    ]);
    const empty = await app.inject({ method: 'PATCH', url: `/api/keys/${key.id}`, payload: {} });
    expect(empty.json().error.details).toEqual([{ path: '', message: 'nothing to change' }]);
  });

  it('answers not_found for an unknown id', async () => {
    const res = await app.inject({ method: 'PATCH', url: '/api/keys/key_nope', payload: { name: 'x' } });
    expect(res.statusCode).toBe(404);
    expect(res.json()).toEqual({ error: { code: 'not_found', message: 'No API key with id "key_nope".' } });
  });
});

describe('DELETE /api/keys/:id', () => {
  it('deletes a key that is not the last and reports how many remain', async () => {
    const a = await createKey({ name: 'a' });
    await createKey({ name: 'b' });
    const res = await app.inject({ method: 'DELETE', url: `/api/keys/${a.key.id}` });
    expect(res.statusCode).toBe(200);
    expect(res.json()).toEqual({ deleted: true, remaining: 1 });
    expect(index.verify(a.secret)).toBeUndefined();
  });

  it('refuses with 409 to delete the last key without confirmation, since that reopens the API', async () => {
    const { key } = await createKey();
    const res = await app.inject({ method: 'DELETE', url: `/api/keys/${key.id}` });
    expect(res.statusCode).toBe(409);
    const body = res.json();
    expect(body.error.code).toBe('conflict');
    expect(body.error.message).toContain('last API key');
    expect(body.error.message).toContain('?confirm=last');
    expect(await store.keys.count()).toBe(1);
    expect(index.hasAnyKeys()).toBe(true);
  });

  it.each([
    ['?confirm=last', { url: '?confirm=last', headers: {} }],
    ['x-confirm: last', { url: '', headers: { 'x-confirm': 'last' } }],
  ])('deletes the last key when confirmed with %s and warns the API is now open', async (_, how) => {
    const { key } = await createKey();
    const res = await app.inject({ method: 'DELETE', url: `/api/keys/${key.id}${how.url}`, headers: how.headers });
    expect(res.statusCode).toBe(200);
    expect(res.json()).toEqual({
      deleted: true,
      remaining: 0,
      warning: expect.stringContaining('the API is now open'),
    });
    expect(index.hasAnyKeys()).toBe(false);
    expect(authenticateClient({}, index, NOW)).toEqual({ mode: 'open' });
  });

  it('counts revoked keys as keys: deleting the last active one does not reopen the API', async () => {
    const a = await createKey({ name: 'a' });
    const b = await createKey({ name: 'b' });
    await app.inject({ method: 'PATCH', url: `/api/keys/${b.key.id}`, payload: { revoked: true } });
    const res = await app.inject({ method: 'DELETE', url: `/api/keys/${a.key.id}` });
    expect(res.json()).toEqual({ deleted: true, remaining: 1 });
    expect(authenticateClient({}, index, NOW)).toEqual({ error: 'missing_api_key' });
  });

  it('answers not_found for an unknown id', async () => {
    const res = await app.inject({ method: 'DELETE', url: '/api/keys/key_nope?confirm=last' });
    expect(res.statusCode).toBe(404);
    expect(res.json().error.code).toBe('not_found');
  });
});
