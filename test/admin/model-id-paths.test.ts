/**
 * Model ids that would name another llama-swap route once it unescapes and cleans the path
 * (`..`, `%2e%2e`, an encoded `/`) are refused in the admin shape before anything reaches
 * llama-swap, on every route that puts an id in an upstream URL; a redirect is never a load.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DEMO_CONFIG, startSimulator, type Simulator } from '../fakes/llama-swap/index.js';
import { startTestGateway, type TestGateway } from '../helpers/gateway.js';
import { json, rawRequest } from '../helpers/http.js';

const ADMIN = 'model-id-admin-token';
let sim: Simulator;
let gateway: TestGateway;

beforeAll(async () => {
  const models = DEMO_CONFIG.models as Record<string, unknown>;
  const config = { ...DEMO_CONFIG, models: { ...models, 'org/model a': { cmd: 'llama-server --port ${PORT}' } } };
  sim = await startSimulator({ config });
  gateway = await startTestGateway(sim.url, { adminToken: ADMIN }, {}, { withStore: true });
});
afterAll(async () => {
  await gateway.close();
  await sim.close();
});

const api = (method: string, path: string) =>
  rawRequest(`${gateway.url}${path}`, {
    method,
    headers: { authorization: `Bearer ${ADMIN}`, 'content-type': 'application/json' },
    body: method === 'POST' ? '{}' : undefined,
  });

/** What llama-swap received after `before`, other than the live view's own reads. */
const reachedSince = (before: number) =>
  sim.received
    .slice(before)
    .map((r) => `${r.method} ${r.path}`)
    .filter((r) => !/^GET \/(running|v1\/models|api\/events|api\/version|api\/profiles|health)\b/.test(r));

describe('model ids in upstream paths', () => {
  const attacks = [
    '..%2Funload',
    '..%2F..%2Frunning',
    '%2e%2e%2F%2e%2e%2Frunning',
    'qwen3-8b%2F..%2F..%2Fapi%2Fmodels%2Funload',
    '%2Fqwen3-8b',
    'qwen3-8b%2F',
    'org%2F%2Fmodel',
    'qwen3-8b%5C..%5Crunning',
    'qwen3-8b%00',
  ];

  it('never lets an id with ".." unload every model: 400 in the admin shape, and the loaded model stays', async () => {
    await sim.load('qwen3-8b');
    const before = sim.received.length;
    const res = await api('POST', '/api/models/..%2Funload/unload');
    expect(res.status).toBe(400);
    expect(json(res.body)).toMatchObject({
      error: { code: 'bad_request', message: expect.any(String), details: [{ path: '/id' }] },
    });
    expect(reachedSince(before)).toEqual([]);
    expect(sim.state('qwen3-8b')).toBe('ready');
    await sim.unload();
  });

  for (const id of attacks) {
    for (const action of ['load', 'unload']) {
      it(`refuses POST /api/models/${id}/${action} with 400 and sends llama-swap nothing`, async () => {
        const before = sim.received.length;
        const res = await api('POST', `/api/models/${id}/${action}`);
        expect(res.status).toBe(400);
        expect(json(res.body)).toMatchObject({ error: { code: 'bad_request', details: [{ path: '/id' }] } });
        expect(reachedSince(before)).toEqual([]);
      });
    }
  }

  // The router resolves dot segments before routing: these name no admin route at all.
  for (const id of ['..', '%2E%2E', '.']) {
    it(`answers POST /api/models/${id}/unload with 404 in the admin shape and sends llama-swap nothing`, async () => {
      const before = sim.received.length;
      const res = await api('POST', `/api/models/${id}/unload`);
      expect(res.status).toBe(404);
      expect(json(res.body)).toMatchObject({ error: { code: 'not_found' } });
      expect(reachedSince(before)).toEqual([]);
    });
  }

  it('refuses a model log stream whose id climbs out of the log route, before asking llama-swap', async () => {
    const before = sim.received.length;
    const res = await api('GET', '/api/logs/stream?source=model:..%2F..%2Frunning');
    expect(res.status).toBe(400);
    expect(json(res.body)).toMatchObject({ error: { code: 'bad_request', details: [{ path: '/source' }] } });
    expect(reachedSince(before)).toEqual([]);
  });

  it('still loads and unloads an id with a slash and a space, each segment encoded', async () => {
    const before = sim.received.length;
    expect((await api('POST', '/api/models/org%2Fmodel%20a/load')).status).toBe(202);
    await sim.waitForState('org/model a', 'ready');
    expect((await api('POST', '/api/models/org%2Fmodel%20a/unload')).status).toBe(200);
    expect(reachedSince(before)).toEqual(['GET /upstream/org/model%20a/', 'POST /api/models/unload/org/model%20a']);
  });
});
