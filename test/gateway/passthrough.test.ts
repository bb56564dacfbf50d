import { request } from 'node:http';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { startRecordingUpstream, type RecordingUpstream } from '../fakes/recording-upstream.js';
import { startTestGateway, type TestGateway } from '../helpers/gateway.js';
import { json, rawRequest } from '../helpers/http.js';

let upstream: RecordingUpstream;
let gateway: TestGateway;

beforeAll(async () => {
  upstream = await startRecordingUpstream();
  gateway = await startTestGateway(upstream.url, { upstreamApiKey: undefined });
});
afterAll(async () => {
  await gateway.close();
  await upstream.close();
});
afterEach(() => {
  upstream.received.length = 0;
});

describe('pass-through of /v1', () => {
  it('forwards method, path, query string and body bytes, and relays status, headers and body', async () => {
    upstream.handle((req, res, body) => {
      res.writeHead(201, { 'content-type': 'application/json', 'x-upstream': 'yes' });
      res.end(JSON.stringify({ got: body.toString('utf8'), url: req.url, method: req.method }));
    });
    const body = JSON.stringify({ model: 'qwen', messages: [{ role: 'user', content: 'hi ✓' }] });
    const res = await rawRequest(`${gateway.url}/v1/messages?beta=true`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body,
    });
    expect(res.status).toBe(201);
    expect(res.headers['x-upstream']).toBe('yes');
    expect(json(res.body)).toEqual({ got: body, url: '/v1/messages?beta=true', method: 'POST' });
  });

  it('passes any method and binary response bodies through unchanged', async () => {
    const audio = Buffer.from(Array.from({ length: 70_000 }, (_, i) => (i * 7) % 256));
    upstream.handle((_req, res) => {
      res.writeHead(200, { 'content-type': 'audio/mpeg' });
      res.end(audio);
    });
    const res = await rawRequest(`${gateway.url}/v1/audio/speech`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: '{"model":"tts","input":"hi"}',
    });
    expect(res.headers['content-type']).toBe('audio/mpeg');
    expect(res.body.equals(audio)).toBe(true);

    upstream.handle((req, res) => void res.end(req.method));
    const del = await rawRequest(`${gateway.url}/v1/files/abc`, { method: 'DELETE' });
    expect(del.body.toString()).toBe('DELETE');
  });

  it('never forwards client credentials, and sends the upstream key only when configured', async () => {
    upstream.handle((_req, res) => void res.end('{}'));
    await rawRequest(`${gateway.url}/v1/models`, {
      headers: {
        authorization: 'Bearer sk-client-secret',
        'x-api-key': 'sk-client-2',
        'api-key': 'sk-client-3',
        cookie: 'gh_session=abc',
      },
    });
    const seen = upstream.received[0]!;
    expect(seen.headers.authorization).toBeUndefined();
    expect(seen.headers['x-api-key']).toBeUndefined();
    expect(seen.headers['api-key']).toBeUndefined();
    expect(seen.headers.cookie).toBeUndefined();

    const keyed = await startTestGateway(upstream.url, { upstreamApiKey: 'upstream-secret' });
    try {
      await rawRequest(`${keyed.url}/v1/models`, { headers: { authorization: 'Bearer sk-client-secret' } });
      expect(upstream.received[1]!.headers.authorization).toBe('Bearer upstream-secret');
      expect(keyed.logText()).not.toContain('upstream-secret');
      expect(keyed.logText()).not.toContain('sk-client-secret');
    } finally {
      await keyed.close();
    }
  });

  it('drops hop-by-hop headers, sets X-Forwarded-*, and echoes a request id', async () => {
    upstream.handle((_req, res) => {
      res.writeHead(200, { 'content-type': 'application/json', 'x-hop': '1', connection: 'x-hop' });
      res.end('{}');
    });
    const res = await rawRequest(`${gateway.url}/v1/models`, {
      headers: {
        'x-request-id': 'abc-123',
        connection: 'keep-alive, x-private',
        'x-private': 'p',
        te: 'trailers',
        'x-forwarded-for': '6.6.6.6',
      },
    });
    const seen = upstream.received[0]!;
    expect(seen.headers['x-private']).toBeUndefined();
    expect(seen.headers.te).toBeUndefined();
    expect(seen.headers['x-forwarded-for']).toBe('127.0.0.1');
    expect(seen.headers['x-forwarded-proto']).toBe('http');
    expect(seen.headers['x-forwarded-host']).toBe(new URL(gateway.url).host);
    expect(seen.headers['x-request-id']).toBe('abc-123');
    expect(res.headers['x-request-id']).toBe('abc-123');
    expect(res.headers['x-hop']).toBeUndefined();

    const generated = await rawRequest(`${gateway.url}/v1/models`, {
      headers: { 'x-request-id': 'bad id with spaces <script>' },
    });
    expect(generated.headers['x-request-id']).toMatch(/^[0-9a-f-]{36}$/);
    expect(upstream.received[1]!.headers['x-request-id']).toBe(generated.headers['x-request-id']);
  });

  it('reads the model of a multipart upload and forwards the upload byte for byte', async () => {
    upstream.handle((_req, res, body) => {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ bytes: body.length }));
    });
    const form = new FormData();
    form.append('file', new Blob([Buffer.alloc(300_000, 1)], { type: 'audio/wav' }), 'a.wav');
    form.append('model', 'whisper-1');
    const res = await fetch(`${gateway.url}/v1/audio/transcriptions`, { method: 'POST', body: form });
    expect(res.status).toBe(200);
    const seen = upstream.received[0]!;
    expect(seen.headers['content-type']).toMatch(/^multipart\/form-data; boundary=/);
    expect(((await res.json()) as { bytes: number }).bytes).toBe(seen.bodyBytes);
    const line = gateway.logLines().find((l) => l.path === '/v1/audio/transcriptions');
    expect(line?.model).toBe('whisper-1');
  });

  it('logs one access line per request with method, path, status, model, duration, bytes and request id, and no secrets', async () => {
    upstream.handle((_req, res) => void res.end('{"ok":true}'));
    const before = gateway.logLines().length;
    await rawRequest(`${gateway.url}/v1/chat/completions?token=x`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: 'Bearer sk-very-secret', 'x-request-id': 'log-me' },
      body: '{"model":"qwen-7b","messages":[]}',
    });
    await gateway.waitForLog((l) => l.req_id === 'log-me');
    const lines = gateway
      .logLines()
      .slice(before)
      .filter((l) => l.req_id === 'log-me');
    expect(lines).toHaveLength(1);
    expect(lines[0]).toMatchObject({
      method: 'POST',
      path: '/v1/chat/completions',
      status: 200,
      model: 'qwen-7b',
      bytes_in: 33,
      bytes_out: 11,
    });
    expect(typeof lines[0]!.ms).toBe('number');
    expect(gateway.logText()).not.toContain('sk-very-secret');
  });
});

describe('probes', () => {
  it('answers HEAD / with 200 at once and /healthz without auth', async () => {
    const head = await rawRequest(`${gateway.url}/`, { method: 'HEAD' });
    expect(head.status).toBe(200);
    const health = await rawRequest(`${gateway.url}/healthz`);
    expect(health.status).toBe(200);
    expect(json(health.body)).toEqual({ status: 'ok' });
  });

  it('answers /readyz 503 when the upstream health check fails', async () => {
    const down = await startTestGateway(
      upstream.url,
      {},
      { upstream: { health: async () => ({ ok: false, error: 'ECONNREFUSED' }) } },
    );
    try {
      const res = await rawRequest(`${down.url}/readyz`);
      expect(res.status).toBe(503);
      expect(json(res.body)).toMatchObject({ status: 'upstream unavailable' });
    } finally {
      await down.close();
    }
  });
});

describe('backpressure', () => {
  it('does not read ahead of a slow client: the upstream is paused while the client does not read', async () => {
    let written = 0;
    let blocked = false;
    upstream.handle((_req, res) => {
      res.writeHead(200, { 'content-type': 'application/octet-stream' });
      const chunk = Buffer.alloc(64 * 1024, 7);
      const pump = () => {
        while (written < 200 * 1024 * 1024) {
          written += chunk.length;
          if (!res.write(chunk)) {
            blocked = true;
            res.once('drain', pump);
            return;
          }
        }
        res.end();
      };
      pump();
    });
    await new Promise<void>((resolve, reject) => {
      const req = request(`${gateway.url}/v1/files/big/content`, { agent: false }, (res) => {
        res.pause(); // a client that reads nothing
        setTimeout(() => {
          try {
            expect(blocked).toBe(true);
            // Socket buffers on three hops, but nowhere near the 200 MiB on offer.
            expect(written).toBeLessThan(32 * 1024 * 1024);
            req.destroy();
            resolve();
          } catch (error) {
            reject(error);
          }
        }, 500);
      });
      req.on('error', () => undefined);
      req.end();
    });
  });
});
