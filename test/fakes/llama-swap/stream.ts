/**
 * Writes fake upstream responses with the timing knobs applied: first-token delay, pacing,
 * a mid-stream stall, and a mid-stream failure. Also the three ways a response can be cut.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { RequestRecord } from './recorder.js';
import { sleep } from './timing.js';
import type { Knobs } from './types.js';

export interface ResponderContext {
  req: IncomingMessage;
  res: ServerResponse;
  rec: RequestRecord;
  knobs: Knobs;
  /** Aborts when the client goes away or the simulator closes. */
  clientGone: AbortSignal;
  /** Aborts when the serving process is stopped under the request or the request is cancelled. */
  cut: AbortSignal;
  /** Token counts of the generation, for llama-swap's activity log; set by the endpoint. */
  tokens?: { input: number; output: number };
}

/**
 * Status and headers as llama-server writes them: every response carries
 * `Access-Control-Allow-Origin` set to the request's `Origin`, empty when there is none
 * (`tools/server/server-http.cpp`, pre-routing handler). After llama-swap's `sendLoadingState`
 * text the status line is gone already; the body simply continues.
 */
function writeHead(ctx: ResponderContext, status: number, headers: Record<string, string>): void {
  if (ctx.res.headersSent) return;
  ctx.res.writeHead(status, { ...headers, 'Access-Control-Allow-Origin': ctx.req.headers.origin ?? '' });
}

/**
 * Cut a response the way llama-swap's clients see a dying upstream: before headers a 502 with an
 * empty body (Go ReverseProxy default); after headers per `knobs.failMode`.
 */
export function cutResponse(ctx: ResponderContext): void {
  const { res, rec } = ctx;
  if (res.writableEnded || res.destroyed) return;
  if (!res.headersSent) {
    res.writeHead(502, { 'Content-Length': 0 });
    res.end();
    return;
  }
  rec.cutByServer = true;
  if (ctx.knobs.failMode === 'end') {
    res.end();
    return;
  }
  // Like a crashed process: what was written still arrives, then the connection closes without
  // the terminating chunk. `destroy()` alone would drop bytes still buffered in the socket.
  const socket = res.socket;
  if (!socket) {
    res.destroy();
    return;
  }
  socket.end();
  setTimeout(() => socket.destroy(), 1000).unref();
}

function stopped(ctx: ResponderContext): boolean {
  return ctx.clientGone.aborted || ctx.res.destroyed;
}

async function write(res: ServerResponse, chunk: string | Buffer): Promise<void> {
  if (!res.write(chunk)) {
    await new Promise<void>((resolve) => {
      const done = () => {
        res.off('drain', done);
        res.off('close', done);
        resolve();
      };
      res.on('drain', done);
      res.on('close', done);
    });
  }
}

/** An SSE (or other chunked) response, one frame per write. */
export async function respondFrames(
  ctx: ResponderContext,
  headers: Record<string, string>,
  frames: string[],
): Promise<void> {
  const { res, knobs } = ctx;
  const cancelled = AbortSignal.any([ctx.clientGone, ctx.cut]);
  writeHead(ctx, 200, headers);
  res.flushHeaders();
  if (!(await sleep(knobs.firstTokenDelayMs, cancelled))) return onCancel(ctx);
  for (let i = 0; i < frames.length; i++) {
    if (i > 0 && knobs.tokensPerSecond > 0) {
      if (!(await sleep(1000 / knobs.tokensPerSecond, cancelled))) return onCancel(ctx);
    }
    if (knobs.stallAfterChunks !== null && i === knobs.stallAfterChunks && knobs.stallMs > 0) {
      if (!(await sleep(knobs.stallMs, cancelled))) return onCancel(ctx);
    }
    if (knobs.failAfterChunks !== null && i >= knobs.failAfterChunks) {
      // A crashed upstream: no terminal frame, no [DONE].
      return cutResponse(ctx);
    }
    if (stopped(ctx)) return;
    await write(res, frames[i]!);
    if (ctx.cut.aborted) return cutResponse(ctx);
  }
  if (!stopped(ctx)) res.end();
}

/** A complete body, sent after the time the generation would have taken. */
export async function respondBody(
  ctx: ResponderContext,
  status: number,
  headers: Record<string, string>,
  body: string | Buffer,
  generatedTokens = 0,
): Promise<void> {
  const { knobs } = ctx;
  const cancelled = AbortSignal.any([ctx.clientGone, ctx.cut]);
  const generationMs = knobs.tokensPerSecond > 0 ? (generatedTokens * 1000) / knobs.tokensPerSecond : 0;
  if (!(await sleep(knobs.firstTokenDelayMs + generationMs, cancelled))) return onCancel(ctx);
  if (stopped(ctx)) return;
  const buf = typeof body === 'string' ? Buffer.from(body) : body;
  writeHead(ctx, status, { ...headers, 'Content-Length': String(buf.length) });
  ctx.res.end(buf);
}

function onCancel(ctx: ResponderContext): void {
  if (ctx.clientGone.aborted) return;
  cutResponse(ctx);
}
