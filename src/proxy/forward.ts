/**
 * Forwards one call to llama-swap with undici's `Pool#dispatch` (a handler, with no response
 * stream, promise or AbortController per call, unlike `fetch` and `Pool#request`) and streams the answer
 * back chunk by chunk with backpressure. The client's disconnect aborts the upstream request
 * at once, before or after response headers.
 */
import type { IncomingHttpHeaders } from 'node:http';
import { errors as undiciErrors, type Dispatcher } from 'undici';
import { GatewayError, isGatewayError } from '../core/errors.js';
import { terminalStreamEvent } from '../core/render-error.js';
import { QUEUE_MS_HEADER, type ProxyContext } from '../core/context.js';
import type { ResponseTap, TapFactory } from '../core/steps.js';
import type { ResponseTranslator } from '../core/translation.js';
import { openProxyPool, type ProxyPoolOptions } from '../upstream-pools.js';
import { clientResponseHeaders, upstreamRequestHeaders } from './headers.js';
import { MAX_TRANSLATABLE_ERROR_BYTES, translateUpstreamError } from './upstream-errors.js';
import type { SseParser } from '../core/sse-decoder.js';
import { watchStreamEnd, type StreamEndWatcher } from './stream-end.js';
import { streamFrames } from './stream-frames.js';

/** The pool's options (`upstream-pools.ts`), and the key llama-swap may ask for. */
export interface UpstreamOptions extends ProxyPoolOptions {
  apiKey: string | undefined;
}

export interface Forwarder {
  forward(ctx: ProxyContext, tapFactory?: TapFactory): Promise<void>;
  close(): Promise<void>;
}

/** What the forwarder uses of undici's `Pool`: a dispatch with a handler, and close. */
export type UpstreamDispatcher = Pick<Dispatcher, 'dispatch' | 'close'>;

export function createForwarder(
  options: UpstreamOptions,
  pool: UpstreamDispatcher = openProxyPool(options),
): Forwarder {
  const basePath = options.url.pathname.replace(/\/+$/, '');

  function forward(ctx: ProxyContext, tapFactory?: TapFactory): Promise<void> {
    const { req } = ctx;
    const body = ctx.decided.body;
    const headers = upstreamRequestHeaders(req.headers, {
      requestId: ctx.request.requestId,
      clientAddress: ctx.request.clientAddress,
      proto: ctx.request.proto,
      priorForwardedFor: ctx.request.priorForwardedFor,
      upstreamApiKey: options.apiKey,
      contentLength: body ? body.bytes : declaredLength(req.headers['content-length']),
    });
    if (ctx.decided.translation) {
      // A translated body is the JSON the door wrote, whatever the client declared: llama-swap
      // reads the model from a form when the type is not JSON, which would pass the allow-list by.
      headers['content-type'] = 'application/json';
      delete headers['content-encoding'];
    }
    const dispatchOptions: Dispatcher.DispatchOptions = {
      // A door that speaks another API (Ollama) names llama-swap's path; /v1 forwards the client's.
      path: basePath + (ctx.decided.translation?.path ?? ctx.request.url),
      method: ctx.request.method,
      headers,
      body: (body?.body ?? null) as Dispatcher.DispatchOptions['body'],
    };
    return new Promise<void>((resolve, reject) => {
      // A body held whole can be sent again; a streamed one is gone once sent.
      const resendable = isResendable(dispatchOptions.body);
      // A closed connection under a written request leaves unknown whether the upstream ran it.
      const safeToRepeat = resendable && IDEMPOTENT_METHODS.has(ctx.request.method);
      const queue = ctx.decided.queue;
      const send = (staleRetry: boolean): void => {
        ctx.outcome.forwarded();
        pool.dispatch(
          dispatchOptions,
          new Exchange(ctx, tapFactory, options, resolve, reject, {
            staleConnection: safeToRepeat && staleRetry ? () => send(false) : undefined,
            busy:
              resendable && queue
                ? (retryAfterMs, error) => {
                    queue.requeue(retryAfterMs).then((again) => (again ? send(true) : reject(error)), reject);
                  }
                : undefined,
          }),
        );
      };
      send(true);
    });
  }

  return {
    forward,
    close: () => pool.close(),
  };
}

/**
 * RFC 9110 §9.2.2: only these may be sent again after a failure that leaves unknown whether the
 * upstream acted. undici itself moves a call to a new connection when the old one closed before
 * the call was written; an error that reaches the handler means its bytes went out.
 */
const IDEMPOTENT_METHODS: ReadonlySet<string> = new Set(['GET', 'HEAD', 'OPTIONS', 'TRACE', 'PUT', 'DELETE']);

/** How a call may be sent again, when nothing of the answer reached the client yet. */
interface SendAgain {
  /** Once more on a fresh connection (only for the first attempt of an idempotent call). */
  staleConnection: (() => void) | undefined;
  /** Back into the admission queue after llama-swap's own 429; `error` is the answer if time runs out. */
  busy: ((retryAfterMs: number | undefined, error: GatewayError) => void) | undefined;
}

/**
 * One call's trip to llama-swap, as an undici dispatch handler: the response's bytes go from
 * undici's parser straight to the client's socket, with no response stream, promise or
 * AbortController in between. Backpressure: a full client socket pauses the upstream
 * (`controller.pause()`), its `drain` resumes it. The client leaving aborts the upstream request,
 * before or after its headers.
 *
 * A small error response (status >= 400) is held back until complete: when llama-swap itself
 * produced it, the client gets a proper error in its own wire format instead (relayErrorBody).
 */
class Exchange implements Dispatcher.DispatchHandler {
  #controller: Dispatcher.DispatchController | undefined;
  #tap: ResponseTap | undefined;
  /** Rewrites the answer for a door that speaks another API; the tap still reads llama-swap's bytes. */
  #translator: ResponseTranslator | undefined;
  #isSse = false;
  /** Whether a 2xx stream on a known API path reached its terminal frame (stream-end.ts). */
  #streamEnd: StreamEndWatcher | undefined;
  /** The stream's one SSE parser, feeding the tap's and the end check's frames; only when one reads them. */
  #frames: SseParser | undefined;
  /** The body length llama-swap announced (Content-Length), when it did. */
  #length: number | undefined;
  /** The client's response was ended with the body's last chunk. */
  #ended = false;
  #started = false;
  #settled = false;
  /** A 'drain' listener is on the client's socket (only while the upstream is paused for it). */
  #waitingForDrain = false;
  /** Set while an error body is being held back: its chunks, until decided. */
  #held:
    | { chunks: Buffer[]; size: number; status: number; headers: IncomingHttpHeaders; contentType: string | undefined }
    | undefined;

  constructor(
    private readonly ctx: ProxyContext,
    private readonly tapFactory: TapFactory | undefined,
    private readonly options: UpstreamOptions,
    private readonly resolve: () => void,
    private readonly reject: (error: unknown) => void,
    private readonly again: SendAgain,
  ) {
    // The route's one 'close' listener calls this (proxy-route.ts): no listener of our own.
    ctx.onClientGone = this.#onClientClose;
  }

  onRequestStart(controller: Dispatcher.DispatchController): void {
    this.#controller = controller;
    // The client left while the request waited for a connection.
    if (this.ctx.outcome.clientAborted) controller.abort(new Error('the client closed the connection'));
  }

  onResponseStart(_controller: Dispatcher.DispatchController, statusCode: number, headers: IncomingHttpHeaders): void {
    this.#started = true;
    const contentType = headerString(headers['content-type']);
    if (statusCode >= 400 && isSmallOrUnsized(headers['content-length'])) {
      // Its status is the client's only once it is relayed as it is (relayHeld).
      this.#held = { chunks: [], size: 0, status: statusCode, headers, contentType };
      return;
    }
    this.#sendHeaders(statusCode, headers, contentType);
  }

  onResponseData(controller: Dispatcher.DispatchController, chunk: Buffer): void {
    const held = this.#held;
    if (held) {
      held.chunks.push(chunk);
      held.size += chunk.length;
      // Too big to be one of llama-swap's own errors: a model server's, relayed as it is.
      if (held.size > MAX_TRANSLATABLE_ERROR_BYTES) this.#relayHeld();
      return;
    }
    const { ctx } = this;
    const translator = this.#translator;
    if (translator) {
      this.#tap?.onChunk(chunk);
      this.#frames?.push(chunk);
      const out = translator.chunk(chunk);
      if (out === '') return;
      ctx.outcome.sent(Buffer.byteLength(out));
      if (!ctx.res.write(out)) this.#pauseUntilDrain(controller);
      return;
    }
    ctx.outcome.sent(chunk.length);
    this.#tap?.onChunk(chunk);
    this.#frames?.push(chunk);
    if (ctx.outcome.bytesOut === this.#length) {
      // The last chunk of a body of known length: end() sends it (and the headers, when still
      // waiting) in one write, where write() then end() took two system calls.
      this.#ended = true;
      ctx.res.end(chunk);
      return;
    }
    if (!ctx.res.write(chunk)) this.#pauseUntilDrain(controller);
  }

  onResponseEnd(): void {
    const held = this.#held;
    if (held) {
      const bodyBytes = held.chunks.length === 1 ? held.chunks[0]! : Buffer.concat(held.chunks);
      const translated = translateUpstreamError({
        status: held.status,
        contentType: held.contentType,
        body: bodyBytes,
        retryAfter: headerString(held.headers['retry-after']),
        allow: headerString(held.headers.allow),
        method: this.ctx.request.method,
        path: this.#upstreamPath(),
        format: this.ctx.request.format,
      });
      if (translated?.status === 429 && this.again.busy) {
        // llama-swap's own concurrency limit: back in the queue, never the client's answer.
        this.#settled = true;
        this.#detach();
        this.again.busy(retryAfterMs(headerString(held.headers['retry-after'])), translated);
        return;
      }
      if (translated) {
        this.ctx.outcome.fail('upstream_error');
        this.#held = undefined;
        this.#fail(translated);
        return;
      }
      this.#relayHeld();
    }
    if (!this.#ended) {
      const frames = this.#frames;
      if (this.#streamEnd && frames && !this.#streamEnd.endedWithTerminalFrame(frames))
        return this.#endTruncated(frames);
      const last = this.#translator?.end() ?? '';
      this.ctx.outcome.sent(Buffer.byteLength(last));
      this.ctx.res.end(last);
    }
    this.#finish('complete');
  }

  /**
   * llama-swap ended a stream cleanly but before its terminal frame (what a crashed llama-server
   * looks like through it): one terminal error event, so the client does not take it for whole.
   */
  #endTruncated(frames: SseParser): void {
    const { ctx } = this;
    ctx.outcome.fail('upstream_truncated');
    const error = new GatewayError('upstream_truncated');
    // A translated stream is whole lines already; an SSE stream may need its frame closed first.
    const lead = this.#translator ? '' : frames.closingBreaks();
    ctx.res.end(lead + terminalStreamEvent(error, ctx.request.format));
    this.#finish('failed');
  }

  onResponseError(_controller: Dispatcher.DispatchController, error: Error): void {
    const { ctx } = this;
    if (ctx.outcome.clientAborted) {
      this.#finish('aborted');
      return;
    }
    if (!this.#started && this.again.staleConnection && isStaleConnection(error)) {
      // llama-server closed a kept-alive connection as this idempotent call went out on it:
      // nothing was answered, so the call goes once more, on a fresh connection.
      this.#settled = true;
      this.#detach();
      this.again.staleConnection();
      return;
    }
    if (!this.#started || (this.#held && !ctx.res.headersSent)) {
      // No byte has gone to the client: the caller renders the error in the client's format.
      this.#fail(this.#started ? mapBodyError(error) : mapRequestError(error, this.options));
      return;
    }
    const mapped = mapBodyError(error);
    ctx.outcome.fail(mapped.code);
    if (this.#isSse && !ctx.res.destroyed) {
      // Status is already sent: end with one terminal error event in the stream's own format.
      ctx.res.end(terminalStreamEvent(mapped, ctx.request.format));
    } else {
      ctx.res.destroy();
    }
    this.#finish('failed');
  }

  #sendHeaders(status: number, headers: IncomingHttpHeaders, contentType: string | undefined): void {
    const { ctx } = this;
    ctx.decided.queue?.stopKeepAlive();
    if (ctx.res.headersSent) return this.#continueEarlyStream(status, contentType);
    ctx.outcome.answer(status);
    const isSse = contentType?.startsWith('text/event-stream') === true;
    this.#isSse = isSse;
    const outHeaders = clientResponseHeaders(headers);
    outHeaders['x-request-id'] = ctx.request.requestId;
    outHeaders[QUEUE_MS_HEADER] = String(Math.round(ctx.decided.queueMs ?? 0));
    const translator = ctx.decided.translation?.response(status, contentType);
    if (translator) {
      // The body changes length and type; its length stays unknown (chunked).
      this.#translator = translator;
      outHeaders['content-type'] = translator.contentType;
      delete outHeaders['content-length'];
    } else if (ctx.request.method !== 'HEAD') this.#length = declaredLength(headerString(headers['content-length']));
    if (isSse) {
      // Proxies in front of us (nginx) must not buffer the stream either.
      outHeaders['x-accel-buffering'] = 'no';
      outHeaders['cache-control'] ??= 'no-cache';
    }
    ctx.res.writeHead(status, outHeaders);
    // A stream's headers go out now, not with its first event: the client sees 200 while a
    // model loads. Other bodies send headers with their first chunk (one write, not two).
    if (isSse) ctx.res.flushHeaders();
    ctx.outcome.headersSent(isSse);
    this.#tap = this.tapFactory?.(ctx, status, contentType);
    if (isSse) this.#watchFrames(status);
  }

  /** The end-of-stream check (2xx streams on watched paths) and the one parser of the stream's frames. */
  #watchFrames(status: number): void {
    const end = status < 300 && this.ctx.request.method !== 'HEAD' ? watchStreamEnd(this.#upstreamPath()) : undefined;
    this.#streamEnd = end;
    this.#frames = streamFrames(this.#tap, end);
  }

  /** The path llama-swap was asked (a door's translation names its own). */
  #upstreamPath(): string {
    return this.ctx.decided.translation?.path ?? this.ctx.request.path;
  }

  /**
   * The keep-alive already sent `200` and an event-stream head: llama-swap's bytes follow
   * unchanged; the tap and the end-of-stream check watch them as for any stream.
   */
  #continueEarlyStream(status: number, contentType: string | undefined): void {
    const { ctx } = this;
    this.#isSse = true;
    this.#tap = this.tapFactory?.(ctx, status, contentType);
    this.#watchFrames(status);
  }

  /** A held-back error body that is not llama-swap's: status, headers and bytes unchanged. */
  #relayHeld(): void {
    const held = this.#held!;
    const { ctx } = this;
    if (ctx.res.headersSent) {
      // The keep-alive committed to 200: the model server's error becomes the stream's last event.
      this.#held = undefined;
      ctx.outcome.fail('upstream_status');
      const text = Buffer.concat(held.chunks).toString('utf8').slice(0, 1000);
      this.#fail(new GatewayError('upstream_error', { status: held.status, message: text || `HTTP ${held.status}` }));
      return;
    }
    ctx.decided.queue?.stopKeepAlive();
    this.#held = undefined;
    const outHeaders = clientResponseHeaders(held.headers);
    outHeaders['x-request-id'] = ctx.request.requestId;
    outHeaders[QUEUE_MS_HEADER] = String(Math.round(ctx.decided.queueMs ?? 0));
    ctx.outcome.answer(held.status);
    ctx.res.writeHead(held.status, outHeaders);
    ctx.outcome.headersSent();
    ctx.outcome.fail('upstream_status');
    for (const chunk of held.chunks) {
      ctx.outcome.sent(chunk.length);
      if (!ctx.res.write(chunk) && this.#controller) this.#pauseUntilDrain(this.#controller);
    }
  }

  /** Backpressure: the client's socket is full, so the upstream waits for its 'drain'. */
  #pauseUntilDrain(controller: Dispatcher.DispatchController): void {
    controller.pause();
    if (this.#waitingForDrain) return;
    this.#waitingForDrain = true;
    this.ctx.res.once('drain', this.#onDrain);
  }

  readonly #onDrain = (): void => {
    this.#waitingForDrain = false;
    this.#controller?.resume();
  };

  readonly #onClientClose = (): void => {
    const { ctx } = this;
    // The route has told the outcome whether the response closed unfinished (CallOutcome.closed).
    if (!ctx.outcome.clientAborted || this.#settled) return;
    const controller = this.#controller;
    // Without a controller yet, onRequestStart aborts as soon as the request gets a connection.
    if (controller && !controller.aborted) controller.abort(new Error('the client closed the connection'));
  };

  #finish(outcome: 'complete' | 'aborted' | 'failed'): void {
    if (this.#settled) return;
    this.#settled = true;
    this.#detach();
    this.#tap?.onEnd(outcome);
    this.resolve();
  }

  #fail(error: unknown): void {
    if (this.#settled) return;
    this.#settled = true;
    this.#detach();
    this.reject(error);
  }

  #detach(): void {
    this.ctx.onClientGone = undefined;
    if (this.#waitingForDrain) {
      this.#waitingForDrain = false;
      this.ctx.res.off('drain', this.#onDrain);
    }
  }
}

function mapRequestError(error: unknown, options: UpstreamOptions): GatewayError {
  if (isGatewayError(error)) return error; // e.g. the body limit, raised while streaming the body up
  const code = (error as { code?: string }).code;
  if (error instanceof undiciErrors.HeadersTimeoutError || code === 'UND_ERR_HEADERS_TIMEOUT') {
    return new GatewayError('upstream_timeout', {
      message: `llama-swap sent no response headers within ${options.headersTimeoutMs} ms (GATEHOUSE_HEADERS_TIMEOUT).`,
      cause: error,
    });
  }
  if (error instanceof undiciErrors.ConnectTimeoutError || code === 'UND_ERR_CONNECT_TIMEOUT') {
    return new GatewayError('upstream_timeout', {
      message: `Could not connect to llama-swap within ${options.connectTimeoutMs} ms (GATEHOUSE_CONNECT_TIMEOUT).`,
      cause: error,
    });
  }
  if (
    code === 'ECONNREFUSED' ||
    code === 'ENOTFOUND' ||
    code === 'EAI_AGAIN' ||
    code === 'EHOSTUNREACH' ||
    code === 'ENETUNREACH'
  ) {
    // Its address stays out of the client's answer (the logged cause names it).
    return new GatewayError('upstream_unreachable', {
      message: `llama-swap could not be reached (${code}).`,
      cause: error,
    });
  }
  return new GatewayError('upstream_bad_gateway', {
    message: `The connection to llama-swap failed before a response arrived${code ? ` (${code})` : ''}.`,
    cause: error,
  });
}

function mapBodyError(error: Error): GatewayError {
  const code = (error as { code?: string }).code;
  if (error instanceof undiciErrors.BodyTimeoutError || code === 'UND_ERR_BODY_TIMEOUT') {
    return new GatewayError('upstream_idle_timeout', {
      message: 'The upstream stream went idle for longer than GATEHOUSE_IDLE_TIMEOUT.',
      cause: error,
    });
  }
  return new GatewayError('upstream_stream_failed', {
    message: 'The upstream stream broke off before it was complete.',
    cause: error,
  });
}

/**
 * A reused connection that the upstream closed before any byte of this call's response:
 * undici's SocketError for a closed socket, whose SocketInfo shows bytes read before (earlier
 * responses on it). A fresh connection (nothing read) is not retried: the upstream really failed.
 * Other SocketErrors ('bad response'...) mean response bytes did arrive: never retried.
 */
function isStaleConnection(error: Error): boolean {
  if ((error as { code?: string }).code !== 'UND_ERR_SOCKET') return false;
  if (error.message !== 'other side closed' && error.message !== 'closed') return false;
  const socket = (error as { socket?: { bytesRead?: number } | null }).socket;
  return (socket?.bytesRead ?? 0) > 0;
}

function isResendable(body: Dispatcher.DispatchOptions['body']): boolean {
  return (
    body === null || body === undefined || Buffer.isBuffer(body) || Array.isArray(body) || typeof body === 'string'
  );
}

/** `Retry-After` in seconds (what llama-swap sends), as ms; undefined when absent or a date. */
function retryAfterMs(value: string | undefined): number | undefined {
  const seconds = value === undefined ? NaN : Number(value);
  return Number.isFinite(seconds) && seconds >= 0 ? seconds * 1000 : undefined;
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
