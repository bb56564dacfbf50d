import type { ProxyContext } from '../core/context.js';

/**
 * A call's GPU time: llama.cpp's own `timings` when the response carried them, else the time
 * from sending it upstream to its end; undefined when it was never sent (refused, queued out)
 * or only read (GET, HEAD).
 */
export function callGpuMs(ctx: ProxyContext): number | undefined {
  const started = ctx.outcome.upstreamStartedAt;
  // Model lists and other reads are no model work.
  if (started === undefined || ctx.request.method === 'GET' || ctx.request.method === 'HEAD') return undefined;
  return ctx.outcome.usage?.tokens()?.gpuMs ?? performance.now() - started;
}
