import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startRecordingUpstream, type RecordingUpstream } from '../fakes/recording-upstream.js';
import { startTestGateway, type TestGateway } from '../helpers/gateway.js';
import { json, rawRequest } from '../helpers/http.js';

const ADMIN = 'admin-token-for-tests';
const APP = 'https://chat.example.com';
let upstream: RecordingUpstream;
let gateway: TestGateway;
let secret: string;

beforeAll(async () => {
  upstream = await startRecordingUpstream((_req, res) => {
    // llama-server echoes any Origin: the gateway's policy must win over it.
    res.writeHead(200, { 'content-type': 'application/json', 'access-control-allow-origin': 'https://evil.example' });
    res.end('{"ok":true}');
  });
  gateway = await startTestGateway(upstream.url, { adminToken: ADMIN }, {}, { withStore: true });
  const created = await rawRequest(`${gateway.url}/api/keys`, {
    method: 'POST',
    headers: { authorization: `Bearer ${ADMIN}`, 'content-type': 'application/json' },
    body: JSON.stringify({ name: 'web-app' }),
  });
  secret = (json(created.body) as { secret: string }).secret;
});
afterAll(async () => {
  await gateway.close();
  await upstream.close();
});

/** What a browser sends before a cross-origin POST with a key and the OpenAI SDK's headers. */
const preflight = (
  url: string,
  origin = APP,
  requestHeaders = 'authorization, content-type, x-stainless-os, x-stainless-retry-count',
) =>
  rawRequest(`${url}/v1/chat/completions`, {
    method: 'OPTIONS',
    headers: { origin, 'access-control-request-method': 'POST', 'access-control-request-headers': requestHeaders },
  });

describe('CORS on /v1 (GATEHOUSE_CORS_ORIGINS=*, the default)', () => {
  it('answers a preflight 204 without a key, before auth, allowing the headers asked for', async () => {
    const before = upstream.received.length;
    const res = await preflight(gateway.url);
    expect(res.status).toBe(204);
    expect(res.body.length).toBe(0);
    expect(res.headers['access-control-allow-origin']).toBe('*');
    expect(res.headers['access-control-allow-methods']).toContain('POST');
    expect(res.headers['access-control-allow-headers']).toBe(
      'authorization, content-type, x-stainless-os, x-stainless-retry-count',
    );
    expect(Number(res.headers['access-control-max-age'])).toBeGreaterThan(0);
    expect(res.headers['access-control-allow-credentials']).toBeUndefined();
    expect(upstream.received.length).toBe(before);
  });

  it('allows the key and Anthropic headers when a preflight names none, and never echoes a malformed list', async () => {
    const expected = ['authorization', 'x-api-key', 'api-key', 'content-type', 'anthropic-version', 'anthropic-beta'];
    const bare = await rawRequest(`${gateway.url}/v1/messages`, {
      method: 'OPTIONS',
      headers: { origin: APP, 'access-control-request-method': 'POST' },
    });
    expect(bare.status).toBe(204);
    expect((bare.headers['access-control-allow-headers'] ?? '').split(/,\s*/)).toEqual(
      expect.arrayContaining(expected),
    );
    const odd = await preflight(gateway.url, APP, 'x-api-key, <script>');
    expect((odd.headers['access-control-allow-headers'] ?? '').split(/,\s*/)).toEqual(expect.arrayContaining(expected));
    expect(odd.headers['access-control-allow-headers']).not.toContain('<');
  });

  it("lets a page read a relayed answer and its request id, whatever llama-swap's own CORS headers say", async () => {
    const res = await rawRequest(`${gateway.url}/v1/chat/completions`, {
      method: 'POST',
      headers: { origin: APP, authorization: `Bearer ${secret}`, 'content-type': 'application/json' },
      body: '{"model":"m"}',
    });
    expect(res.status).toBe(200);
    expect(res.headers['access-control-allow-origin']).toBe('*');
    expect(res.headers['access-control-expose-headers']).toBe('x-request-id, retry-after');
    expect(res.headers['x-request-id']).toBeTruthy();
  });

  it("lets a page read the gateway's own errors (a 401 without a key)", async () => {
    const res = await rawRequest(`${gateway.url}/v1/chat/completions`, {
      method: 'POST',
      headers: { origin: APP, 'content-type': 'application/json' },
      body: '{"model":"m"}',
    });
    expect(res.status).toBe(401);
    expect(res.headers['access-control-allow-origin']).toBe('*');
    expect(json(res.body)).toMatchObject({ error: { code: 'missing_api_key' } });
  });

  it('adds nothing to calls without an Origin (SDKs, curl)', async () => {
    const res = await rawRequest(`${gateway.url}/v1/chat/completions`, {
      method: 'POST',
      headers: { authorization: `Bearer ${secret}`, 'content-type': 'application/json' },
      body: '{"model":"m"}',
    });
    expect(res.status).toBe(200);
    expect(Object.keys(res.headers).filter((h) => h.startsWith('access-control-'))).toEqual([]);
  });
});

describe('CORS with a list of origins', () => {
  let listed: TestGateway;
  beforeAll(async () => {
    listed = await startTestGateway(upstream.url, { corsOrigins: [APP, 'http://localhost:5173'] });
  });
  afterAll(() => listed.close());

  it('echoes a listed Origin, with Vary: Origin', async () => {
    const res = await preflight(listed.url, 'http://localhost:5173');
    expect(res.status).toBe(204);
    expect(res.headers['access-control-allow-origin']).toBe('http://localhost:5173');
    expect(res.headers.vary).toBe('Origin');
    const call = await rawRequest(`${listed.url}/v1/chat/completions`, {
      method: 'POST',
      headers: { origin: APP, 'content-type': 'application/json' },
      body: '{"model":"m"}',
    });
    expect(call.headers['access-control-allow-origin']).toBe(APP);
  });

  it('gives an unlisted Origin no allow header, even when llama-swap sends one', async () => {
    const pre = await preflight(listed.url, 'https://evil.example');
    expect(pre.status).toBe(204);
    expect(pre.headers['access-control-allow-origin']).toBeUndefined();
    const call = await rawRequest(`${listed.url}/v1/chat/completions`, {
      method: 'POST',
      headers: { origin: 'https://evil.example', 'content-type': 'application/json' },
      body: '{"model":"m"}',
    });
    expect(call.status).toBe(200);
    expect(call.headers['access-control-allow-origin']).toBeUndefined();
  });
});

describe('the admin API never answers another origin', () => {
  it('gives a preflight to /api no CORS headers', async () => {
    const res = await rawRequest(`${gateway.url}/api/keys`, {
      method: 'OPTIONS',
      headers: {
        origin: APP,
        'access-control-request-method': 'POST',
        'access-control-request-headers': 'content-type',
      },
    });
    expect(Object.keys(res.headers).filter((h) => h.startsWith('access-control-'))).toEqual([]);
  });

  it('still refuses a cross-site change with 403, without CORS headers', async () => {
    const res = await rawRequest(`${gateway.url}/api/keys`, {
      method: 'POST',
      headers: { origin: APP, authorization: `Bearer ${ADMIN}`, 'content-type': 'application/json' },
      body: JSON.stringify({ name: 'from-elsewhere' }),
    });
    expect(res.status).toBe(403);
    expect(json(res.body)).toMatchObject({ error: { code: 'csrf_rejected' } });
    expect(Object.keys(res.headers).filter((h) => h.startsWith('access-control-'))).toEqual([]);
  });
});
