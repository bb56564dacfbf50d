/**
 * `tokenReservation`: the TPM half of admission that needs the body. Once the body is read, a
 * call on a key with a TPM limit reserves its estimate in the key's window, atomically with the
 * check that it fits (`LimitStore.reserveTokens`), or is refused with 429 and `Retry-After`.
 * When the call ends (`ctx.onDone`) the reservation is settled: given back, and the tokens the
 * response reported added instead.
 *
 * Estimate: JSON body bytes / 4 for the prompt (the JSON's own syntax makes it generous for
 * Latin text) plus the requested output (`requestedOutputTokens`), or DEFAULT_OUTPUT_TOKENS when
 * the call names no maximum. Other bodies (media uploads) reserve the output part only.
 */
import type { ProxyStep } from '../core/steps.js';
import type { ProxyContext } from '../core/context.js';
import type { LimitKind, ReservationDecision, TokenWindow } from './limit-store.js';
import { requestedOutputTokens } from './requested-output-tokens.js';
import { limitRefusal, refuseWithHeaders, type RateLimitHeaders } from './limit-refusal.js';

/** Output tokens reserved for a call that sets no `max_tokens` (or the like). */
export const DEFAULT_OUTPUT_TOKENS = 512;
export const PROMPT_BYTES_PER_TOKEN = 4;

export function tokenReservation(
  store: TokenWindow,
  onLimited?: (keyName: string | undefined, limit: LimitKind) => void,
  onError?: (error: unknown) => void,
  headers?: RateLimitHeaders,
): ProxyStep {
  return function tokenReservationStep(ctx) {
    const caller = ctx.decided.caller;
    const tpm = caller?.limits?.tpm;
    const keyId = caller?.keyId;
    if (tpm == null || keyId === undefined || ctx.request.method === 'GET' || ctx.request.method === 'HEAD') return;
    const apply = (decision: ReservationDecision): void | Promise<void> => {
      if (!decision.allowed) {
        onLimited?.(caller!.keyName, 'tpm');
        return refuseWithHeaders(ctx, limitRefusal(decision), headers);
      }
      const reservation = decision.reservation;
      ctx.onDone.push(() => {
        const tokens = ctx.outcome.usage?.tokens();
        const used = tokens ? (tokens.input ?? 0) + (tokens.output ?? 0) : 0;
        void Promise.resolve(store.settleTokens(keyId, reservation, used)).catch((error: unknown) => onError?.(error));
      });
    };
    const decision = store.reserveTokens(keyId, tpm, estimateTokens(ctx));
    if (decision instanceof Promise) return decision.then(apply);
    return apply(decision);
  };
}

/** Prompt bytes / 4 (JSON bodies) plus the requested or default output. */
export function estimateTokens(ctx: ProxyContext): number {
  const requested = requestedOutputTokens(ctx.decided.requestJson);
  const prompt = ctx.decided.requestJson ? Math.ceil((ctx.decided.body?.bytes ?? 0) / PROMPT_BYTES_PER_TOKEN) : 0;
  return prompt + (requested ?? DEFAULT_OUTPUT_TOKENS);
}
