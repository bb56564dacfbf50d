/**
 * Request bodies are received whole before anything goes upstream: a slow upload holds only
 * its own socket, a stalled one is answered 408, and a large one is spooled and forwarded intact.
 */
import { createHash } from 'node:crypto';
import { request as httpRequest, type IncomingMessage } from 'node:http';
import { readdirSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startRecordingUpstream, type RecordingUpstream } from '../fakes/recording-upstream.js';
import { startTestGateway, type TestGateway } from '../helpers/gateway.js';
import { json, rawRequest } from '../helpers/http.js';

let upstream: RecordingUpstream;
let gateway: TestGateway;

beforeAll(async () => {
  upstream = await startRecordingUpstream((_req, res, body) => {
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end(JSON.stringify({ ok: true, bytes: body.length, sha256: createHash('sha256').update(body).digest('hex') }));
  });
  gateway = await startTestGateway(upstream.url, { bodyTimeoutMs: 300 });
});
afterAll(async () => {
  await gateway.close();
  await upstream.close();
});

/** Starts a chunked upload and sends `first`; the caller decides what comes next. */
function startUpload(path: string, first: string) {
  const req = httpRequest(`${gateway.url}${path}`, {
    method: 'POST',
    agent: false,
    headers: { 'content-type': 'application/json', 'transfer-encoding': 'chunked' },
  });
  const response = new Promise<{ status: number; body: string; headers: IncomingMessage['headers'] }>(
    (resolve, reject) => {
      req.on('response', (res) => {
        let body = '';
        res.setEncoding('utf8');
        res.on('data', (d: string) => (body += d));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, body, headers: res.headers }));
      });
      req.on('error', reject);
    },
  );
  req.write(first);
  return { req, response };
}

const chat = (body: string) =>
  rawRequest(`${gateway.url}/v1/chat/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body,
  });

describe('request bodies', () => {
  it('forwards nothing while a body is still arriving, and serves other clients meanwhile', async () => {
    const before = upstream.started;
    const slow = startUpload('/v1/chat/completions', `{"model":"qwen","messages":[${' '.repeat(1000)}`);
    const other = await chat('{"model":"qwen","messages":[]}');
    expect(other.status).toBe(200);
    // Only the complete call reached the upstream; the slow one has not even started there.
    expect(upstream.started - before).toBe(1);
    slow.req.end(']}');
    const done = await slow.response;
    expect(done.status).toBe(200);
    expect(JSON.parse(done.body)).toMatchObject({ bytes: 1030 });
    expect(upstream.started - before).toBe(2);
  });

  it('keeps serving other clients while more slow uploads are open than there are upstream connections', async () => {
    const small = await startTestGateway(upstream.url, { upstreamConnections: 2 });
    try {
      const slow = Array.from({ length: 6 }, () => {
        const req = httpRequest(`${small.url}/v1/chat/completions`, {
          method: 'POST',
          agent: false,
          headers: { 'content-type': 'application/json', 'transfer-encoding': 'chunked' },
        });
        req.on('error', () => undefined);
        req.write('{"model":"qwen","messages":[');
        return req;
      });
      for (let i = 0; i < 3; i++) {
        const res = await rawRequest(`${small.url}/v1/chat/completions`, {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: '{"model":"qwen","messages":[]}',
        });
        expect(res.status).toBe(200);
      }
      for (const req of slow) req.destroy();
    } finally {
      await small.close();
    }
  });

  it('answers 408 in the OpenAI format when a body stops arriving, and forwards nothing', async () => {
    const before = upstream.received.length;
    const { req, response } = startUpload('/v1/chat/completions', '{"model":"qwen"');
    const res = await response;
    req.destroy();
    expect(res.status).toBe(408);
    expect(res.headers.connection).toBe('close');
    expect(JSON.parse(res.body)).toEqual({
      error: {
        message: expect.stringContaining('GATEHOUSE_BODY_TIMEOUT'),
        type: 'invalid_request_error',
        param: null,
        code: 'body_timeout',
      },
    });
    expect(upstream.received.length).toBe(before);
  });

  it('answers 408 in the Anthropic format on /v1/messages', async () => {
    const { req, response } = startUpload('/v1/messages', '{"model":"qwen"');
    const res = await response;
    req.destroy();
    expect(res.status).toBe(408);
    expect(JSON.parse(res.body)).toMatchObject({ type: 'error', error: { type: 'invalid_request_error' } });
  });

  it('spools a large body to disk, forwards it byte for byte, and removes the file', async () => {
    const body = JSON.stringify({ model: 'qwen', messages: [{ role: 'user', content: 'x'.repeat(3 * 1024 * 1024) }] });
    const res = await chat(body);
    expect(res.status).toBe(200);
    expect(json(res.body)).toEqual({
      ok: true,
      bytes: Buffer.byteLength(body),
      sha256: createHash('sha256').update(body).digest('hex'),
    });
    expect(upstream.received.at(-1)?.headers['content-length']).toBe(String(Buffer.byteLength(body)));
    // Only this process's own (empty) spool directory is left, with its lock.
    const [own, ...others] = readdirSync(join(gateway.dataDir, 'spool'));
    expect(others).toEqual([]);
    expect(readdirSync(join(gateway.dataDir, 'spool', own!))).toEqual(['owner.lock']);
  });
});
