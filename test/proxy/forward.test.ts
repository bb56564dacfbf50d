/**
 * The forwarder on its own: a real gateway-side HTTP server and client, and a fake upstream
 * dispatcher whose handler calls the test makes one by one, the way undici's Pool would. So
 * each branch of the dispatch handler (pause, abort, retry, held errors, cut streams) is driven
 * exactly, with no timing to hope for.
 */
import { createServer, request as httpRequest, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { errors as undiciErrors, type Dispatcher } from 'undici';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { newCallContext, type ProxyContext } from '../../src/core/context.js';
import { GatewayError } from '../../src/core/errors.js';
import { createForwarder, type UpstreamDispatcher } from '../../src/proxy/forward.js';
import { wireFormatForCall } from '../../src/core/wire-format.js';

class FakeController implements Dispatcher.DispatchController {
  aborted = false;
  paused = false;
  reason: Error | null = null;
  resumes = 0;
  abort(reason: Error): void {
    this.aborted = true;
    this.reason = reason;
  }
  pause(): void {
    this.paused = true;
  }
  resume(): void {
    this.paused = false;
    this.resumes++;
  }
}

interface Dispatched {
  options: Dispatcher.DispatchOptions;
  handler: Dispatcher.DispatchHandler;
  controller: FakeController;
}

/** Records each dispatch; the test then plays undici's part on its handler. */
class FakeUpstream implements UpstreamDispatcher {
  readonly calls: Dispatched[] = [];
  dispatch(options: Dispatcher.DispatchOptions, handler: Dispatcher.DispatchHandler): boolean {
    this.calls.push({ options, handler, controller: new FakeController() });
    return true;
  }
  close(): Promise<void> {
    return Promise.resolve();
  }
  async call(n: number): Promise<Dispatched> {
    await vi.waitFor(() => expect(this.calls.length).toBeGreaterThan(n), EVENTUALLY);
    return this.calls[n]!;
  }
}

interface Call {
  ctx: ProxyContext;
  /** 'forwarded', or what forward rejected with. */
  settled: Promise<unknown>;
}

const servers: Server[] = [];
afterEach(async () => {
  for (const server of servers.splice(0)) {
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
  }
});

/** A gateway-side server that hands each request to the forwarder as the `/v1` route would. */
async function startGateway(upstream: FakeUpstream): Promise<{ url: string; calls: Call[] }> {
  const forwarder = createForwarder(
    {
      url: new URL('http://llama-swap.invalid:8080/base'),
      apiKey: undefined,
      connectTimeoutMs: 1000,
      headersTimeoutMs: 2000,
      idleTimeoutMs: 3000,
      connections: 1,
    },
    upstream,
  );
  const calls: Call[] = [];
  const server = createServer((req, res) => {
    const url = req.url ?? '/';
    const q = url.indexOf('?');
    const startedAt = performance.now();
    const ctx = newCallContext(req, res, {
      requestId: 'req-1',
      format: wireFormatForCall(url, req.headers['anthropic-version']),
      method: req.method ?? 'GET',
      path: q < 0 ? url : url.slice(0, q),
      url,
      startedAt,
      clientAddress: '127.0.0.1',
      proto: 'http',
      priorForwardedFor: undefined,
    });
    // What the route does as the response closes (http/proxy-route.ts).
    res.once('close', () => {
      ctx.outcome.closed(res.writableFinished);
      ctx.onClientGone?.();
    });
    const settled = forwarder.forward(ctx).then(
      () => 'forwarded',
      (error: unknown) => {
        // The route would render it; here the client just learns that nothing was forwarded.
        if (!res.headersSent) res.writeHead(599).end();
        return error;
      },
    );
    calls.push({ ctx, settled });
  });
  servers.push(server);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, calls };
}

/** Waits for an event, bounded by the test's timeout rather than vi.waitFor's one second. */
const EVENTUALLY = { timeout: 25_000, interval: 10 };

function send(
  url: string,
  headers: Record<string, string> = {},
): { response: Promise<IncomingMessage>; abort: () => void } {
  const req = httpRequest(url, { headers });
  req.on('error', () => undefined);
  const response = new Promise<IncomingMessage>((resolve, reject) => {
    req.once('response', (res) => {
      // Destroying the request after the headers fails the response with ECONNRESET.
      res.on('error', () => undefined);
      resolve(res);
    });
    req.once('error', reject);
  });
  // A test that makes the client leave never reads its response.
  response.catch(() => undefined);
  req.end();
  return { response, abort: () => req.destroy() };
}

async function text(res: IncomingMessage): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of res) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks).toString('utf8');
}

describe('forward', () => {
  it('sends the call under the upstream base path and passes a JSON answer through byte for byte', async () => {
    const upstream = new FakeUpstream();
    const gateway = await startGateway(upstream);
    const { response } = send(`${gateway.url}/v1/models?x=1`, { authorization: 'Bearer sk-client' });
    const { options, handler, controller } = await upstream.call(0);
    expect(options.path).toBe('/base/v1/models?x=1');
    expect(options.method).toBe('GET');
    expect(options.headers).toMatchObject({ 'x-request-id': 'req-1' });
    expect(options.headers).not.toHaveProperty('authorization');

    const body = '{"object":"list","data":[]}';
    handler.onRequestStart!(controller, {});
    handler.onResponseStart!(
      controller,
      200,
      { 'content-type': 'application/json', 'content-length': String(body.length) },
      'OK',
    );
    handler.onResponseData!(controller, Buffer.from(body));
    handler.onResponseEnd!(controller, {});

    const res = await response;
    expect(res.statusCode).toBe(200);
    expect(res.headers['x-request-id']).toBe('req-1');
    expect(await text(res)).toBe(body);
    const { ctx, settled } = gateway.calls[0]!;
    expect(await settled).toBe('forwarded');
    expect(ctx.outcome).toMatchObject({
      status: 200,
      bytesOut: body.length,
      streamed: false,
      clientAborted: false,
      errorClass: undefined,
    });
    expect(ctx.outcome.firstByteMs).toBeGreaterThanOrEqual(0);
  });

  it("flushes a stream's headers before its first event, and ends a stream cut before its terminal frame with one error event", async () => {
    const upstream = new FakeUpstream();
    const gateway = await startGateway(upstream);
    const { response } = send(`${gateway.url}/v1/chat/completions`);
    const { handler, controller } = await upstream.call(0);
    handler.onRequestStart!(controller, {});
    handler.onResponseStart!(controller, 200, { 'content-type': 'text/event-stream' }, 'OK');

    const res = await response;
    expect(res.statusCode).toBe(200);
    expect(res.headers['x-accel-buffering']).toBe('no');
    expect(res.headers['cache-control']).toBe('no-cache');
    const frame = 'data: {"choices":[{"index":0,"delta":{"content":"Hi"}}]}\n\n';
    handler.onResponseData!(controller, Buffer.from(frame));
    handler.onResponseEnd!(controller, {});

    const message = 'The upstream stream ended without its final event: the answer is incomplete.';
    const error = { message, type: 'server_error', param: null, code: 'upstream_truncated' };
    const terminal = `data: ${JSON.stringify({ error })}\n\n`;
    expect(await text(res)).toBe(frame + terminal);
    const { ctx, settled } = gateway.calls[0]!;
    expect(await settled).toBe('forwarded');
    expect(ctx.outcome).toMatchObject({
      status: 200,
      bytesOut: frame.length,
      streamed: true,
      errorClass: 'upstream_truncated',
    });
  });

  it("pauses the upstream while the client's socket is full and resumes it on drain", async () => {
    const upstream = new FakeUpstream();
    const gateway = await startGateway(upstream);
    const { response } = send(`${gateway.url}/v1/audio/speech`);
    const { handler, controller } = await upstream.call(0);
    handler.onRequestStart!(controller, {});
    handler.onResponseStart!(controller, 200, { 'content-type': 'application/octet-stream' }, 'OK');
    // More than the client's socket takes while nobody reads it (a body's headers go with its first chunk).
    const big = Buffer.alloc(32 * 1024 * 1024, 0x61);
    handler.onResponseData!(controller, big);
    expect(controller.paused).toBe(true);
    expect(controller.resumes).toBe(0);

    const received = text(await response);
    await vi.waitFor(() => expect(controller.resumes).toBe(1), EVENTUALLY);
    expect(controller.paused).toBe(false);
    handler.onResponseEnd!(controller, {});
    expect((await received).length).toBe(big.length);
  });

  it('aborts the upstream request when the client leaves after the headers; the status sent stays', async () => {
    const upstream = new FakeUpstream();
    const gateway = await startGateway(upstream);
    const { response, abort } = send(`${gateway.url}/v1/chat/completions`);
    const { handler, controller } = await upstream.call(0);
    handler.onRequestStart!(controller, {});
    handler.onResponseStart!(controller, 200, { 'content-type': 'text/event-stream' }, 'OK');
    await response;
    abort();

    await vi.waitFor(() => expect(controller.aborted).toBe(true), EVENTUALLY);
    expect(controller.reason?.message).toBe('the client closed the connection');
    handler.onResponseError!(controller, controller.reason!);
    const { ctx, settled } = gateway.calls[0]!;
    expect(await settled).toBe('forwarded');
    expect(ctx.outcome).toMatchObject({ status: 200, clientAborted: true, errorClass: 'client_abort' });
  });

  it('aborts a call whose client left while it waited for a connection, as soon as it gets one; counted as 499', async () => {
    const upstream = new FakeUpstream();
    const gateway = await startGateway(upstream);
    const { abort } = send(`${gateway.url}/v1/chat/completions`);
    const { handler, controller } = await upstream.call(0);
    abort();
    const { ctx, settled } = gateway.calls[0]!;
    await vi.waitFor(() => expect(ctx.outcome.clientAborted).toBe(true), EVENTUALLY);

    handler.onRequestStart!(controller, {});
    expect(controller.aborted).toBe(true);
    handler.onResponseError!(controller, controller.reason!);
    expect(await settled).toBe('forwarded');
    expect(ctx.outcome).toMatchObject({ status: 499, bytesOut: 0, clientAborted: true, errorClass: 'client_abort' });
  });

  it('hands an upstream that cannot be reached to the caller as a 502 that does not name its address', async () => {
    const upstream = new FakeUpstream();
    const gateway = await startGateway(upstream);
    const { response } = send(`${gateway.url}/v1/chat/completions`);
    const { handler, controller } = await upstream.call(0);
    handler.onRequestStart!(controller, {});
    handler.onResponseError!(
      controller,
      Object.assign(new Error('connect ECONNREFUSED 10.1.2.3:8080'), { code: 'ECONNREFUSED' }),
    );

    const error = await gateway.calls[0]!.settled;
    expect(error).toBeInstanceOf(GatewayError);
    expect(error).toMatchObject({
      code: 'upstream_unreachable',
      status: 502,
      message: 'llama-swap could not be reached (ECONNREFUSED).',
    });
    expect((await response).statusCode).toBe(599);
  });

  it('maps no response headers in time to a 504 naming the setting', async () => {
    const upstream = new FakeUpstream();
    const gateway = await startGateway(upstream);
    send(`${gateway.url}/v1/chat/completions`);
    const { handler, controller } = await upstream.call(0);
    handler.onRequestStart!(controller, {});
    handler.onResponseError!(controller, new undiciErrors.HeadersTimeoutError());
    expect(await gateway.calls[0]!.settled).toMatchObject({
      code: 'upstream_timeout',
      status: 504,
      message: 'llama-swap sent no response headers within 2000 ms (GATEHOUSE_HEADERS_TIMEOUT).',
    });
  });

  it('sends a call once more when the kept-alive connection it went out on had just been closed', async () => {
    const upstream = new FakeUpstream();
    const gateway = await startGateway(upstream);
    const { response } = send(`${gateway.url}/v1/models`);
    const first = await upstream.call(0);
    first.handler.onRequestStart!(first.controller, {});
    first.handler.onResponseError!(
      first.controller,
      Object.assign(new Error('other side closed'), { code: 'UND_ERR_SOCKET', socket: { bytesRead: 512 } }),
    );

    const second = await upstream.call(1);
    expect(second.options).toBe(first.options);
    second.handler.onRequestStart!(second.controller, {});
    second.handler.onResponseStart!(
      second.controller,
      200,
      { 'content-type': 'application/json', 'content-length': '2' },
      'OK',
    );
    second.handler.onResponseData!(second.controller, Buffer.from('{}'));
    second.handler.onResponseEnd!(second.controller, {});
    expect(await text(await response)).toBe('{}');
    expect(await gateway.calls[0]!.settled).toBe('forwarded');
  });

  it('does not send again when a fresh connection closed: the upstream really failed', async () => {
    const upstream = new FakeUpstream();
    const gateway = await startGateway(upstream);
    send(`${gateway.url}/v1/models`);
    const { handler, controller } = await upstream.call(0);
    handler.onRequestStart!(controller, {});
    handler.onResponseError!(
      controller,
      Object.assign(new Error('other side closed'), { code: 'UND_ERR_SOCKET', socket: { bytesRead: 0 } }),
    );
    expect(await gateway.calls[0]!.settled).toMatchObject({ code: 'upstream_bad_gateway', status: 502 });
    expect(upstream.calls).toHaveLength(1);
  });

  it("holds back llama-swap's own error and hands it to the caller with its status and code", async () => {
    const upstream = new FakeUpstream();
    const gateway = await startGateway(upstream);
    send(`${gateway.url}/v1/chat/completions`);
    const { handler, controller } = await upstream.call(0);
    const body = JSON.stringify({
      src: 'llama-swap',
      error: { code: 'concurrency_limit', message: 'Too many requests in flight.' },
    });
    handler.onRequestStart!(controller, {});
    handler.onResponseStart!(
      controller,
      429,
      { 'content-type': 'application/json', 'content-length': String(body.length), 'retry-after': '2' },
      'Too Many Requests',
    );
    handler.onResponseData!(controller, Buffer.from(body));
    handler.onResponseEnd!(controller, {});

    const { ctx, settled } = gateway.calls[0]!;
    expect(await settled).toMatchObject({
      code: 'upstream_error',
      status: 429,
      upstreamCode: 'concurrency_limit',
      message: 'Too many requests in flight.',
      headers: { 'retry-after': '2' },
    });
    expect(ctx.outcome).toMatchObject({ bytesOut: 0, errorClass: 'upstream_error' });
  });

  it("passes a model server's own error through unchanged", async () => {
    const upstream = new FakeUpstream();
    const gateway = await startGateway(upstream);
    const { response } = send(`${gateway.url}/v1/chat/completions`);
    const { handler, controller } = await upstream.call(0);
    const body = JSON.stringify({
      error: { message: 'the prompt is too long', type: 'invalid_request_error', code: 400 },
    });
    handler.onRequestStart!(controller, {});
    handler.onResponseStart!(
      controller,
      400,
      { 'content-type': 'application/json', 'content-length': String(body.length) },
      'Bad Request',
    );
    handler.onResponseData!(controller, Buffer.from(body));
    handler.onResponseEnd!(controller, {});

    const res = await response;
    expect(res.statusCode).toBe(400);
    expect(await text(res)).toBe(body);
    const { ctx, settled } = gateway.calls[0]!;
    expect(await settled).toBe('forwarded');
    expect(ctx.outcome).toMatchObject({ status: 400, bytesOut: body.length, errorClass: 'upstream_status' });
  });

  it("ends a stream that broke after its headers with one terminal event in the caller's format", async () => {
    const upstream = new FakeUpstream();
    const gateway = await startGateway(upstream);
    const { response } = send(`${gateway.url}/v1/messages`);
    const { handler, controller } = await upstream.call(0);
    handler.onRequestStart!(controller, {});
    handler.onResponseStart!(controller, 200, { 'content-type': 'text/event-stream' }, 'OK');
    const frame = 'event: message_start\ndata: {"type":"message_start"}\n\n';
    handler.onResponseData!(controller, Buffer.from(frame));
    handler.onResponseError!(controller, new undiciErrors.BodyTimeoutError());

    const message = 'The upstream stream went idle for longer than GATEHOUSE_IDLE_TIMEOUT.';
    const error = { type: 'error', error: { type: 'timeout_error', message } };
    const terminal = `event: error\ndata: ${JSON.stringify(error)}\n\n`;
    expect(await text(await response)).toBe(frame + terminal);
    const { ctx, settled } = gateway.calls[0]!;
    expect(await settled).toBe('forwarded');
    expect(ctx.outcome).toMatchObject({ status: 200, streamed: true, errorClass: 'upstream_idle_timeout' });
  });
});
