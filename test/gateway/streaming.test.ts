import { request } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startRecordingUpstream, type RecordingUpstream } from '../fakes/recording-upstream.js';
import { startTestGateway, type TestGateway } from '../helpers/gateway.js';
import { rawRequest, sleep } from '../helpers/http.js';

let upstream: RecordingUpstream;
let gateway: TestGateway;

beforeAll(async () => {
  upstream = await startRecordingUpstream();
  gateway = await startTestGateway(upstream.url, { headersTimeoutMs: 400, idleTimeoutMs: 300 });
});
afterAll(async () => {
  await gateway.close();
  await upstream.close();
});

const SSE_EVENTS = [
  'data: {"id":"c1","choices":[{"delta":{"content":"Hel"}}]}\n\n',
  ': keep-alive comment\n\n',
  'data: {"id":"c1","choices":[{"delta":{"content":"lo ✓"}}]}\n\n',
  'data: [DONE]\n\n',
];

describe('SSE streaming', () => {
  it('relays every event as soon as upstream sends it, with bytes identical to what upstream sent', async () => {
    const sentAt: number[] = [];
    upstream.handle(async (_req, res) => {
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      for (const event of SSE_EVENTS) {
        sentAt.push(performance.now());
        res.write(event);
        await sleep(80);
      }
      res.end();
    });
    const res = await rawRequest(`${gateway.url}/v1/chat/completions`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{"model":"m","stream":true}' });
    expect(res.status).toBe(200);
    expect(res.headers['content-type']).toBe('text/event-stream');
    expect(res.headers['x-accel-buffering']).toBe('no');
    expect(res.headers['content-encoding']).toBeUndefined();
    expect(res.body.toString('utf8')).toBe(SSE_EVENTS.join(''));
    // Not coalesced: each event arrived on its own, well before the next one was sent.
    expect(res.chunks).toHaveLength(SSE_EVENTS.length);
    res.chunks.forEach((chunk, i) => {
      expect(chunk.data.toString('utf8')).toBe(SSE_EVENTS[i]);
      expect(chunk.at - sentAt[i]!).toBeLessThan(50);
    });
  });

  it('sends response headers as soon as upstream does, before the first event', async () => {
    upstream.handle(async (_req, res) => {
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      res.flushHeaders();
      await sleep(300);
      res.end('data: [DONE]\n\n');
    });
    const started = performance.now();
    const res = await rawRequest(`${gateway.url}/v1/chat/completions`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{"model":"m"}' });
    expect(res.headersAt - started).toBeLessThan(150);
    expect(res.chunks[0]!.at - started).toBeGreaterThan(250);
  });
});

describe('client disconnect', () => {
  it('aborts the upstream request within 100 ms when the client leaves before response headers', async () => {
    upstream.handle(() => undefined); // never answers, like a model still loading
    const req = request(`${gateway.url}/v1/chat/completions`, { method: 'POST', headers: { 'content-type': 'application/json' }, agent: false });
    req.on('error', () => undefined);
    req.end('{"model":"slow-loader"}');
    await upstream.waitFor((r) => r.bodySha256 !== '' && r.headers['content-type'] === 'application/json' && r.closedAt === undefined);
    const leftAt = performance.now();
    req.destroy();
    const seen = await upstream.waitFor((r) => r.closedAt !== undefined && r.closedAt > leftAt, 1000);
    expect(seen.aborted).toBe(true);
    expect(seen.closedAt! - leftAt).toBeLessThan(100);
  });

  it('aborts the upstream request within 100 ms when the client leaves mid-stream', async () => {
    upstream.received.length = 0;
    upstream.handle((_req, res) => {
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      res.write('data: {"n":1}\n\n'); // then keeps generating forever
    });
    let leftAt = 0;
    await new Promise<void>((resolve) => {
      const req = request(`${gateway.url}/v1/chat/completions`, { method: 'POST', headers: { 'content-type': 'application/json' }, agent: false }, (res) => {
        res.once('data', () => {
          leftAt = performance.now();
          req.destroy();
          resolve();
        });
      });
      req.on('error', () => undefined);
      req.end('{"model":"m","stream":true}');
    });
    const seen = await upstream.waitFor((r) => r.closedAt !== undefined, 1000);
    expect(seen.aborted).toBe(true);
    expect(seen.closedAt! - leftAt).toBeLessThan(100);
  });
});

describe('timeouts', () => {
  it('answers 504 in the OpenAI shape when upstream sends no headers in time', async () => {
    upstream.handle(() => undefined);
    const started = performance.now();
    const res = await rawRequest(`${gateway.url}/v1/chat/completions`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{"model":"m"}' });
    expect(res.status).toBe(504);
    expect(performance.now() - started).toBeGreaterThanOrEqual(390);
    expect(JSON.parse(res.body.toString())).toEqual({
      error: { message: expect.stringContaining('no response headers within 400 ms'), type: 'server_error', param: null, code: 'upstream_timeout' },
    });
  });

  it('answers 504 in the Anthropic shape on /v1/messages', async () => {
    upstream.handle(() => undefined);
    const res = await rawRequest(`${gateway.url}/v1/messages`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{"model":"m"}' });
    expect(res.status).toBe(504);
    expect(JSON.parse(res.body.toString())).toEqual({ type: 'error', error: { type: 'timeout_error', message: expect.any(String) } });
  });

  it('ends an OpenAI stream that goes idle with exactly one terminal error event', async () => {
    upstream.handle((_req, res) => {
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      res.write('data: {"n":1}\n\n'); // then silence
    });
    const res = await rawRequest(`${gateway.url}/v1/chat/completions`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{"model":"m","stream":true}' });
    expect(res.status).toBe(200);
    const text = res.body.toString('utf8');
    const frames = text.split('\n\n').filter(Boolean);
    expect(frames).toHaveLength(2);
    expect(frames[0]).toBe('data: {"n":1}');
    expect(JSON.parse(frames[1]!.slice('data: '.length))).toEqual({
      error: { message: expect.stringContaining('idle'), type: 'server_error', param: null, code: 'upstream_idle_timeout' },
    });
  });

  it('ends an Anthropic stream that goes idle with one `event: error` frame', async () => {
    upstream.handle((_req, res) => {
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      res.write('event: message_start\ndata: {"type":"message_start"}\n\n');
    });
    const res = await rawRequest(`${gateway.url}/v1/messages`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{"model":"m","stream":true}' });
    const frames = res.body.toString('utf8').split('\n\n').filter(Boolean);
    expect(frames).toHaveLength(2);
    const [eventLine, dataLine] = frames[1]!.split('\n');
    expect(eventLine).toBe('event: error');
    expect(JSON.parse(dataLine!.slice('data: '.length))).toEqual({ type: 'error', error: { type: 'timeout_error', message: expect.stringContaining('idle') } });
  });

  it('ends a stream whose upstream connection breaks with one terminal error event', async () => {
    upstream.handle((_req, res) => {
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      res.write('data: {"n":1}\n\n');
      setTimeout(() => res.socket?.destroy(), 30);
    });
    const res = await rawRequest(`${gateway.url}/v1/chat/completions`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{"model":"m","stream":true}' });
    const frames = res.body.toString('utf8').split('\n\n').filter(Boolean);
    expect(frames).toHaveLength(2);
    expect(JSON.parse(frames[1]!.slice(6))).toMatchObject({ error: { code: 'upstream_stream_failed' } });
  });
});
