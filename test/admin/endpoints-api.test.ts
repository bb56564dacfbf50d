/**
 * `GET /api/endpoints` through the real route table, and the `GATEHOUSE_PUBLIC_URL` setting
 * behind it.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadSettings } from '../../src/settings/index.js';
import { DEMO_CONFIG, startSimulator, type Simulator } from '../fakes/llama-swap/index.js';
import { startTestGateway, type TestGateway } from '../helpers/gateway.js';
import { json, rawRequest } from '../helpers/http.js';

const ADMIN = 'endpoints-admin-token';
let sim: Simulator;
let gateway: TestGateway;

beforeAll(async () => {
  sim = await startSimulator({ config: DEMO_CONFIG });
  gateway = await startTestGateway(
    sim.url,
    { adminToken: ADMIN, publicUrl: 'https://llm.example.com/gatehouse' },
    {},
    { withStore: true },
  );
});
afterAll(async () => {
  await gateway.close();
  await sim.close();
});

const api = (method: string, path: string, body?: unknown) =>
  rawRequest(`${gateway.url}${path}`, {
    method,
    headers: {
      authorization: `Bearer ${ADMIN}`,
      ...(body === undefined ? {} : { 'content-type': 'application/json' }),
    },
    body: body === undefined ? undefined : JSON.stringify(body),
  });

describe('GET /api/endpoints', () => {
  it('needs an admin session or token', async () => {
    const res = await rawRequest(`${gateway.url}/api/endpoints`);
    expect(res.status).toBe(401);
    expect(json(res.body)).toMatchObject({ error: { code: 'admin_unauthorized' } });
  });

  it('reports the public URL and open mode while no key exists, then closed once one is created', async () => {
    const before = await api('GET', '/api/endpoints');
    expect(before.status).toBe(200);
    expect(before.headers['cache-control']).toBe('no-store');
    expect(json(before.body)).toEqual({ publicUrl: 'https://llm.example.com/gatehouse', apiOpen: true, ollama: null });

    expect((await api('POST', '/api/keys', { name: 'Open WebUI' })).status).toBe(201);
    expect(json((await api('GET', '/api/endpoints')).body)).toEqual({
      publicUrl: 'https://llm.example.com/gatehouse',
      apiOpen: false,
      ollama: null,
    });
  });

  it('answers publicUrl null when GATEHOUSE_PUBLIC_URL is unset', async () => {
    const plain = await startTestGateway(sim.url, { adminToken: ADMIN }, {}, { withStore: true });
    try {
      const res = await rawRequest(`${plain.url}/api/endpoints`, { headers: { authorization: `Bearer ${ADMIN}` } });
      expect(json(res.body)).toEqual({ publicUrl: null, apiOpen: true, ollama: null });
    } finally {
      await plain.close();
    }
  });

  it("reports the Ollama door's port, and whether keyless calls act as a key, when the door is on", async () => {
    const door = (ollamaKey?: string) =>
      startTestGateway(
        sim.url,
        { adminToken: ADMIN, ollamaListen: { host: '0.0.0.0', port: 11500 }, ...(ollamaKey ? { ollamaKey } : {}) },
        {},
        { withStore: true },
      );
    for (const [ollamaKey, keyless] of [
      [undefined, false],
      ['home-assistant', true],
    ] as const) {
      const gw = await door(ollamaKey);
      try {
        const res = await rawRequest(`${gw.url}/api/endpoints`, { headers: { authorization: `Bearer ${ADMIN}` } });
        expect(json(res.body)).toEqual({ publicUrl: null, apiOpen: true, ollama: { port: 11500, keyless } });
      } finally {
        await gw.close();
      }
    }
  });
});

describe('GATEHOUSE_PUBLIC_URL', () => {
  const publicUrl = (value: string) => loadSettings({ GATEHOUSE_PUBLIC_URL: value }).publicUrl;

  it('keeps scheme, host, port and a path prefix, without trailing slashes', () => {
    expect(publicUrl('http://192.168.1.5:3000')).toBe('http://192.168.1.5:3000');
    expect(publicUrl('https://LLM.example.com/')).toBe('https://llm.example.com');
    expect(publicUrl('https://example.com/llm//')).toBe('https://example.com/llm');
    expect(publicUrl('')).toBeUndefined();
    expect(loadSettings({}).publicUrl).toBeUndefined();
  });

  it.each([
    ['ftp://example.com', 'only http:// and https://'],
    ['example.com:3000', 'only http:// and https://'],
    ['not a url', 'is not a URL'],
    ['https://user:pw@example.com', 'must not contain a user or password'],
    ['https://example.com/?x=1', 'must not have a query or fragment'],
    ['https://example.com/#top', 'must not have a query or fragment'],
    ['http://example.com:3000/v1', 'ends in /v1'],
    ['http://example.com/llm/v1/', 'ends in /v1'],
  ])('refuses %s', (value, message) => {
    expect(() => publicUrl(value)).toThrowError(message);
  });
});
