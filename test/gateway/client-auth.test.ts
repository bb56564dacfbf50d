import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startRecordingUpstream, type RecordingUpstream } from '../fakes/recording-upstream.js';
import { startTestGateway, type TestGateway } from '../helpers/gateway.js';
import { json, rawRequest } from '../helpers/http.js';

const ADMIN = 'admin-token-for-tests';
let upstream: RecordingUpstream;
let gateway: TestGateway;
/** How far the gateway's clock runs ahead of the real one (key expiry is checked against it). */
let clockAheadMs = 0;

const MODELS = [
  { id: 'llama-3.2-3b', object: 'model', created: 1_760_000_000, owned_by: 'llama-swap', name: 'Llama 3.2 3B' },
  { id: 'qwen3-8b', object: 'model', created: 1_760_000_000, owned_by: 'llama-swap' },
];

beforeAll(async () => {
  upstream = await startRecordingUpstream((_req, res) => {
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end('{"ok":true}');
  });
  gateway = await startTestGateway(
    upstream.url,
    { adminToken: ADMIN },
    { listModels: async () => structuredClone(MODELS), now: () => Date.now() + clockAheadMs },
    { withStore: true },
  );
});
afterAll(async () => {
  await gateway.close();
  await upstream.close();
});

const admin = (method: string, path: string, body?: unknown) =>
  rawRequest(`${gateway.url}${path}`, {
    method,
    headers: {
      authorization: `Bearer ${ADMIN}`,
      ...(body === undefined ? {} : { 'content-type': 'application/json' }),
    },
    body: body === undefined ? undefined : JSON.stringify(body),
  });

async function createKey(body: Record<string, unknown>): Promise<{ id: string; secret: string }> {
  const res = await admin('POST', '/api/keys', body);
  expect(res.status).toBe(201);
  const parsed = json(res.body) as { key: { id: string }; secret: string };
  return { id: parsed.key.id, secret: parsed.secret };
}

const chat = (headers: Record<string, string>, path = '/v1/chat/completions', model = 'qwen3-8b') =>
  rawRequest(`${gateway.url}${path}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...headers },
    body: JSON.stringify({ model, messages: [] }),
  });

describe('client authentication, from open mode to protected', () => {
  let key: { id: string; secret: string };

  it('accepts calls without a key while no key exists, and ignores any key sent', async () => {
    expect((await chat({})).status).toBe(200);
    expect((await chat({ authorization: 'Bearer sk-whatever' })).status).toBe(200);
  });

  it('requires a key as soon as the first key exists: 401 without one, with a Bearer challenge', async () => {
    key = await createKey({ name: 'laptop' });
    expect(key.secret).toMatch(/^sk-[0-9A-Za-z]{43}$/);
    const res = await chat({});
    expect(res.status).toBe(401);
    expect(res.headers['www-authenticate']).toBe('Bearer');
    expect(json(res.body)).toEqual({
      error: {
        message: expect.stringContaining('Missing API key'),
        type: 'authentication_error',
        param: null,
        code: 'missing_api_key',
      },
    });
  });

  it('rejects an unknown key with 401 in the OpenAI shape and in the Anthropic shape on /v1/messages', async () => {
    const openai = await chat({ authorization: 'Bearer sk-not-a-real-key' });
    expect(openai.status).toBe(401);
    expect(json(openai.body)).toMatchObject({ error: { code: 'invalid_api_key', type: 'authentication_error' } });
    const anthropic = await chat({ 'x-api-key': 'sk-not-a-real-key' }, '/v1/messages');
    expect(anthropic.status).toBe(401);
    expect(json(anthropic.body)).toEqual({
      type: 'error',
      error: { type: 'authentication_error', message: 'Invalid API key.' },
    });
  });

  it('accepts the key in each header form clients use', async () => {
    expect((await chat({ authorization: `Bearer ${key.secret}` })).status).toBe(200);
    expect((await chat({ 'x-api-key': key.secret }, '/v1/messages?beta=true')).status).toBe(200);
    expect((await chat({ authorization: key.secret })).status).toBe(200);
    expect((await chat({ 'api-key': key.secret })).status).toBe(200);
  });

  it('accepts a valid x-api-key sent alongside a foreign Bearer token', async () => {
    expect((await chat({ authorization: 'Bearer some-other-service-token', 'x-api-key': key.secret })).status).toBe(
      200,
    );
  });

  it('never forwards the client key upstream and never logs it', async () => {
    await chat({ authorization: `Bearer ${key.secret}` });
    const seen = upstream.received.at(-1)!;
    expect(JSON.stringify(seen.headers)).not.toContain(key.secret);
    expect(gateway.logText()).not.toContain(key.secret);
    const line = gateway
      .logLines()
      .filter((l) => l.msg === 'request' && l.path === '/v1/chat/completions')
      .at(-1);
    expect(line?.key).toBe('laptop');
  });

  it('does not let a client key open the admin API', async () => {
    const res = await rawRequest(`${gateway.url}/api/keys`, { headers: { authorization: `Bearer ${key.secret}` } });
    expect(res.status).toBe(401);
    expect(json(res.body)).toMatchObject({ error: { code: 'admin_unauthorized' } });
  });

  it('refuses a revoked key with its own message, and stays protected when every key is revoked', async () => {
    const patch = await admin('PATCH', `/api/keys/${key.id}`, { revoked: true });
    expect(patch.status).toBe(200);
    const res = await chat({ authorization: `Bearer ${key.secret}` });
    expect(res.status).toBe(401);
    expect(json(res.body)).toMatchObject({
      error: { code: 'revoked_api_key', message: 'This API key has been revoked.' },
    });
    expect((await chat({})).status).toBe(401);
  });

  it('refuses an expired key with its own message', async () => {
    const soon = await createKey({ name: 'short-lived', expiresAt: new Date(Date.now() + 60_000).toISOString() });
    expect((await chat({ authorization: `Bearer ${soon.secret}` })).status).toBe(200);
    clockAheadMs = 60_001;
    try {
      const res = await chat({ authorization: `Bearer ${soon.secret}` }, '/v1/messages');
      expect(res.status).toBe(401);
      expect(json(res.body)).toEqual({
        type: 'error',
        error: { type: 'authentication_error', message: 'This API key has expired.' },
      });
    } finally {
      clockAheadMs = 0;
    }
  });

  it('reopens the API only when every key is deleted, after a warning for the last one', async () => {
    const list = json((await admin('GET', '/api/keys')).body) as { keys: Array<{ id: string }> };
    for (const [i, k] of list.keys.entries()) {
      const last = i === list.keys.length - 1;
      const res = await admin('DELETE', `/api/keys/${k.id}`);
      if (!last) {
        expect(res.status).toBe(200);
        continue;
      }
      expect(res.status).toBe(409);
      expect(json(res.body)).toMatchObject({ error: { code: 'conflict', message: expect.stringMatching(/open/i) } });
      expect((await chat({})).status).toBe(401);
      const confirmed = await admin('DELETE', `/api/keys/${k.id}?confirm=last`);
      expect(confirmed.status).toBe(200);
    }
    expect((await chat({})).status).toBe(200);
  });
});

describe('model allow-lists', () => {
  let restricted: { id: string; secret: string };
  beforeAll(async () => {
    restricted = await createKey({ name: 'kitchen-tablet', models: ['llama-3.2-3b'] });
  });

  it('refuses a model outside the allow-list with 403 naming it, for a JSON body', async () => {
    const res = await chat({ authorization: `Bearer ${restricted.secret}` }, '/v1/chat/completions', 'qwen3-8b');
    expect(res.status).toBe(403);
    expect(json(res.body)).toMatchObject({
      error: { code: 'model_not_allowed', param: 'model', message: expect.stringContaining('"qwen3-8b"') },
    });
    const ok = await chat({ authorization: `Bearer ${restricted.secret}` }, '/v1/chat/completions', 'llama-3.2-3b');
    expect(ok.status).toBe(200);
  });

  it('refuses it in the Anthropic shape on /v1/messages', async () => {
    const res = await chat({ 'x-api-key': restricted.secret }, '/v1/messages', 'qwen3-8b');
    expect(res.status).toBe(403);
    expect(json(res.body)).toEqual({
      type: 'error',
      error: { type: 'permission_error', message: expect.stringContaining('qwen3-8b') },
    });
  });

  it('refuses it for a multipart form and for ?model=', async () => {
    const form = new FormData();
    form.append('file', new Blob([Buffer.alloc(1000)]), 'a.wav');
    form.append('model', 'qwen3-8b');
    const multipart = await fetch(`${gateway.url}/v1/audio/transcriptions`, {
      method: 'POST',
      body: form,
      headers: { authorization: `Bearer ${restricted.secret}` },
    });
    expect(multipart.status).toBe(403);
    expect(await multipart.json()).toMatchObject({ error: { code: 'model_not_allowed' } });

    const query = await rawRequest(`${gateway.url}/v1/audio/voices?model=qwen3-8b`, {
      headers: { authorization: `Bearer ${restricted.secret}` },
    });
    expect(query.status).toBe(403);
    const allowed = await rawRequest(`${gateway.url}/v1/audio/voices?model=llama-3.2-3b`, {
      headers: { authorization: `Bearer ${restricted.secret}` },
    });
    expect(allowed.status).toBe(200);
  });

  it('lists only the allowed models on /v1/models, in the OpenAI shape', async () => {
    const res = await rawRequest(`${gateway.url}/v1/models`, {
      headers: { authorization: `Bearer ${restricted.secret}` },
    });
    expect(res.status).toBe(200);
    expect(json(res.body)).toEqual({ object: 'list', data: [MODELS[0]] });
  });

  it('answers /v1/models in the Anthropic list shape when anthropic-version is sent', async () => {
    const res = await rawRequest(`${gateway.url}/v1/models`, {
      headers: { 'x-api-key': restricted.secret, 'anthropic-version': '2023-06-01' },
    });
    expect(json(res.body)).toEqual({
      data: [
        {
          type: 'model',
          id: 'llama-3.2-3b',
          display_name: 'Llama 3.2 3B',
          created_at: new Date(1_760_000_000_000).toISOString(),
        },
      ],
      has_more: false,
      first_id: 'llama-3.2-3b',
      last_id: 'llama-3.2-3b',
    });
  });
});
