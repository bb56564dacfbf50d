/**
 * The `/v1` chain's extension points: a step decides one thing about a call before it is
 * forwarded; a response tap watches the answer on the side.
 */
import type { ProxyContext } from './context.js';
import type { SseFrameHandler } from './sse-decoder.js';

/**
 * One link of the chain: enforces one thing, throws a `GatewayError` to stop the call, or
 * returns `'handled'` when it answered the call itself (nothing is forwarded then).
 */
export type ProxyStep = (ctx: ProxyContext) => StepResult | Promise<StepResult>;
export type StepResult = void | 'handled';

/** Observes a response body on the side (usage accounting); must never delay a byte. */
export interface ResponseTap {
  onChunk(chunk: Buffer): void;
  /** Each frame of an event stream, from the stream's one SSE parser (run by the forwarder). */
  onFrame?: SseFrameHandler;
  onEnd(outcome: 'complete' | 'aborted' | 'failed'): void;
}
export type TapFactory = (
  ctx: ProxyContext,
  status: number,
  contentType: string | undefined,
) => ResponseTap | undefined;
