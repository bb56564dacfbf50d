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

/**
 * Rewrites llama-swap's answer for a caller that speaks another API (the Ollama door). The usage
 * tap still reads llama-swap's bytes; the client gets what this returns.
 */
export interface ResponseTranslator {
  /** The client's `Content-Type` in place of llama-swap's. */
  readonly contentType: string;
  /** The client's bytes for one chunk of llama-swap's body ('' while nothing is complete). */
  chunk(chunk: Buffer): string;
  /** The client's last bytes once llama-swap's body is complete. */
  end(): string;
}

/** What a door sends llama-swap instead of the client's request, and how the answer comes back. */
export interface UpstreamTranslation {
  /** llama-swap's path (`/v1/chat/completions`...), forwarded in place of the client's. */
  readonly path: string;
  /** The translator of a successful answer; undefined: relayed as it is. */
  response(status: number, contentType: string | undefined): ResponseTranslator | undefined;
}
