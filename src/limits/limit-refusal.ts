/**
 * How a call over a limit is refused: the 429 `rate_limited` with `Retry-After`, thrown once the
 * rate-limit headers are on the answer (they say when to retry too).
 */
import { GatewayError } from '../core/errors.js';
import type { ProxyContext } from '../core/context.js';
import type { LimitKind } from './limit-store.js';

/** Sets the rate-limit headers on a call's response; a promise only when a store must be asked. */
export type RateLimitHeaders = (ctx: ProxyContext) => void | Promise<void>;

const LIMIT_WORDING: Record<LimitKind, (max: number) => string> = {
  rpm: (max) => `${max} request${max === 1 ? '' : 's'} per minute`,
  tpm: (max) => `${max} token${max === 1 ? '' : 's'} per minute`,
  concurrent: (max) => `${max} request${max === 1 ? '' : 's'} at a time`,
};

/** The 429 for a refused call, with `Retry-After` in whole seconds (at least 1). */
export function limitRefusal(decision: { limit: LimitKind; max: number; retryAfterMs: number }): GatewayError {
  const seconds = Math.max(1, Math.ceil(decision.retryAfterMs / 1000));
  return new GatewayError('rate_limited', {
    message:
      `Rate limit exceeded: this API key allows ${LIMIT_WORDING[decision.limit](decision.max)}. ` +
      `Retry after ${seconds} s.`,
    headers: { 'retry-after': String(seconds) },
  });
}

/** Throws `refusal` once the rate-limit headers are set on the answer (they say when to retry). */
export function refuseWithHeaders(
  ctx: ProxyContext,
  refusal: Error,
  headers: RateLimitHeaders | undefined,
): never | Promise<never> {
  const pending = headers?.(ctx);
  if (pending instanceof Promise)
    return pending.then(() => {
      throw refusal;
    });
  throw refusal;
}
