/**
 * Rate-limit headers on `/v1` answers of keys with an RPM or TPM limit or a budget, so agents
 * can back off politely: OpenAI's `x-ratelimit-{limit,remaining,reset}-{requests,tokens}`
 * (reset as a Go-style duration, `6m0s`, as OpenAI sends it) and, on `/v1/messages*`,
 * Anthropic's `anthropic-ratelimit-{requests,tokens}-{limit,remaining,reset}` (reset as RFC 3339).
 * Each pair comes from the tightest of the key's limits of that kind: the one with the least
 * left (the per-minute window or the period's budget). Keys without those limits cost nothing.
 *
 * The headers are set on the response before its head is written (`setHeader`), so whoever
 * answers (the forwarder, a stream, an error) sends them.
 */
import type { ProxyContext } from '../core/context.js';
import type { ProxyStep } from '../core/steps.js';
import type { LimitSnapshot, WindowReader } from './limit-store.js';
import type { RateLimitHeaders } from './limit-refusal.js';

type BudgetUse = NonNullable<ProxyContext['decided']['budgetUse']>;
type BudgetPeriod = NonNullable<NonNullable<ProxyContext['decided']['caller']>['budget']>['period'];

/** One limit as the headers show it. */
export interface Quota {
  limit: number;
  remaining: number;
  resetMs: number;
}

export interface RateLimitHeadersOptions {
  windows: WindowReader;
  /** Wall clock, ms (Anthropic's reset times). */
  now: () => number;
  /** The key's use of its budget in the period holding now, reservations counted (the budget store's). */
  budgetUse: (keyId: string, period: BudgetPeriod) => Promise<BudgetUse>;
}

export function createRateLimitHeaders(options: RateLimitHeadersOptions): RateLimitHeaders {
  return function rateLimitHeaders(ctx) {
    const caller = ctx.decided.caller;
    const limits = caller?.limits;
    const budget = caller?.budget;
    const keyId = caller?.keyId;
    const windowed = limits !== undefined && (limits.rpm !== null || limits.tpm !== null);
    if (keyId === undefined || (!windowed && !budget)) return;
    const nowMs = options.now();
    const snapshot = windowed ? options.windows.peek(keyId, limits) : {};
    const use = ctx.decided.budgetUse;
    if (budget && !use) {
      const pending = options.budgetUse(keyId, budget.period);
      return Promise.all([snapshot, pending]).then(([s, used]) => write(ctx, s, used, nowMs));
    }
    if (snapshot instanceof Promise) return snapshot.then((s) => write(ctx, s, use, nowMs));
    write(ctx, snapshot, use, nowMs);
  };

  function write(
    ctx: ProxyContext,
    snapshot: LimitSnapshot,
    use: ProxyContext['decided']['budgetUse'],
    nowMs: number,
  ): void {
    const caller = ctx.decided.caller!;
    const limits = caller.limits;
    const budget = caller.budget;
    const resetMs = use ? use.end - nowMs : 0;
    const requests = tightest(
      limits?.rpm != null && snapshot.requests
        ? quota(limits.rpm, snapshot.requests.used, snapshot.requests.resetMs)
        : undefined,
      budget?.requests != null && use ? quota(budget.requests, use.requests, resetMs) : undefined,
    );
    const tokens = tightest(
      limits?.tpm != null && snapshot.tokens
        ? quota(limits.tpm, snapshot.tokens.used, snapshot.tokens.resetMs)
        : undefined,
      budget?.tokens != null && use ? quota(budget.tokens, use.tokens, resetMs) : undefined,
    );
    const res = ctx.res;
    if (res.headersSent) return;
    const anthropic = ctx.request.path.startsWith('/v1/messages');
    for (const [kind, q] of [
      ['requests', requests],
      ['tokens', tokens],
    ] as const) {
      if (!q) continue;
      res.setHeader(`x-ratelimit-limit-${kind}`, String(q.limit));
      res.setHeader(`x-ratelimit-remaining-${kind}`, String(q.remaining));
      res.setHeader(`x-ratelimit-reset-${kind}`, goDuration(q.resetMs));
      if (anthropic) {
        res.setHeader(`anthropic-ratelimit-${kind}-limit`, String(q.limit));
        res.setHeader(`anthropic-ratelimit-${kind}-remaining`, String(q.remaining));
        res.setHeader(`anthropic-ratelimit-${kind}-reset`, rfc3339(nowMs + q.resetMs));
      }
    }
  }
}

/**
 * The step form, for the calls of one kind: reads (GET, HEAD: model lists, which a step may
 * answer itself, and which reserve nothing) right after the body is read; the others after
 * their reservations, so the headers count the call itself.
 */
export function rateLimitHeadersStep(headers: RateLimitHeaders, calls: 'reads' | 'writes'): ProxyStep {
  const reads = calls === 'reads';
  return function rateLimitHeadersStep(ctx) {
    const method = ctx.request.method;
    if ((method === 'GET' || method === 'HEAD') !== reads) return;
    const pending = headers(ctx);
    if (pending instanceof Promise) return pending;
  };
}

function quota(limit: number, used: number, resetMs: number): Quota {
  return { limit, remaining: Math.max(0, Math.floor(limit - used)), resetMs: Math.max(0, resetMs) };
}

/** The limit with the least left; on a tie, the one that resets later. */
export function tightest(a: Quota | undefined, b: Quota | undefined): Quota | undefined {
  if (!a || !b) return a ?? b;
  if (a.remaining !== b.remaining) return a.remaining < b.remaining ? a : b;
  return a.resetMs >= b.resetMs ? a : b;
}

/**
 * A duration as Go's `time.Duration.String` writes it, to the millisecond: `59ms`, `1s`,
 * `1.5s`, `6m0s`, `2h0m0s` (what OpenAI's `x-ratelimit-reset-*` headers look like).
 */
export function goDuration(ms: number): string {
  const total = Math.max(0, Math.round(ms));
  if (total === 0) return '0s';
  if (total < 1000) return `${total}ms`;
  const hours = Math.floor(total / 3_600_000);
  const minutes = Math.floor((total % 3_600_000) / 60_000);
  const secondsMs = total % 60_000;
  const seconds = `${Math.floor(secondsMs / 1000)}${
    secondsMs % 1000
      ? `.${String(secondsMs % 1000)
          .padStart(3, '0')
          .replace(/0+$/, '')}`
      : ''
  }s`;
  if (hours > 0) return `${hours}h${minutes}m${seconds}`;
  if (minutes > 0) return `${minutes}m${seconds}`;
  return seconds;
}

/** RFC 3339 in UTC to the second, rounded up: the limit has reset by then. */
function rfc3339(ms: number): string {
  return new Date(Math.ceil(ms / 1000) * 1000).toISOString().replace('.000Z', 'Z');
}
