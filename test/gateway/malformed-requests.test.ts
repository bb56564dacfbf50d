/**
 * Requests Node's HTTP parser refuses before Fastify or the `/v1` route see them: the answer
 * is still the OpenAI error shape, with a status line, Content-Type and Connection: close.
 */
import { connect } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startRecordingUpstream, type RecordingUpstream } from '../fakes/recording-upstream.js';
import { startTestGateway, type TestGateway } from '../helpers/gateway.js';

let upstream: RecordingUpstream;
let gateway: TestGateway;

beforeAll(async () => {
  upstream = await startRecordingUpstream();
  gateway = await startTestGateway(upstream.url);
});
afterAll(async () => {
  await gateway.close();
  await upstream.close();
});

interface RawAnswer {
  statusLine: string;
  headers: Record<string, string>;
  body: string;
}

/** Writes `bytes` on a fresh connection and reads until the server closes it. */
function exchange(bytes: string): Promise<RawAnswer> {
  const { port } = new URL(gateway.url);
  return new Promise((resolve, reject) => {
    const socket = connect(Number(port), '127.0.0.1');
    let text = '';
    socket.setEncoding('utf8');
    socket.on('data', (chunk: string) => (text += chunk));
    socket.on('error', reject);
    socket.on('close', () => {
      const [head = '', body = ''] = text.split('\r\n\r\n');
      const [statusLine = '', ...lines] = head.split('\r\n');
      const headers = Object.fromEntries(
        lines.map((l) => [l.slice(0, l.indexOf(':')).toLowerCase(), l.slice(l.indexOf(':') + 1).trim()]),
      );
      resolve({ statusLine, headers, body });
    });
    socket.write(bytes);
  });
}

describe('requests the HTTP parser refuses', () => {
  it('answers a malformed request line with 400 in the OpenAI shape and closes the connection', async () => {
    const answer = await exchange('GET /v1/models HTTP/1.1 trailing-garbage\r\nHost: x\r\n\r\n');
    expect(answer.statusLine).toBe('HTTP/1.1 400 Bad Request');
    expect(answer.headers['content-type']).toBe('application/json; charset=utf-8');
    expect(answer.headers.connection).toBe('close');
    expect(Number(answer.headers['content-length'])).toBe(Buffer.byteLength(answer.body));
    expect(JSON.parse(answer.body)).toEqual({
      error: {
        message: 'The request is not valid HTTP/1.1.',
        type: 'invalid_request_error',
        param: null,
        code: 'bad_request',
      },
    });
  });

  it('answers headers over the size limit with 431 in the OpenAI shape', async () => {
    const answer = await exchange(
      `POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nX-Padding: ${'a'.repeat(20_000)}\r\n\r\n`,
    );
    expect(answer.statusLine).toBe('HTTP/1.1 431 Request Header Fields Too Large');
    expect(answer.headers.connection).toBe('close');
    expect(JSON.parse(answer.body)).toEqual({
      error: {
        message: 'The request line and headers are too large.',
        type: 'invalid_request_error',
        param: null,
        code: 'request_headers_too_large',
      },
    });
  });

  it('answers an overlong URL (over the header size limit) with 431 too', async () => {
    const answer = await exchange(`GET /v1/models?q=${'b'.repeat(20_000)} HTTP/1.1\r\nHost: x\r\n\r\n`);
    expect(answer.statusLine).toBe('HTTP/1.1 431 Request Header Fields Too Large');
    expect(JSON.parse(answer.body)).toMatchObject({ error: { code: 'request_headers_too_large' } });
  });

  it('forwards none of them', () => {
    expect(upstream.received).toEqual([]);
  });
});
