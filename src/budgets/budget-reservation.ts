/**
 * `budgetReservation`: a key's budget per calendar period (tokens, requests, GPU seconds; day,
 * week or month in `GATEHOUSE_TIMEZONE`). Once the body is read, a call reserves its share
 * (the TPM estimate of tokens, one request, no GPU time) beside the period's use and the other
 * calls in flight, atomically with the check that it fits (`BudgetStore.reserve`), or is
 * refused with 429 `budget_exceeded` and `Retry-After` until the period ends, never reaching
 * llama-swap. A call whose estimate (prompt and requested output) is more than what is left is
 * refused too, however little is used: the body is forwarded as sent, never rewritten to ask for
 * less, so the refusal says how much is left. When the call ends the reservation is settled
 * with what it used: its tokens (input + output), one request when it was sent upstream, and its
 * GPU time (`callGpuMs`).
 * GET and HEAD calls (model lists) are not counted.
 */
import { GatewayError } from '../core/errors.js';
import type { ProxyContext } from '../core/context.js';
import type { ProxyStep } from '../core/steps.js';
import { refuseWithHeaders, type RateLimitHeaders } from '../limits/limit-refusal.js';
import { DEFAULT_OUTPUT_TOKENS, estimateTokens } from '../limits/token-reservation.js';
import { requestedOutputTokens } from '../limits/requested-output-tokens.js';
import type { BudgetAmounts, BudgetCheck, BudgetDecision, BudgetKind, BudgetStore } from './budget-store.js';
import { periodWindow, type PeriodWindow } from './budget-period.js';
import { callGpuMs } from './gpu-time.js';

export interface BudgetReservationOptions {
  store: BudgetStore;
  /** Wall clock, ms (tests move it across period boundaries). */
  now: () => number;
  timeZone: string;
  /** The key's use in [from, to) as the request log holds it (zero without one). */
  seed: (keyId: string, from: number, to: number) => Promise<BudgetAmounts>;
  /** Sets the rate-limit headers of a refused call. */
  headers?: RateLimitHeaders;
  onLimited?: (keyName: string | undefined) => void;
  onError?: (error: unknown) => void;
}

type Budget = NonNullable<NonNullable<ProxyContext['decided']['caller']>['budget']>;

export function budgetReservation(options: BudgetReservationOptions): ProxyStep {
  const { store } = options;
  return function budgetReservationStep(ctx) {
    const caller = ctx.decided.caller;
    const budget = caller?.budget;
    const keyId = caller?.keyId;
    if (!budget || keyId === undefined || ctx.request.method === 'GET' || ctx.request.method === 'HEAD') return;
    const nowMs = options.now();
    const window = periodWindow(nowMs, budget.period, options.timeZone);
    const needTokens = budget.tokens === null ? 0 : estimateTokens(ctx);
    const check: BudgetCheck = {
      ...window,
      limits: {
        tokens: budget.tokens,
        requests: budget.requests,
        gpuMs: budget.gpuSeconds === null ? null : budget.gpuSeconds * 1000,
      },
      need: { tokens: needTokens, requests: 1, gpuMs: 0 },
      seed: () => options.seed(keyId, window.start, window.end),
    };
    const apply = (decision: BudgetDecision): void | Promise<void> => {
      ctx.decided.budgetUse = { ...window, ...decision.used };
      if (!decision.allowed) {
        options.onLimited?.(caller.keyName);
        const refusal =
          decision.kind === 'tokens' && decision.used.tokens < budget.tokens!
            ? tooLargeRefusal(ctx, needTokens, budget, decision.used.tokens, window, nowMs)
            : budgetRefusal(decision.kind, budget, decision.used, window, nowMs);
        return refuseWithHeaders(ctx, refusal, options.headers);
      }
      const reservation = decision.reservation;
      ctx.onDone.push(() => {
        const tokens = ctx.outcome.usage?.tokens();
        const gpuMs = callGpuMs(ctx);
        const used: BudgetAmounts = {
          tokens: tokens ? (tokens.input ?? 0) + (tokens.output ?? 0) : 0,
          requests: gpuMs === undefined ? 0 : 1,
          gpuMs: gpuMs ?? 0,
        };
        void Promise.resolve(store.settle(keyId, reservation, used)).catch((error: unknown) =>
          options.onError?.(error),
        );
      });
    };
    let decision: BudgetDecision | Promise<BudgetDecision>;
    try {
      decision = store.reserve(keyId, check);
    } catch (error) {
      throw unavailable(error);
    }
    if (decision instanceof Promise)
      return decision.then(apply, (error: unknown) => {
        throw unavailable(error);
      });
    return apply(decision);
  };
}

/** The period's use could not be read (the database is down): refused rather than let past its budget. */
function unavailable(error: unknown): GatewayError {
  if (error instanceof GatewayError) return error;
  return new GatewayError('service_unavailable', {
    message: "The API key's budget could not be checked (its use could not be read). Try again shortly.",
    cause: error,
    headers: { 'retry-after': '5' },
  });
}

const WORDING: Record<BudgetKind, (n: number) => string> = {
  tokens: (n) => `${n} token${n === 1 ? '' : 's'}`,
  requests: (n) => `${n} request${n === 1 ? '' : 's'}`,
  gpuSeconds: (n) => `${n} GPU second${n === 1 ? '' : 's'}`,
};
const NAMES: Record<BudgetKind, string> = { tokens: 'token', requests: 'request', gpuSeconds: 'GPU-time' };

/** Seconds until the period ends, at least 1: `Retry-After` of a refusal. */
function secondsLeft(window: PeriodWindow, nowMs: number): number {
  return Math.max(1, Math.ceil((window.end - nowMs) / 1000));
}

/**
 * The 429 of a call bigger than what is left of the token budget: how much it may use, how much
 * is left, and what to change; `Retry-After` until the period ends.
 */
function tooLargeRefusal(
  ctx: ProxyContext,
  need: number,
  budget: Budget,
  used: number,
  window: PeriodWindow,
  nowMs: number,
): GatewayError {
  const limit = budget.tokens!;
  const seconds = secondsLeft(window, nowMs);
  const resets = new Date(window.end).toISOString();
  const asked =
    requestedOutputTokens(ctx.decided.requestJson) === undefined
      ? `its prompt and ${DEFAULT_OUTPUT_TOKENS} output tokens, as it names no max_tokens`
      : 'its prompt and max_tokens';
  return new GatewayError('budget_exceeded', {
    message:
      `This call may use up to ${WORDING.tokens(need)} (${asked}), more than the ${WORDING.tokens(limit - used)} ` +
      `left of this API key's token budget of ${limit} per ${budget.period} (${used} are used or reserved). ` +
      `Ask for fewer output tokens, or wait until it resets at ${resets} (in ${seconds} s).`,
    headers: { 'retry-after': String(seconds) },
  });
}

/** The 429: which budget, how much of it is used, when it resets; `Retry-After` until then. */
function budgetRefusal(
  kind: BudgetKind,
  budget: Budget,
  used: BudgetAmounts,
  window: PeriodWindow,
  nowMs: number,
): GatewayError {
  const limit = budget[kind]!;
  const usedOfKind = kind === 'gpuSeconds' ? Math.floor(used.gpuMs / 1000) : used[kind];
  const seconds = secondsLeft(window, nowMs);
  return new GatewayError('budget_exceeded', {
    message:
      `The ${NAMES[kind]} budget of this API key is used up: it allows ${WORDING[kind](limit)} per ` +
      `${budget.period} and ${usedOfKind} are used or reserved. It resets at ` +
      `${new Date(window.end).toISOString()} (in ${seconds} s).`,
    headers: { 'retry-after': String(seconds) },
  });
}
