/**
 * What clients (SDKs, Claude Code, scripts) see of the errors the gateway writes on `/v1`:
 * retry hints, the shape for the API they speak, llama-swap's codes, nothing about where
 * llama-swap runs, and the bytes counted in the request log.
 */
import Anthropic from '@anthropic-ai/sdk';
import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startRecordingUpstream, type RecordingUpstream } from '../fakes/recording-upstream.js';
import { startTestGateway, type TestGateway } from '../helpers/gateway.js';
import { json, rawRequest } from '../helpers/http.js';
import { createKey, recordFor, requestId, startUsageGateway } from '../usage/usage-helpers.js';

let upstream: RecordingUpstream;
let gateway: TestGateway;
let key: { id: string; secret: string };
let restricted: { id: string; secret: string };
let listFails = false;

beforeAll(async () => {
  upstream = await startRecordingUpstream((_req, res) => {
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end('{"ok":true}');
  });
  // A short queue time: llama-swap's 429 reaches the client instead of being tried again.
  gateway = await startUsageGateway(
    upstream.url,
    { queueTimeoutMs: 500 },
    {
      listModels: async () => {
        if (listFails)
          throw Object.assign(new Error('llama-swap models failed: ECONNREFUSED'), { kind: 'unreachable' });
        return [{ id: 'qwen', object: 'model', created: 1_760_000_000 }];
      },
    },
  );
  key = await createKey(gateway, { name: 'errors' });
  restricted = await createKey(gateway, { name: 'qwen-only', models: ['qwen'] });
});
afterAll(async () => {
  await gateway.close();
  await upstream.close();
});

const post = (path: string, headers: Record<string, string>, body = '{"model":"m"}') =>
  rawRequest(`${gateway.url}${path}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...headers },
    body,
  });

describe('retry hints', () => {
  it('tells clients not to retry a 401 (x-should-retry: false), in both wire formats', async () => {
    const openai = await post('/v1/chat/completions', {});
    expect(openai.status).toBe(401);
    expect(openai.headers['x-should-retry']).toBe('false');
    const anthropic = await post('/v1/messages', { 'x-api-key': 'sk-not-a-key' });
    expect(anthropic.status).toBe(401);
    expect(anthropic.headers['x-should-retry']).toBe('false');
  });

  it('tells clients not to retry a 403 for a model the key may not use', async () => {
    const res = await post(
      '/v1/chat/completions',
      { authorization: `Bearer ${restricted.secret}` },
      '{"model":"llama"}',
    );
    expect(res.status).toBe(403);
    expect(res.headers['x-should-retry']).toBe('false');
    expect(json(res.body)).toMatchObject({ error: { code: 'model_not_allowed' } });
  });

  it('leaves retryable errors without the hint', async () => {
    upstream.handle((_req, res) => {
      res.writeHead(503, { 'content-type': 'application/json' });
      res.end(
        '{"src":"llama-swap","error":{"message":"shutting ' +
          'down","type":"server_error","param":null,"code":"service_unavailable"}}',
      );
    });
    const res = await post('/v1/chat/completions', { authorization: `Bearer ${key.secret}` });
    expect(res.status).toBe(503);
    expect(res.headers['x-should-retry']).toBeUndefined();
  });
});

describe('/v1/models errors for Anthropic callers', () => {
  it('refuses a bad key on GET /v1/models in the Anthropic shape when the call carries anthropic-version', async () => {
    const client = new Anthropic({ baseURL: gateway.url, apiKey: 'sk-not-a-key', maxRetries: 0 });
    const error = await client.models.list().then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(error).toBeInstanceOf(Anthropic.AuthenticationError);
    const apiError = error as InstanceType<typeof Anthropic.AuthenticationError>;
    expect(apiError.error).toEqual({
      type: 'error',
      error: { type: 'authentication_error', message: 'Invalid API key.' },
    });
    expect(apiError.headers?.get('x-should-retry')).toBe('false');
  });

  it('answers an unreachable llama-swap on GET /v1/models in the Anthropic shape too', async () => {
    listFails = true;
    try {
      const res = await rawRequest(`${gateway.url}/v1/models`, {
        headers: { 'x-api-key': key.secret, 'anthropic-version': '2023-06-01' },
      });
      expect(res.status).toBe(502);
      expect(json(res.body)).toEqual({
        type: 'error',
        error: { type: 'api_error', message: 'llama-swap could not be reached to list models.' },
      });
    } finally {
      listFails = false;
    }
  });

  it('keeps the OpenAI shape for /v1/models without anthropic-version', async () => {
    const client = new OpenAI({ baseURL: `${gateway.url}/v1`, apiKey: 'sk-not-a-key', maxRetries: 0 });
    const error = await client.models.list().then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(error).toBeInstanceOf(OpenAI.AuthenticationError);
    expect((error as InstanceType<typeof OpenAI.AuthenticationError>).code).toBe('invalid_api_key');
  });
});

describe("llama-swap's error codes", () => {
  it("keeps the code of llama-swap's envelope (concurrency_limit) for OpenAI clients once the call's queue time is up", async () => {
    upstream.handle((_req, res) => {
      res.writeHead(429, { 'content-type': 'application/json', 'retry-after': '1' });
      res.end(
        '{"src":"llama-swap","error":{"message":"Too many ' +
          'requests","type":"rate_limit_error","param":null,"code":"concurrency_limit"}}',
      );
    });
    const client = new OpenAI({ baseURL: `${gateway.url}/v1`, apiKey: key.secret, maxRetries: 0 });
    const error = await client.chat.completions
      .create({ model: 'qwen', messages: [{ role: 'user', content: 'hi' }] })
      .then(
        () => undefined,
        (e: unknown) => e,
      );
    expect(error).toBeInstanceOf(OpenAI.RateLimitError);
    const apiError = error as InstanceType<typeof OpenAI.RateLimitError>;
    expect(apiError.code).toBe('concurrency_limit');
    expect(apiError.type).toBe('rate_limit_error');
    expect(apiError.message).toContain('Too many requests');
  });

  it("keeps the gateway's own code when llama-swap's legacy string error has none", async () => {
    upstream.handle((_req, res) => {
      res.writeHead(500, { 'content-type': 'application/json' });
      res.end('{"src":"llama-swap","error":"upstream command exited prematurely"}');
    });
    const res = await post('/v1/chat/completions', { authorization: `Bearer ${key.secret}` });
    expect(json(res.body)).toEqual({
      error: {
        message: 'upstream command exited prematurely',
        type: 'server_error',
        param: null,
        code: 'upstream_error',
      },
    });
  });
});

describe('where llama-swap runs', () => {
  it("does not name llama-swap's host and port in a 502, and logs them for the operator", async () => {
    const dead = await startTestGateway('http://127.0.0.1:1');
    try {
      const res = await rawRequest(`${dead.url}/v1/chat/completions`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: '{"model":"m"}',
      });
      expect(res.status).toBe(502);
      expect(res.body.toString()).not.toContain('127.0.0.1');
      expect(res.body.toString()).not.toContain(':1');
      expect(json(res.body)).toMatchObject({
        error: { code: 'upstream_unreachable', message: 'llama-swap could not be reached (ECONNREFUSED).' },
      });
      const logged = dead.logLines().find((l) => l.level === 40 && typeof l.req_id === 'string');
      expect(JSON.stringify(logged?.err)).toContain('127.0.0.1:1');
    } finally {
      await dead.close();
    }
  });
});

describe('bytes of errors the gateway writes', () => {
  it('counts them in the usage record', async () => {
    const id = requestId('refused');
    const res = await post('/v1/chat/completions', { 'x-request-id': id });
    expect(res.status).toBe(401);
    const record = await recordFor(gateway, id);
    expect(record.bytesOut).toBe(res.body.length);
    expect(record.bytesOut).toBeGreaterThan(0);
  });

  it('counts them in the access log line', async () => {
    const dead = await startTestGateway('http://127.0.0.1:1');
    try {
      const res = await rawRequest(`${dead.url}/v1/chat/completions`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: '{"model":"m"}',
      });
      expect(res.status).toBe(502);
      const line = await dead.waitForLog((l) => l.msg === 'request' && l.path === '/v1/chat/completions');
      expect(line).toMatchObject({ status: 502, bytes_out: res.body.length });
    } finally {
      await dead.close();
    }
  });
});
