/**
 * Forwards one call to llama-swap with undici's `Pool#request` (Node streams end to end;
 * the `fetch` path costs ~5x, see docs/benchmarks.md) and streams the answer back chunk by
 * chunk with backpressure. The client's disconnect aborts the upstream request at once,
 * before or after response headers.
 */
import { errors as undiciErrors, Pool } from 'undici';
import type { Dispatcher } from 'undici';
import { GatewayError, isGatewayError } from '../http/errors.js';
import { terminalStreamEvent } from '../http/render-error.js';
import type { ProxyContext } from './context.js';
import { clientResponseHeaders, upstreamRequestHeaders } from './headers.js';
import { MAX_TRANSLATABLE_ERROR_BYTES, translateUpstreamError } from './upstream-errors.js';

export interface UpstreamOptions {
  url: URL;
  apiKey: string | undefined;
  connectTimeoutMs: number;
  headersTimeoutMs: number;
  idleTimeoutMs: number;
  /** Keep-alive connections to llama-swap; streams each hold one for their whole life. */
  connections?: number;
}

/** Observes a response body on the side (usage accounting); must never delay a byte. */
export interface ResponseTap {
  onChunk(chunk: Buffer): void;
  onEnd(outcome: 'complete' | 'aborted' | 'failed'): void;
}
export type TapFactory = (ctx: ProxyContext, status: number, contentType: string | undefined) => ResponseTap | undefined;

export interface Forwarder {
  forward(ctx: ProxyContext, tapFactory?: TapFactory): Promise<void>;
  close(): Promise<void>;
}

export function createForwarder(options: UpstreamOptions): Forwarder {
  const pool = new Pool(options.url.origin, {
    connections: options.connections ?? 1024,
    connect: { timeout: options.connectTimeoutMs },
    headersTimeout: options.headersTimeoutMs,
    bodyTimeout: options.idleTimeoutMs,
    keepAliveTimeout: 30_000,
  });
  const basePath = options.url.pathname.replace(/\/+$/, '');

  async function forward(ctx: ProxyContext, tapFactory?: TapFactory): Promise<void> {
    const { req, res } = ctx;
    const abort = new AbortController();
    const onClientClose = () => {
      if (!res.writableFinished) {
        ctx.clientAborted = true;
        abort.abort();
      }
    };
    res.once('close', onClientClose);

    const body = ctx.body;
    const headers = upstreamRequestHeaders(req.headers, {
      requestId: ctx.requestId,
      clientAddress: ctx.clientAddress,
      proto: 'http',
      priorForwardedFor: undefined,
      upstreamApiKey: options.apiKey,
      contentLength: body?.complete ? body.bytes : declaredLength(req.headers['content-length']),
    });

    let upstream: Dispatcher.ResponseData;
    try {
      upstream = await pool.request({
        path: basePath + ctx.url,
        method: ctx.method as Dispatcher.HttpMethod,
        headers,
        body: (body?.body ?? null) as Dispatcher.DispatchOptions['body'],
        signal: abort.signal,
      });
    } catch (error) {
      res.off('close', onClientClose);
      if (ctx.clientAborted) {
        ctx.errorClass = 'client_abort';
        return;
      }
      throw mapRequestError(error, options);
    }

    const status = upstream.statusCode;
    const contentType = headerString(upstream.headers['content-type']);
    ctx.status = status;

    if (status >= 400 && isSmallOrUnsized(upstream.headers['content-length'])) {
      const handled = await relayErrorBody(ctx, upstream, contentType);
      if (handled) {
        res.off('close', onClientClose);
        return;
      }
    }

    const isSse = contentType?.startsWith('text/event-stream') === true;
    ctx.streamed = isSse;
    const outHeaders = clientResponseHeaders(upstream.headers);
    outHeaders['x-request-id'] = ctx.requestId;
    if (isSse) {
      // Proxies in front of us (nginx) must not buffer the stream either.
      outHeaders['x-accel-buffering'] = 'no';
      outHeaders['cache-control'] ??= 'no-cache';
    }
    res.writeHead(status, outHeaders);
    // A stream's headers go out now, not with its first event: the client sees 200 while a
    // model loads. Other bodies send headers with their first chunk (one write, not two).
    if (isSse) res.flushHeaders();
    ctx.firstByteMs = performance.now() - ctx.startedAt;

    const tap = tapFactory?.(ctx, status, contentType);
    await pipeBody(ctx, upstream.body, isSse, tap);
    res.off('close', onClientClose);
  }

  return {
    forward,
    close: () => pool.close(),
  };
}

/** Streams the upstream body to the client, chunk by chunk, pausing when the client is slow. */
function pipeBody(ctx: ProxyContext, body: Dispatcher.ResponseData['body'], isSse: boolean, tap: ResponseTap | undefined): Promise<void> {
  const { res } = ctx;
  return new Promise<void>((resolve) => {
    let settled = false;
    const finish = (outcome: 'complete' | 'aborted' | 'failed') => {
      if (settled) return;
      settled = true;
      res.off('drain', onDrain);
      res.off('close', onClose);
      tap?.onEnd(outcome);
      resolve();
    };
    const onDrain = () => body.resume();
    const onClose = () => {
      if (!res.writableFinished) {
        ctx.clientAborted = true;
        ctx.errorClass ??= 'client_abort';
        body.destroy();
        finish('aborted');
      }
    };
    body.on('data', (chunk: Buffer) => {
      ctx.bytesOut += chunk.length;
      tap?.onChunk(chunk);
      if (!res.write(chunk)) body.pause();
    });
    body.on('end', () => {
      res.end();
      finish('complete');
    });
    body.on('error', (error: Error) => {
      if (ctx.clientAborted) return finish('aborted');
      const mapped = mapBodyError(error);
      ctx.errorClass = mapped.code;
      if (isSse && !res.destroyed) {
        // Status is already sent: end with one terminal error event in the stream's own format.
        res.end(terminalStreamEvent(mapped, ctx.format));
      } else {
        res.destroy();
      }
      finish('failed');
    });
    res.on('drain', onDrain);
    res.on('close', onClose);
  });
}

/**
 * Reads a small error body to see whether llama-swap (not a model server) produced it, and
 * if so answers with a proper error in the caller's format. Returns false when the body
 * should be streamed through as is (it is then re-emitted from what was read).
 */
async function relayErrorBody(ctx: ProxyContext, upstream: Dispatcher.ResponseData, contentType: string | undefined): Promise<boolean> {
  const { chunks, size } = await readUpTo(upstream.body, MAX_TRANSLATABLE_ERROR_BYTES);
  const bodyBytes = Buffer.concat(chunks);
  if (size <= MAX_TRANSLATABLE_ERROR_BYTES) {
    const translated = translateUpstreamError({
      status: upstream.statusCode,
      contentType,
      body: bodyBytes,
      retryAfter: headerString(upstream.headers['retry-after']),
      allow: headerString(upstream.headers.allow),
      method: ctx.method,
      path: ctx.path,
    });
    if (translated) {
      ctx.errorClass = 'upstream_error';
      throw translated;
    }
  }
  // A model server's own error: relay status, headers and bytes unchanged.
  const outHeaders = clientResponseHeaders(upstream.headers);
  outHeaders['x-request-id'] = ctx.requestId;
  ctx.res.writeHead(upstream.statusCode, outHeaders);
  ctx.firstByteMs = performance.now() - ctx.startedAt;
  ctx.bytesOut += bodyBytes.length;
  ctx.errorClass = 'upstream_status';
  if (size <= MAX_TRANSLATABLE_ERROR_BYTES) {
    ctx.res.end(bodyBytes);
    return true;
  }
  ctx.res.write(bodyBytes);
  await pipeBody(ctx, upstream.body, false, undefined);
  return true;
}

/** Reads until the body ends or more than `max` bytes arrived; then leaves the rest paused. */
function readUpTo(body: Dispatcher.ResponseData['body'], max: number): Promise<{ chunks: Buffer[]; size: number }> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    const done = () => {
      body.off('data', onData);
      body.off('end', done);
      body.off('error', reject);
      resolve({ chunks, size });
    };
    const onData = (chunk: Buffer) => {
      chunks.push(chunk);
      size += chunk.length;
      if (size > max) {
        body.pause();
        done();
      }
    };
    body.on('data', onData);
    body.on('end', done);
    body.on('error', reject);
  });
}

function mapRequestError(error: unknown, options: UpstreamOptions): GatewayError {
  if (isGatewayError(error)) return error; // e.g. the body limit, raised while streaming the body up
  const code = (error as { code?: string }).code;
  if (error instanceof undiciErrors.HeadersTimeoutError || code === 'UND_ERR_HEADERS_TIMEOUT') {
    return new GatewayError('upstream_timeout', { message: `llama-swap sent no response headers within ${options.headersTimeoutMs} ms (GATEHOUSE_HEADERS_TIMEOUT).`, cause: error });
  }
  if (error instanceof undiciErrors.ConnectTimeoutError || code === 'UND_ERR_CONNECT_TIMEOUT') {
    return new GatewayError('upstream_timeout', { message: `Could not connect to llama-swap within ${options.connectTimeoutMs} ms (GATEHOUSE_CONNECT_TIMEOUT).`, cause: error });
  }
  if (code === 'ECONNREFUSED' || code === 'ENOTFOUND' || code === 'EAI_AGAIN' || code === 'EHOSTUNREACH' || code === 'ENETUNREACH') {
    return new GatewayError('upstream_unreachable', { message: `llama-swap at ${options.url.origin} could not be reached (${code}).`, cause: error });
  }
  return new GatewayError('upstream_bad_gateway', { message: `The connection to llama-swap failed before a response arrived${code ? ` (${code})` : ''}.`, cause: error });
}

function mapBodyError(error: Error): GatewayError {
  const code = (error as { code?: string }).code;
  if (error instanceof undiciErrors.BodyTimeoutError || code === 'UND_ERR_BODY_TIMEOUT') {
    return new GatewayError('upstream_idle_timeout', { message: 'The upstream stream went idle for longer than GATEHOUSE_IDLE_TIMEOUT.', cause: error });
  }
  return new GatewayError('upstream_stream_failed', { message: 'The upstream stream broke off before it was complete.', cause: error });
}

function declaredLength(value: string | undefined): number | undefined {
  if (value === undefined) return undefined;
  const n = Number(value);
  return Number.isSafeInteger(n) && n >= 0 ? n : undefined;
}

function isSmallOrUnsized(value: string | string[] | undefined): boolean {
  const text = headerString(value);
  return text === undefined || Number(text) <= MAX_TRANSLATABLE_ERROR_BYTES;
}

function headerString(value: string | string[] | undefined): string | undefined {
  return Array.isArray(value) ? value[0] : value;
}
