/**
 * The connection pool towards llama-swap: its size is GATEHOUSE_UPSTREAM_CONNECTIONS, and a call
 * that went out on a kept-alive connection the upstream had just closed is sent once more only when
 * its method is idempotent: a POST the upstream may have received is never sent twice.
 */
import { createServer, type AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { loadSettings, SettingsError } from '../../src/settings/index.js';
import { startRecordingUpstream, type RecordingUpstream } from '../fakes/recording-upstream.js';
import { startTestGateway, type TestGateway } from '../helpers/gateway.js';
import { rawRequest } from '../helpers/http.js';

const cleanup: Array<{ close(): Promise<void> }> = [];
afterEach(async () => {
  for (const c of cleanup.splice(0).reverse()) await c.close();
});

describe('GATEHOUSE_UPSTREAM_CONNECTIONS', () => {
  it('defaults to 1024 and takes a positive whole number', () => {
    expect(loadSettings({}).upstreamConnections).toBe(1024);
    expect(loadSettings({ GATEHOUSE_UPSTREAM_CONNECTIONS: '8' }).upstreamConnections).toBe(8);
    for (const bad of ['0', '-1', '2.5', 'many'])
      expect(() => loadSettings({ GATEHOUSE_UPSTREAM_CONNECTIONS: bad })).toThrowError(SettingsError);
  });

  it('caps the connections to llama-swap: with 1, a second call waits until the first has ended', async () => {
    const events: string[] = [];
    const upstream: RecordingUpstream = await startRecordingUpstream((req, res) => {
      const name = req.url!.slice(1);
      events.push(`upstream got ${name}`);
      setTimeout(
        () => {
          events.push(`upstream answered ${name}`);
          res.end('{}');
        },
        name === 'v1/first' ? 100 : 0,
      );
    });
    cleanup.push(upstream);
    const gateway: TestGateway = await startTestGateway(upstream.url, { upstreamConnections: 1 });
    cleanup.push(gateway);
    const first = rawRequest(`${gateway.url}/v1/first`);
    await upstream.waitFor((r) => r.url === '/v1/first');
    const second = rawRequest(`${gateway.url}/v1/second`);
    expect((await Promise.all([first, second])).map((r) => r.status)).toEqual([200, 200]);
    expect(events).toEqual([
      'upstream got v1/first',
      'upstream answered v1/first',
      'upstream got v1/second',
      'upstream answered v1/second',
    ]);
  });
});

/**
 * A raw HTTP/1.1 upstream on node:net that records, per request read whole, which connection
 * carried it, and answers, answers then ends the connection, or destroys it unanswered, as
 * `decide(requestNumberOnThisSocket, socketNumber)` says.
 */
async function startRawUpstream(
  decide: (nthOnSocket: number, socketNo: number) => 'answer' | 'answer-and-end' | 'close',
) {
  const seen: Array<{ socket: number; path: string }> = [];
  let sockets = 0;
  const server = createServer((socket) => {
    const socketNo = ++sockets;
    let nth = 0;
    let buffered = Buffer.alloc(0);
    socket.on('error', () => undefined);
    socket.on('data', (data: Buffer) => {
      buffered = Buffer.concat([buffered, data]);
      for (;;) {
        const headEnd = buffered.indexOf('\r\n\r\n');
        if (headEnd === -1) return;
        const head = buffered.toString('latin1', 0, headEnd);
        const length = Number(/content-length: *(\d+)/i.exec(head)?.[1] ?? 0);
        if (buffered.length < headEnd + 4 + length) return;
        buffered = buffered.subarray(headEnd + 4 + length);
        seen.push({ socket: socketNo, path: head.split(' ')[1]! });
        const action = decide(++nth, socketNo);
        if (action === 'close') {
          socket.destroy();
          return;
        }
        socket.write(
          'HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: 11\r\nconnection: ' +
            'keep-alive\r\n\r\n{"ok":true}',
        );
        if (action === 'answer-and-end') socket.end();
      }
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    seen,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

describe('a kept-alive upstream connection closed under a call', () => {
  const post = (url: string, path: string, body: string) =>
    rawRequest(`${url}${path}`, { method: 'POST', headers: { 'content-type': 'application/json' }, body });

  it('never sends a POST twice: the upstream read it whole and closed the reused connection, so 502', async () => {
    // The second request on a connection is read whole, then the connection is destroyed unanswered.
    const upstream = await startRawUpstream((nth) => (nth === 2 ? 'close' : 'answer'));
    cleanup.push(upstream);
    const gateway = await startTestGateway(upstream.url, { upstreamConnections: 1 });
    cleanup.push(gateway);
    const body = JSON.stringify({ model: 'm', messages: [] });
    expect((await post(gateway.url, '/v1/chat/completions', body)).status).toBe(200);
    const second = await post(gateway.url, '/v1/chat/completions', body);
    expect(second.status).toBe(502);
    expect(JSON.parse(second.body.toString())).toEqual({
      error: {
        message: 'The connection to llama-swap failed before a response arrived (UND_ERR_SOCKET).',
        type: 'server_error',
        param: null,
        code: 'upstream_bad_gateway',
      },
    });
    expect(upstream.seen).toEqual([
      { socket: 1, path: '/v1/chat/completions' },
      { socket: 1, path: '/v1/chat/completions' },
    ]);
  });

  it('answers an Anthropic call the upstream received and dropped with 502 in the Anthropic shape, once', async () => {
    const upstream = await startRawUpstream((nth) => (nth === 2 ? 'close' : 'answer'));
    cleanup.push(upstream);
    const gateway = await startTestGateway(upstream.url, { upstreamConnections: 1 });
    cleanup.push(gateway);
    const body = JSON.stringify({ model: 'm', max_tokens: 8, messages: [] });
    expect((await post(gateway.url, '/v1/messages', body)).status).toBe(200);
    const second = await post(gateway.url, '/v1/messages', body);
    expect(second.status).toBe(502);
    expect(JSON.parse(second.body.toString())).toMatchObject({ type: 'error', error: { type: 'api_error' } });
    expect(upstream.seen).toEqual([
      { socket: 1, path: '/v1/messages' },
      { socket: 1, path: '/v1/messages' },
    ]);
  });

  it('sends a POST on a fresh connection when the reused one had closed before the call went out', async () => {
    // As llama-server does after a stream: the answer, then the connection's end, before the next call.
    const upstream = await startRawUpstream(() => 'answer-and-end');
    cleanup.push(upstream);
    const gateway = await startTestGateway(upstream.url, { upstreamConnections: 1 });
    cleanup.push(gateway);
    const body = JSON.stringify({ model: 'm', messages: [] });
    expect((await post(gateway.url, '/v1/chat/completions', body)).status).toBe(200);
    expect((await post(gateway.url, '/v1/chat/completions', body)).status).toBe(200);
    expect(upstream.seen).toEqual([
      { socket: 1, path: '/v1/chat/completions' },
      { socket: 2, path: '/v1/chat/completions' },
    ]);
  });

  it('does not retry a call whose fresh connection closed before answering: 502', async () => {
    const upstream = await startRawUpstream(() => 'close');
    cleanup.push(upstream);
    const gateway = await startTestGateway(upstream.url);
    cleanup.push(gateway);
    const res = await rawRequest(`${gateway.url}/v1/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: '{"model":"m"}',
    });
    expect(res.status).toBe(502);
    expect(JSON.parse(res.body.toString())).toMatchObject({ error: { code: 'upstream_bad_gateway' } });
    expect(upstream.seen).toEqual([{ socket: 1, path: '/v1/chat/completions' }]);
  });

  it('sends each call that met a closed reused connection once more, on a new connection', async () => {
    // Every request after the first on a connection meets a close; each retry's fresh connection answers.
    const upstream = await startRawUpstream((nth) => (nth >= 2 ? 'close' : 'answer'));
    cleanup.push(upstream);
    const gateway = await startTestGateway(upstream.url, { upstreamConnections: 1 });
    cleanup.push(gateway);
    for (let i = 0; i < 3; i++) expect((await rawRequest(`${gateway.url}/v1/models`)).status).toBe(200);
    expect(upstream.seen.map((s) => s.socket)).toEqual([1, 1, 2, 2, 3]);
  });
});
