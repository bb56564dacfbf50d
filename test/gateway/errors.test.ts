import { createHash } from 'node:crypto';
import { request } from 'node:http';
import Anthropic from '@anthropic-ai/sdk';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startRouterSimulator, type RouterSimulator } from '../fakes/llama-server-router/index.js';
import { startRecordingUpstream, type RecordingUpstream } from '../fakes/recording-upstream.js';
import { startTestGateway, type TestGateway } from '../helpers/gateway.js';
import { json, rawRequest } from '../helpers/http.js';

let upstream: RecordingUpstream;
let gateway: TestGateway;

beforeAll(async () => {
  upstream = await startRecordingUpstream();
  // A short queue time: llama-swap's 429 reaches the client instead of being tried again.
  gateway = await startTestGateway(upstream.url, { queueTimeoutMs: 500 });
});
afterAll(async () => {
  await gateway.close();
  await upstream.close();
});

const post = (path: string, body = '{"model":"m"}') =>
  rawRequest(`${gateway.url}${path}`, { method: 'POST', headers: { 'content-type': 'application/json' }, body });

describe('upstream unreachable', () => {
  it('answers 502 in the OpenAI shape, and in the Anthropic shape on /v1/messages', async () => {
    const dead = await startTestGateway('http://127.0.0.1:1');
    try {
      const openai = await rawRequest(`${dead.url}/v1/chat/completions`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: '{"model":"m"}',
      });
      expect(openai.status).toBe(502);
      expect(json(openai.body)).toEqual({
        error: {
          message: expect.stringContaining('could not be reached'),
          type: 'server_error',
          param: null,
          code: 'upstream_unreachable',
        },
      });
      const anthropic = await rawRequest(`${dead.url}/v1/messages?beta=true`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: '{"model":"m"}',
      });
      expect(anthropic.status).toBe(502);
      expect(json(anthropic.body)).toEqual({
        type: 'error',
        error: { type: 'api_error', message: expect.stringContaining('could not be reached') },
      });
    } finally {
      await dead.close();
    }
  });
});

describe("llama-swap's own errors become the caller's wire format with the same status", () => {
  it('translates the current envelope', async () => {
    upstream.handle((_req, res) => {
      res.writeHead(404, { 'content-type': 'application/json' });
      res.end(
        JSON.stringify({
          src: 'llama-swap',
          error: {
            message: 'no router for requested model',
            type: 'invalid_request_error',
            param: null,
            code: 'not_found',
          },
        }),
      );
    });
    const openai = await post('/v1/chat/completions');
    expect(openai.status).toBe(404);
    expect(json(openai.body)).toEqual({
      error: {
        message: 'no router for requested model',
        type: 'invalid_request_error',
        param: null,
        code: 'not_found',
      },
    });
    const anthropic = await post('/v1/messages');
    expect(json(anthropic.body)).toEqual({
      type: 'error',
      error: { type: 'not_found_error', message: 'no router for requested model' },
    });
  });

  it('translates the legacy string error of v250 and older', async () => {
    upstream.handle((_req, res) => {
      res.writeHead(500, { 'content-type': 'application/json' });
      res.end('{"src":"llama-swap","error":"unspecific error: upstream command exited prematurely"}');
    });
    const res = await post('/v1/messages');
    expect(res.status).toBe(500);
    expect(json(res.body)).toEqual({
      type: 'error',
      error: { type: 'api_error', message: 'unspecific error: upstream command exited prematurely' },
    });
  });

  it('keeps Retry-After on a translated 429 once the call has no queue time left', async () => {
    upstream.handle((_req, res) => {
      res.writeHead(429, { 'content-type': 'application/json', 'retry-after': '1' });
      res.end(
        '{"src":"llama-swap","error":{"message":"Too many ' +
          'requests","type":"rate_limit_error","param":null,"code":"concurrency_limit"}}',
      );
    });
    const res = await post('/v1/chat/completions');
    expect(res.status).toBe(429);
    expect(res.headers['retry-after']).toBe('1');
    expect(json(res.body)).toMatchObject({ error: { type: 'rate_limit_error', message: 'Too many requests' } });
  });

  it('turns the empty-bodied 502 of a dead model server into a proper body', async () => {
    upstream.handle((_req, res) => {
      res.writeHead(502);
      res.end();
    });
    const res = await post('/v1/chat/completions');
    expect(res.status).toBe(502);
    expect(json(res.body)).toMatchObject({ error: { code: 'upstream_bad_gateway', type: 'server_error' } });
  });

  it("turns Go's plain-text 404 and 405 into JSON, keeping Allow", async () => {
    upstream.handle((req, res) => {
      if (req.url === '/v1/nope') {
        res.writeHead(404, { 'content-type': 'text/plain; charset=utf-8' });
        res.end('404 page not found\n');
      } else {
        res.writeHead(405, { 'content-type': 'text/plain; charset=utf-8', allow: 'POST' });
        res.end('Method Not Allowed\n');
      }
    });
    const notFound = await rawRequest(`${gateway.url}/v1/nope`);
    expect(notFound.status).toBe(404);
    expect(json(notFound.body)).toMatchObject({ error: { message: 'llama-swap has no route for GET /v1/nope.' } });
    const wrongMethod = await rawRequest(`${gateway.url}/v1/chat/completions`);
    expect(wrongMethod.status).toBe(405);
    expect(wrongMethod.headers.allow).toBe('POST');
    expect(json(wrongMethod.body)).toMatchObject({ error: { message: expect.stringContaining('does not allow GET') } });
  });

  it("passes a model server's own JSON error through unchanged to OpenAI callers, and in Anthropic shape on /v1/messages", async () => {
    const body =
      '{"error":{"code":400,"message":"the request exceeds the available context ' +
      'size","type":"exceed_context_size_error"}}';
    upstream.handle((_req, res) => {
      res.writeHead(400, { 'content-type': 'application/json; charset=utf-8' });
      res.end(body);
    });
    const openai = await post('/v1/chat/completions');
    expect(openai.status).toBe(400);
    expect(openai.body.toString()).toBe(body);
    const anthropic = await post('/v1/messages');
    expect(anthropic.status).toBe(400);
    expect(json(anthropic.body)).toEqual({
      type: 'error',
      error: { type: 'invalid_request_error', message: 'the request exceeds the available context size' },
    });
  });
});

describe("a llama-server router's error on /v1/messages", () => {
  let router: RouterSimulator;
  let routed: TestGateway;
  beforeAll(async () => {
    router = await startRouterSimulator({ models: [{ id: 'qwen' }, { id: 'nomic', embeddings: true }] });
    routed = await startTestGateway(router.url, {}, {}, { upstreamKind: 'llama-server' });
  });
  afterAll(async () => {
    await routed?.close();
    await router?.close();
  });

  it("reaches the Anthropic SDK in Anthropic's shape, with llama-server's status and message", async () => {
    const res = await rawRequest(`${routed.url}/v1/messages`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'anthropic-version': '2023-06-01' },
      body: JSON.stringify({ model: 'nomic', max_tokens: 16, messages: [{ role: 'user', content: 'hi' }] }),
    });
    // What llama-server said (OpenAI-shaped): the model was started for embeddings only.
    const said = 'This server does not support completions. Start it without `--embeddings`';
    expect(router.received.at(-1)).toMatchObject({ path: '/v1/messages', status: 501 });
    expect(res.status).toBe(501);
    expect(json(res.body)).toEqual({ type: 'error', error: { type: 'api_error', message: said } });

    const client = new Anthropic({ baseURL: routed.url, apiKey: 'sk-open-mode', maxRetries: 0 });
    const error = await client.messages
      .create({ model: 'nomic', max_tokens: 16, messages: [{ role: 'user', content: 'hi' }] })
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(Anthropic.APIError);
    expect(error).toMatchObject({ status: 501, error: { type: 'error', error: { type: 'api_error', message: said } } });
  });
});

describe('body limit', () => {
  it('passes a 30 MiB JSON body intact', async () => {
    upstream.handle((_req, res) => void res.end('{}'));
    const big = JSON.stringify({ model: 'm', messages: [{ role: 'user', content: 'x'.repeat(30 * 1024 * 1024) }] });
    const res = await post('/v1/chat/completions', big);
    expect(res.status).toBe(200);
    const seen = upstream.received.at(-1)!;
    expect(seen.bodyBytes).toBe(Buffer.byteLength(big));
    expect(seen.bodySha256).toBe(createHash('sha256').update(big).digest('hex'));
  });

  it('answers 413 in the Anthropic shape to a 51 MiB body and forwards nothing', async () => {
    const count = upstream.received.length;
    const big = JSON.stringify({ model: 'm', content: 'x'.repeat(51 * 1024 * 1024) });
    const res = await post('/v1/messages', big);
    expect(res.status).toBe(413);
    expect(json(res.body)).toEqual({
      type: 'error',
      error: { type: 'request_too_large', message: expect.stringContaining('50 MiB') },
    });
    expect(upstream.received.length).toBe(count);
  });

  it('counts the bytes of a chunked body without Content-Length and stops it with 413', async () => {
    const status = await new Promise<number>((resolve, reject) => {
      const req = request(
        `${gateway.url}/v1/chat/completions`,
        {
          method: 'POST',
          headers: { 'content-type': 'application/json', 'transfer-encoding': 'chunked' },
          agent: false,
        },
        (res) => {
          res.resume();
          resolve(res.statusCode ?? 0);
        },
      );
      req.on('error', reject);
      req.write('{"model":"m","x":"');
      const chunk = Buffer.alloc(1024 * 1024, 0x61);
      let sent = 0;
      const pump = () => {
        while (sent < 60) {
          sent++;
          if (!req.write(chunk)) return void req.once('drain', pump);
        }
        req.end('"}');
      };
      pump();
    });
    expect(status).toBe(413);
  });

  it('answers 413 at once to a Content-Length over the limit, before reading the body', async () => {
    const res = await new Promise<number>((resolve, reject) => {
      const req = request(
        `${gateway.url}/v1/embeddings`,
        {
          method: 'POST',
          headers: { 'content-type': 'application/json', 'content-length': String(60 * 1024 * 1024) },
          agent: false,
        },
        (r) => {
          r.resume();
          resolve(r.statusCode ?? 0);
        },
      );
      req.on('error', reject);
      req.write('{"model":"m"');
    });
    expect(res).toBe(413);
  });
});
