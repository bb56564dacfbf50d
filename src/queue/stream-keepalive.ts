/**
 * A streaming call that still has no answer from llama-swap after the keep-alive interval (it
 * waits in the queue, or its model loads) gets `200` and an event-stream head at once, then an
 * SSE comment every interval until llama-swap's first byte, so clients and proxies in between
 * do not give up on a silent connection. Comments are ignored by every SSE parser.
 */
import type { ProxyContext } from '../core/context.js';
import type { QueueClock } from './scheduler.js';

export interface KeepAlive {
  /** llama-swap's answer is going out (or the call ended): no more comments. */
  stop(): void;
}

/** Whether the call asked for a stream (`"stream": true` in its JSON body). */
export function asksForStream(ctx: ProxyContext): boolean {
  const member = ctx.decided.requestJson?.get('stream');
  return member?.kind === 'true' && !member.conflicting;
}

export function startKeepAlive(
  ctx: ProxyContext,
  intervalMs: number,
  clock: QueueClock,
  describe: () => string,
): KeepAlive {
  let stopped = false;
  let timer: unknown;
  const tick = (): void => {
    const { res } = ctx;
    if (stopped || ctx.outcome.clientAborted || res.writableEnded || res.destroyed) return;
    if (!res.headersSent) {
      // setHeader, not writeHead's object: an error after this reads the type back (send-error.ts).
      res.setHeader('content-type', 'text/event-stream; charset=utf-8');
      res.setHeader('cache-control', 'no-cache');
      res.setHeader('x-accel-buffering', 'no');
      res.setHeader('x-request-id', ctx.request.requestId);
      res.writeHead(200);
      ctx.outcome.answer(200);
      ctx.outcome.headersSent(true);
    }
    res.write(`: ${describe()}\n\n`);
    timer = clock.setTimeout(tick, intervalMs);
  };
  timer = clock.setTimeout(tick, intervalMs);
  return {
    stop() {
      stopped = true;
      clock.clearTimeout(timer);
    },
  };
}
