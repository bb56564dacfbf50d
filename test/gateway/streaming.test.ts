import { request, type IncomingHttpHeaders } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startRecordingUpstream, type RecordingUpstream } from '../fakes/recording-upstream.js';
import { startTestGateway, type TestGateway } from '../helpers/gateway.js';
import { rawRequest } from '../helpers/http.js';

let upstream: RecordingUpstream;
let gateway: TestGateway;
/** Default (minutes-long) timeouts: only the client's leaving can end an upstream call early. */
let patientGateway: TestGateway;

beforeAll(async () => {
  upstream = await startRecordingUpstream();
  gateway = await startTestGateway(upstream.url, { headersTimeoutMs: 400, idleTimeoutMs: 300 });
  patientGateway = await startTestGateway(upstream.url);
});
afterAll(async () => {
  await gateway.close();
  await patientGateway.close();
  await upstream.close();
});

/** A streaming POST that reports its response headers and each chunk as they arrive. */
function streamingPost(url: string, body: string, on: { headers?: () => void; chunk?: (data: Buffer) => void }) {
  return new Promise<{ status: number; headers: IncomingHttpHeaders; chunks: string[] }>((resolve, reject) => {
    const req = request(
      url,
      { method: 'POST', headers: { 'content-type': 'application/json' }, agent: false },
      (res) => {
        on.headers?.();
        const chunks: string[] = [];
        res.on('data', (data: Buffer) => {
          chunks.push(data.toString('utf8'));
          on.chunk?.(data);
        });
        res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, chunks }));
        res.on('error', reject);
      },
    );
    req.on('error', reject);
    req.end(body);
  });
}

const SSE_EVENTS = [
  'data: {"id":"c1","choices":[{"delta":{"content":"Hel"}}]}\n\n',
  ': keep-alive comment\n\n',
  'data: {"id":"c1","choices":[{"delta":{"content":"lo ✓"}}]}\n\n',
  'data: [DONE]\n\n',
];

describe('SSE streaming', () => {
  it('relays every event before upstream sends the next, with bytes identical to what upstream sent', async () => {
    // Lockstep: upstream sends the next event only once the client has the previous one, so a
    // gateway that held or coalesced events would never finish.
    let clientGotChunk: () => void = () => undefined;
    upstream.handle(async (_req, res) => {
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      for (const event of SSE_EVENTS) {
        const arrived = new Promise<void>((resolve) => (clientGotChunk = resolve));
        res.write(event);
        await arrived;
      }
      res.end();
    });
    const res = await streamingPost(`${patientGateway.url}/v1/chat/completions`, '{"model":"m","stream":true}', {
      chunk: () => clientGotChunk(),
    });
    expect(res.status).toBe(200);
    expect(res.headers['content-type']).toBe('text/event-stream');
    expect(res.headers['x-accel-buffering']).toBe('no');
    expect(res.headers['content-encoding']).toBeUndefined();
    expect(res.chunks).toEqual(SSE_EVENTS);
  });

  it('sends response headers as soon as upstream does, before the first event', async () => {
    // Upstream writes its first event only after the client has the headers.
    let clientGotHeaders: () => void = () => undefined;
    const headersArrived = new Promise<void>((resolve) => (clientGotHeaders = resolve));
    upstream.handle(async (_req, res) => {
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      res.flushHeaders();
      await headersArrived;
      res.end('data: [DONE]\n\n');
    });
    const res = await streamingPost(`${patientGateway.url}/v1/chat/completions`, '{"model":"m"}', {
      headers: clientGotHeaders,
    });
    expect(res.status).toBe(200);
    expect(res.chunks.join('')).toBe('data: [DONE]\n\n');
  });
});

describe('client disconnect', () => {
  it('aborts the upstream request when the client leaves before response headers', async () => {
    upstream.handle(() => undefined); // never answers, like a model still loading
    const req = request(`${patientGateway.url}/v1/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      agent: false,
    });
    req.on('error', () => undefined);
    req.end('{"model":"slow-loader"}');
    await upstream.waitFor(
      (r) => r.bodySha256 !== '' && r.headers['content-type'] === 'application/json' && r.closedAt === undefined,
    );
    const leftAt = performance.now();
    req.destroy();
    const seen = await upstream.waitFor((r) => r.closedAt !== undefined && r.closedAt > leftAt);
    expect(seen.aborted).toBe(true);
  });

  it('aborts the upstream request when the client leaves mid-stream', async () => {
    upstream.received.length = 0;
    upstream.handle((_req, res) => {
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      res.write('data: {"n":1}\n\n'); // then keeps generating forever
    });
    let leftAt = 0;
    await new Promise<void>((resolve) => {
      const req = request(
        `${patientGateway.url}/v1/chat/completions`,
        { method: 'POST', headers: { 'content-type': 'application/json' }, agent: false },
        (res) => {
          res.once('data', () => {
            leftAt = performance.now();
            req.destroy();
            resolve();
          });
        },
      );
      req.on('error', () => undefined);
      req.end('{"model":"m","stream":true}');
    });
    const seen = await upstream.waitFor((r) => r.closedAt !== undefined);
    expect(seen.aborted).toBe(true);
    expect(seen.closedAt!).toBeGreaterThan(leftAt);
  });
});

describe('timeouts', () => {
  it('answers 504 in the OpenAI shape when upstream sends no headers in time', async () => {
    upstream.received.length = 0;
    upstream.handle(() => undefined);
    const res = await rawRequest(`${gateway.url}/v1/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: '{"model":"m"}',
    });
    expect(res.status).toBe(504);
    expect(JSON.parse(res.body.toString())).toEqual({
      error: {
        message: expect.stringContaining('no response headers within 400 ms'),
        type: 'server_error',
        param: null,
        code: 'upstream_timeout',
      },
    });
    // The request reached upstream and was given up on, not refused before it was sent.
    expect((await upstream.waitFor((r) => r.closedAt !== undefined)).aborted).toBe(true);
  });

  it('answers 504 in the Anthropic shape on /v1/messages', async () => {
    upstream.handle(() => undefined);
    const res = await rawRequest(`${gateway.url}/v1/messages`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: '{"model":"m"}',
    });
    expect(res.status).toBe(504);
    expect(JSON.parse(res.body.toString())).toEqual({
      type: 'error',
      error: { type: 'timeout_error', message: expect.any(String) },
    });
  });

  it('ends an OpenAI stream that goes idle with exactly one terminal error event', async () => {
    upstream.handle((_req, res) => {
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      res.write('data: {"n":1}\n\n'); // then silence
    });
    const res = await rawRequest(`${gateway.url}/v1/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: '{"model":"m","stream":true}',
    });
    expect(res.status).toBe(200);
    const text = res.body.toString('utf8');
    const frames = text.split('\n\n').filter(Boolean);
    expect(frames).toHaveLength(2);
    expect(frames[0]).toBe('data: {"n":1}');
    expect(JSON.parse(frames[1]!.slice('data: '.length))).toEqual({
      error: {
        message: expect.stringContaining('idle'),
        type: 'server_error',
        param: null,
        code: 'upstream_idle_timeout',
      },
    });
  });

  it('ends an Anthropic stream that goes idle with one `event: error` frame', async () => {
    upstream.handle((_req, res) => {
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      res.write('event: message_start\ndata: {"type":"message_start"}\n\n');
    });
    const res = await rawRequest(`${gateway.url}/v1/messages`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: '{"model":"m","stream":true}',
    });
    const frames = res.body.toString('utf8').split('\n\n').filter(Boolean);
    expect(frames).toHaveLength(2);
    const [eventLine, dataLine] = frames[1]!.split('\n');
    expect(eventLine).toBe('event: error');
    expect(JSON.parse(dataLine!.slice('data: '.length))).toEqual({
      type: 'error',
      error: { type: 'timeout_error', message: expect.stringContaining('idle') },
    });
  });

  it('ends a stream whose upstream connection breaks with one terminal error event', async () => {
    // Upstream's connection breaks once the client has the first event.
    let breakUpstream: () => void = () => undefined;
    upstream.handle((_req, res) => {
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      res.write('data: {"n":1}\n\n');
      breakUpstream = () => res.socket?.destroy();
    });
    const res = await streamingPost(`${gateway.url}/v1/chat/completions`, '{"model":"m","stream":true}', {
      chunk: () => breakUpstream(),
    });
    const frames = res.chunks.join('').split('\n\n').filter(Boolean);
    expect(frames).toHaveLength(2);
    expect(JSON.parse(frames[1]!.slice(6))).toMatchObject({ error: { code: 'upstream_stream_failed' } });
  });
});
