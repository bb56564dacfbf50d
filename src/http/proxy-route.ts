/**
 * The `/v1/*` handler: runs the middleware chain given by the route table, then forwards.
 * It works on Node's raw request/response instead of Fastify's wrappers because this is the
 * hot path (see docs/architecture.md, "Why /v1 bypasses Fastify's router").
 */
import { randomUUID } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Logger } from 'pino';
import { createAccessLog, type AccessLog } from '../logging/access-log.js';
import { newCallContext, type ProxyContext } from '../core/context.js';
import { redactSecrets } from '../core/redact-secrets.js';
import type { ProxyStep, TapFactory } from '../core/steps.js';
import type { Forwarder } from '../proxy/forward.js';
import { saneRequestId } from '../proxy/headers.js';
import { discardRest } from '../proxy/request-body.js';
import { isGatewayError } from '../core/errors.js';
import type { ProxyTrust } from '../auth/proxy-trust.js';
import { sendError } from './send-error.js';
import { wireFormatForCall, type WireFormat } from '../core/wire-format.js';

export interface ProxyRouteOptions {
  steps: readonly ProxyStep[];
  forwarder: Forwarder;
  logger: Logger;
  tap?: TapFactory;
  /** Told when a call starts (usage accounting hooks in here). */
  onStart?: (ctx: ProxyContext) => void;
  /** Counts calls in flight for graceful shutdown: `start` as a call arrives, `end` when its response closes. */
  inFlight?: { start(res: ServerResponse): void; end(): void };
  /** Whose `X-Forwarded-Proto`/`-For` to pass on; without it, none (`GATEHOUSE_TRUSTED_PROXIES`). */
  trust?: ProxyTrust;
  /** Every call's wire format, for a door that speaks one API (Ollama); default: from the path. */
  format?: WireFormat;
}

/** How much of an unwanted body is read and dropped before answering (see discardRest). */
const DISCARD_MAX_BYTES = 64 * 1024 * 1024;

export function createProxyRoute(options: ProxyRouteOptions): (req: IncomingMessage, res: ServerResponse) => void {
  const { steps, forwarder, logger, inFlight, trust } = options;
  const accessLog = createAccessLog(logger);

  async function run(ctx: ProxyContext): Promise<void> {
    try {
      for (const step of steps) {
        // Most steps answer synchronously: awaiting only real promises saves a promise and a
        // microtask turn per step and call on the hot path.
        let result = step(ctx);
        if (result instanceof Promise) result = await result;
        if (result === 'handled') return;
      }
      await forwarder.forward(ctx, options.tap);
    } catch (error) {
      if (ctx.outcome.clientAborted) return;
      // A client still sending its body (a 401 or 413 before the end) first gets to finish,
      // then reads the answer; one that sends far too much is answered and cut off.
      // A body that stopped arriving is not waited for again.
      const stalled = isGatewayError(error) && error.code === 'body_timeout';
      const drained = ctx.req.complete || (!stalled && (await discardRest(ctx.req, DISCARD_MAX_BYTES)));
      if (!drained) ctx.res.shouldKeepAlive = false;
      const committed = ctx.res.headersSent;
      const sent = sendError(ctx.res, error, ctx.request.format, ctx.request.requestId, ctx.decided.queueMs ?? 0);
      if (!committed) ctx.outcome.answer(sent.error.status);
      ctx.outcome.sent(sent.bytes);
      ctx.outcome.fail(sent.error.code);
      if (!isGatewayError(error))
        logger.error({ err: error, req_id: ctx.request.requestId }, 'unexpected error in the proxy path');
      // The client's message stays vague about llama-swap; its cause (address, errno) is for the operator.
      else if (error.status >= 500 && error.cause !== undefined)
        logger.warn({ err: error, req_id: ctx.request.requestId }, error.message);
      if (!drained) ctx.res.once('finish', () => ctx.req.destroy());
    }
  }

  return function proxyRoute(req, res) {
    const url = req.url ?? '/';
    const q = url.indexOf('?');
    const startedAt = performance.now();
    const ctx = newCallContext(req, res, {
      requestId: saneRequestId(req.headers['x-request-id']) ?? randomUUID(),
      format: options.format ?? wireFormatForCall(url, req.headers['anthropic-version']),
      method: req.method ?? 'GET',
      path: redactSecrets(q < 0 ? url : url.slice(0, q)),
      url,
      startedAt,
      clientAddress: req.socket.remoteAddress ?? '',
      proto: trust ? trust.protocol(req) : 'http',
      priorForwardedFor: trust?.forwardedFor(req),
    });
    // The one 'close' listener of the call: whether the client left, the access line, the
    // completion hooks, then the upstream request is aborted if it still runs (forward sets
    // onClientGone meanwhile).
    res.once('close', () => {
      ctx.outcome.closed(res.writableFinished);
      finish(ctx, logger, accessLog);
      ctx.onClientGone?.();
      inFlight?.end();
    });
    inFlight?.start(res);
    options.onStart?.(ctx);
    void run(ctx);
  };
}

function finish(ctx: ProxyContext, logger: Logger, accessLog: AccessLog): void {
  const { request, decided, outcome } = ctx;
  const durationMs = performance.now() - request.startedAt;
  // From here on the model name is only reported (log, usage, metrics): a key sent as the model
  // is redacted like one pasted into the path.
  if (decided.model !== undefined) decided.model = redactSecrets(decided.model);
  // The one access-log line: named fields only, never headers, so no credential can leak.
  accessLog({
    req_id: request.requestId,
    method: request.method,
    path: request.path,
    status: outcome.status,
    model: decided.model,
    key: decided.caller?.keyName,
    ms: Math.round(durationMs * 100) / 100,
    bytes_in: decided.body?.received() ?? 0,
    bytes_out: outcome.bytesOut,
    stream: outcome.streamed || undefined,
    door: request.format === 'ollama' ? 'ollama' : undefined,
    error: outcome.errorClass,
  });
  for (const done of ctx.onDone) {
    try {
      done(ctx);
    } catch (error) {
      logger.error({ err: error, req_id: ctx.request.requestId }, 'request completion hook failed');
    }
  }
}
