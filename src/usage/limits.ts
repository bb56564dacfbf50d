/**
 * Per-key limits: requests per minute, tokens per minute, requests in flight. The `keyLimits`
 * step decides before anything is forwarded (right after `clientAuth`, before the body is read),
 * and answers 429 with `Retry-After` in the caller's wire format.
 *
 * Algorithm (every kind): a SLIDING window of the last 60 s, kept as a log of timestamps.
 * - RPM: the calls accepted in (now - 60 s, now]. The call that would be the N+1st in any 60 s
 *   window is refused; `Retry-After` is when the oldest counted call leaves the window. Exact,
 *   with no burst at window edges (a fixed window allows 2N around a boundary). Refused calls
 *   do not count.
 * - TPM: tokens of calls that finished in the last 60 s, plus RESERVATIONS of calls in flight.
 *   `keyLimits` refuses while that sum is >= N, before the body is read. Once the body is read,
 *   `reserveTokens` (token-reservation.ts) reserves the call's estimate (prompt bytes / 4 +
 *   requested output), atomically with the check that it fits; when the call ends the
 *   reservation is settled: released, and the real count added. So parallel calls cannot all
 *   pass on an empty window; how far they can still go over is in README.md.
 * - Concurrency: calls in flight; the slot is released when the exchange closes (`ctx.onDone`),
 *   however it ended. A call over it waits for a slot (`key-slot-waits.ts`, up to the queue
 *   timeout, then 503 `queue_timeout`) instead of getting a 429; RPM and TPM stay quotas.
 *
 * `LimitStore` has two implementations: `MemoryLimitStore`, per process (each replica counts
 * its own calls), and `RedisLimitStore` (`redis-limit-store.ts`, with `GATEHOUSE_REDIS_URL`),
 * shared by every replica through atomic Lua scripts, falling back to a `MemoryLimitStore`
 * while Redis is unreachable.
 */
import { GatewayError } from '../core/errors.js';
import type { ProxyStep } from '../core/steps.js';
import type { KeyLimits } from '../store/store.js';
import type { ProxyContext } from '../core/context.js';
import type { KeySlotWaits } from './key-slot-waits.js';
import { refuseWithHeaders, type RateLimitHeaders } from './rate-limit-headers.js';
import {
  BudgetLedger,
  type BudgetAmounts,
  type BudgetCheck,
  type BudgetDecision,
  type BudgetReservation,
} from './budget-ledger.js';

export const LIMIT_WINDOW_MS = 60_000;

export type LimitKind = 'rpm' | 'tpm' | 'concurrent';

export type LimitDecision =
  /**
   * `slot`: a concurrency slot was taken and must be released, passing `lease` back (the store's
   * handle on that slot, when it needs one).
   */
  | { allowed: true; slot: boolean; lease?: string }
  | { allowed: false; limit: LimitKind; max: number; retryAfterMs: number };

/** Tokens held in a key's TPM window for a call in flight; `id` is the store's handle on it. */
export interface TokenReservation {
  tokens: number;
  id?: string;
}

export type ReservationDecision =
  | { allowed: true; reservation: TokenReservation }
  | { allowed: false; limit: 'tpm'; max: number; retryAfterMs: number };

/** How much of a key's RPM or TPM window is taken, and in how long it is empty again. */
export interface WindowUse {
  used: number;
  resetMs: number;
}

/** A key's RPM and TPM windows now, for the rate-limit headers; a kind is absent without its limit. */
export interface LimitSnapshot {
  requests?: WindowUse | undefined;
  tokens?: WindowUse | undefined;
}

/** Where limits are counted right now, for the admin API (`GET /api/limits`) and the log. */
export interface LimitsStatus {
  /** `shared`: by every replica together (Redis); `replica`: by this process alone. */
  scope: 'replica' | 'shared';
  /** `off`: no `GATEHOUSE_REDIS_URL`; `unavailable`: set, but Redis cannot be used now. */
  redis: 'off' | 'connected' | 'unavailable';
  /** Wall-clock ms since Redis has been unavailable (null when it is not, or never connected yet). */
  unavailableSince: number | null;
}

export interface LimitStore {
  /**
   * Checks every limit of the key and, when all pass, counts the call (and takes a concurrency
   * slot when the key has that limit), atomically.
   */
  acquire(keyId: string, limits: KeyLimits): LimitDecision | Promise<LimitDecision>;
  /** Gives back the concurrency slot of a call that `acquire` gave one, with its `lease`. */
  release(keyId: string, lease?: string): void | Promise<void>;
  /** Adds the tokens of a finished call to the key's TPM window. */
  addTokens(keyId: string, tokens: number): void | Promise<void>;
  /**
   * Reserves `tokens` (capped at `tpm`: a call bigger than the limit runs alone) in the key's
   * TPM window when they fit beside the finished calls' tokens and the other reservations,
   * atomically with that check.
   */
  reserveTokens(keyId: string, tpm: number, tokens: number): ReservationDecision | Promise<ReservationDecision>;
  /** Ends a reservation: gives it back and adds the call's real tokens (0 when unknown). */
  settleTokens(keyId: string, reservation: TokenReservation, tokens: number): void | Promise<void>;
  /** The RPM and TPM windows of a key with those limits, as they are now (nothing is counted). */
  peek(keyId: string, limits: KeyLimits): LimitSnapshot | Promise<LimitSnapshot>;
  /**
   * Reserves a call's share of its key's budget for the period, when it fits beside what the
   * period used and the other reservations, atomically with that check (`budget-ledger.ts`).
   */
  reserveBudget(keyId: string, check: BudgetCheck): BudgetDecision | Promise<BudgetDecision>;
  /** Ends a budget reservation: gives it back and adds what the call used. */
  settleBudget(keyId: string, reservation: BudgetReservation, used: BudgetAmounts): void | Promise<void>;
  /** The period's use of a key's budget, reservations counted. */
  budgetUsed(keyId: string, check: Omit<BudgetCheck, 'need' | 'limits'>): Promise<BudgetAmounts>;
  status(): LimitsStatus;
  close(): void | Promise<void>;
}

/** A queue of numbers that drops from the front without shifting the whole array each time. */
class TimeLog {
  #items: number[] = [];
  #head = 0;

  get length(): number {
    return this.#items.length - this.#head;
  }

  at(i: number): number {
    return this.#items[this.#head + i]!;
  }

  push(value: number): void {
    this.#items.push(value);
  }

  shift(): void {
    this.#head++;
    if (this.#head > 1024 && this.#head * 2 > this.#items.length) {
      this.#items = this.#items.slice(this.#head);
      this.#head = 0;
    }
  }
}

interface KeyWindow {
  requests: TimeLog;
  tokenTimes: TimeLog;
  tokenAmounts: TimeLog;
  tokenSum: number;
  /** Tokens reserved by calls in flight (released when each is settled). */
  reserved: number;
  inFlight: number;
}

export interface MemoryLimitStoreOptions {
  /** Monotonic milliseconds (tests move it). Default `performance.now`. */
  now?: () => number;
  /** How often a budget counter re-reads the request log (see budget-ledger.ts). */
  budgetRefreshMs?: number;
}

export class MemoryLimitStore implements LimitStore {
  readonly #now: () => number;
  readonly #windows = new Map<string, KeyWindow>();
  readonly #sweeper: NodeJS.Timeout;
  readonly #budgets: BudgetLedger;

  constructor(options: MemoryLimitStoreOptions = {}) {
    this.#now = options.now ?? (() => performance.now());
    this.#budgets = new BudgetLedger({ now: this.#now, refreshMs: options.budgetRefreshMs });
    // Forget keys that went quiet, so the map holds only active keys.
    this.#sweeper = setInterval(() => this.#sweep(), LIMIT_WINDOW_MS);
    this.#sweeper.unref();
  }

  acquire(keyId: string, limits: KeyLimits): LimitDecision {
    const now = this.#now();
    const w = this.#window(keyId);
    if (limits.concurrent !== null && w.inFlight >= limits.concurrent) {
      return { allowed: false, limit: 'concurrent', max: limits.concurrent, retryAfterMs: 1000 };
    }
    if (limits.rpm !== null) {
      expire(w, now);
      if (w.requests.length >= limits.rpm) {
        // The call becomes allowed when enough of the oldest counted calls have left the window.
        const oldestThatMustLeave = w.requests.at(w.requests.length - limits.rpm);
        return {
          allowed: false,
          limit: 'rpm',
          max: limits.rpm,
          retryAfterMs: oldestThatMustLeave + LIMIT_WINDOW_MS - now,
        };
      }
    }
    if (limits.tpm !== null) {
      expire(w, now);
      // Full: the call waits until the sum drops below the limit (one token of room).
      if (w.tokenSum + w.reserved >= limits.tpm)
        return { allowed: false, limit: 'tpm', max: limits.tpm, retryAfterMs: tpmRetryAfter(w, limits.tpm, 1, now) };
    }
    if (limits.rpm !== null) w.requests.push(now);
    if (limits.concurrent !== null) {
      w.inFlight++;
      return { allowed: true, slot: true };
    }
    return { allowed: true, slot: false };
  }

  release(keyId: string): void {
    const w = this.#windows.get(keyId);
    if (w && w.inFlight > 0) w.inFlight--;
  }

  /**
   * Counts a call in the RPM window without checking: the shared store notes here the calls
   * Redis allowed, so that if Redis goes away this replica's window already holds its own
   * recent calls (and does not hand out a fresh N at once).
   */
  countRequest(keyId: string): void {
    const now = this.#now();
    const w = this.#window(keyId);
    expire(w, now);
    w.requests.push(now);
  }

  reserveTokens(keyId: string, tpm: number, tokens: number): ReservationDecision {
    const now = this.#now();
    const w = this.#window(keyId);
    expire(w, now);
    const need = Math.min(Math.max(0, Math.ceil(tokens)), tpm);
    if (w.tokenSum + w.reserved + need > tpm)
      return { allowed: false, limit: 'tpm', max: tpm, retryAfterMs: tpmRetryAfter(w, tpm, need, now) };
    w.reserved += need;
    return { allowed: true, reservation: { tokens: need } };
  }

  settleTokens(keyId: string, reservation: TokenReservation, tokens: number): void {
    const w = this.#windows.get(keyId);
    if (w) w.reserved = Math.max(0, w.reserved - reservation.tokens);
    this.addTokens(keyId, tokens);
  }

  addTokens(keyId: string, tokens: number): void {
    if (!(tokens > 0)) return;
    const now = this.#now();
    const w = this.#window(keyId);
    expire(w, now);
    w.tokenTimes.push(now);
    w.tokenAmounts.push(tokens);
    w.tokenSum += tokens;
  }

  peek(keyId: string, limits: KeyLimits): LimitSnapshot {
    const now = this.#now();
    const w = this.#window(keyId);
    expire(w, now);
    const snapshot: LimitSnapshot = {};
    if (limits.rpm !== null) {
      const n = w.requests.length;
      snapshot.requests = { used: n, resetMs: n === 0 ? 0 : w.requests.at(n - 1) + LIMIT_WINDOW_MS - now };
    }
    if (limits.tpm !== null) {
      const n = w.tokenTimes.length;
      const finished = n === 0 ? 0 : w.tokenTimes.at(n - 1) + LIMIT_WINDOW_MS - now;
      // Tokens reserved now leave the window a minute after their call ends, at the earliest.
      snapshot.tokens = {
        used: w.tokenSum + w.reserved,
        resetMs: w.reserved > 0 ? Math.max(finished, LIMIT_WINDOW_MS) : finished,
      };
    }
    return snapshot;
  }

  reserveBudget(keyId: string, check: BudgetCheck): BudgetDecision | Promise<BudgetDecision> {
    return this.#budgets.reserve(keyId, check);
  }

  settleBudget(keyId: string, reservation: BudgetReservation, used: BudgetAmounts): void {
    this.#budgets.settle(keyId, reservation, used);
  }

  budgetUsed(keyId: string, check: Omit<BudgetCheck, 'need' | 'limits'>): Promise<BudgetAmounts> {
    return this.#budgets.used(keyId, check);
  }

  status(): LimitsStatus {
    return { scope: 'replica', redis: 'off', unavailableSince: null };
  }

  close(): void {
    clearInterval(this.#sweeper);
  }

  #window(keyId: string): KeyWindow {
    let w = this.#windows.get(keyId);
    if (!w) {
      w = {
        requests: new TimeLog(),
        tokenTimes: new TimeLog(),
        tokenAmounts: new TimeLog(),
        tokenSum: 0,
        reserved: 0,
        inFlight: 0,
      };
      this.#windows.set(keyId, w);
    }
    return w;
  }

  #sweep(): void {
    const now = this.#now();
    for (const [keyId, w] of this.#windows) {
      expire(w, now);
      if (w.inFlight === 0 && w.reserved === 0 && w.requests.length === 0 && w.tokenTimes.length === 0)
        this.#windows.delete(keyId);
    }
  }
}

/**
 * When `need` more tokens fit under `tpm`: once enough of the oldest finished calls have left the
 * window. When the reservations alone leave no room, in 1 s (calls in flight end when they end).
 */
function tpmRetryAfter(w: KeyWindow, tpm: number, need: number, now: number): number {
  let remaining = w.tokenSum;
  for (let i = 0; i < w.tokenTimes.length; i++) {
    remaining -= w.tokenAmounts.at(i);
    if (remaining + w.reserved + need <= tpm) return w.tokenTimes.at(i) + LIMIT_WINDOW_MS - now;
  }
  return 1000;
}

/** Drops what is 60 s old or older: a call at t counts in windows ending before t + 60 s. */
function expire(w: KeyWindow, now: number): void {
  const cutoff = now - LIMIT_WINDOW_MS;
  while (w.requests.length > 0 && w.requests.at(0) <= cutoff) w.requests.shift();
  while (w.tokenTimes.length > 0 && w.tokenTimes.at(0) <= cutoff) {
    w.tokenSum -= w.tokenAmounts.at(0);
    w.tokenTimes.shift();
    w.tokenAmounts.shift();
  }
}

const LIMIT_WORDING: Record<LimitKind, (max: number) => string> = {
  rpm: (max) => `${max} request${max === 1 ? '' : 's'} per minute`,
  tpm: (max) => `${max} token${max === 1 ? '' : 's'} per minute`,
  concurrent: (max) => `${max} request${max === 1 ? '' : 's'} at a time`,
};

/**
 * `keyLimits`: refuses a call over its key's limits with 429 and `Retry-After` (whole seconds,
 * at least 1). Open mode and keys without limits pass untouched.
 */
export function keyLimits(
  store: LimitStore,
  onLimited?: (keyName: string | undefined, limit: LimitKind) => void,
  slots?: { waits: KeySlotWaits; queueTimeoutMs: number },
  headers?: RateLimitHeaders,
): ProxyStep {
  return function keyLimitsStep(ctx) {
    const caller = ctx.decided.caller;
    const limits = caller?.limits;
    const keyId = caller?.keyId;
    if (!limits || keyId === undefined || (limits.rpm === null && limits.tpm === null && limits.concurrent === null))
      return;
    const admitted = (decision: LimitDecision & { allowed: true }): void => {
      if (!decision.slot) return;
      const lease = decision.lease;
      ctx.onDone.push(() => {
        void Promise.resolve(store.release(keyId, lease))
          .catch(() => {})
          .then(() => slots?.waits.released(keyId));
      });
    };
    const refuse = (decision: LimitDecision & { allowed: false }): never | Promise<never> => {
      onLimited?.(caller.keyName, decision.limit);
      return refuseWithHeaders(ctx, limitRefusal(decision), decision.limit === 'concurrent' ? undefined : headers);
    };
    const refused = (error: unknown): Promise<never> | never => {
      if (isRefusal(error)) return refuse(error.decision);
      throw error;
    };
    const apply = (decision: LimitDecision): void | Promise<void> => {
      if (decision.allowed) return admitted(decision);
      if (decision.limit !== 'concurrent' || !slots) return refuse(decision);
      return waitForSlot(ctx, keyId, limits, slots, store).then(admitted, refused);
    };
    if (limits.concurrent !== null && slots?.waits.has(keyId))
      return waitForSlot(ctx, keyId, limits, slots, store).then(admitted, refused);
    const decision = store.acquire(keyId, limits);
    if (decision instanceof Promise) return decision.then(apply);
    return apply(decision);
  };
}

/** Another of the key's limits (RPM, TPM) refused the call while it waited for a slot. */
class Refusal extends Error {
  constructor(readonly decision: LimitDecision & { allowed: false }) {
    super('refused');
  }
}
function isRefusal(error: unknown): error is Refusal {
  return error instanceof Refusal;
}

/**
 * A key's `concurrent` limit makes a call wait, not fail: it waits for a slot of its key (given
 * back here, or by another replica), up to the queue timeout, then 503 `queue_timeout`. The time
 * counts as queue time (`x-gatehouse-queue-ms`). A client that leaves stops waiting.
 */
async function waitForSlot(
  ctx: ProxyContext,
  keyId: string,
  limits: KeyLimits,
  slots: { waits: KeySlotWaits; queueTimeoutMs: number },
  store: LimitStore,
): Promise<LimitDecision & { allowed: true }> {
  const { waits, queueTimeoutMs } = slots;
  const start = waits.now();
  const caller = ctx.decided.caller;
  const ticket = waits.enter(keyId, {
    id: ctx.request.requestId,
    model: undefined,
    key: { id: keyId, name: caller?.keyName ?? '' },
    priority: caller?.priority ?? 0,
  });
  ctx.onClientGone = () =>
    ticket.leave(new GatewayError('service_unavailable', { message: 'The client left while the call waited.' }));
  try {
    for (;;) {
      const left = queueTimeoutMs - (waits.now() - start);
      if (left <= 0)
        throw new GatewayError('queue_timeout', {
          message:
            `The call waited ${Math.round(queueTimeoutMs / 1000)} s for one of its key's ${limits.concurrent} ` +
            'slots (GATEHOUSE_QUEUE_TIMEOUT) and was not sent to the model.',
          headers: { 'retry-after': '10' },
        });
      await ticket.next(left);
      const decision = await store.acquire(keyId, limits);
      if (decision.allowed) return decision;
      if (decision.limit !== 'concurrent') throw new Refusal(decision);
    }
  } finally {
    ticket.leave();
    ctx.onClientGone = undefined;
    ctx.decided.queueMs = (ctx.decided.queueMs ?? 0) + (waits.now() - start);
  }
}

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
