/**
 * Running totals of key budgets per calendar period, in this process (the budget store without Redis,
 * and `RedisBudgetStore`'s fallback). A key's counter starts from what the request log holds for the
 * period (`seed`: the store's sums, PostgreSQL or SQLite), then adds the calls that end here.
 * Calls in flight hold reservations, checked and taken in one step, as the TPM limit does:
 * tokens reserve their estimate, requests one each, GPU time nothing (it is known only after).
 * A counter re-reads the log every `refreshMs`, so replicas sharing a database without Redis
 * see each other's calls within that time.
 */
import {
  NO_AMOUNTS,
  type BudgetAmounts,
  type BudgetCheck,
  type BudgetDecision,
  type BudgetKind,
  type BudgetReservation,
  type BudgetStore,
} from './budget-store.js';

const KINDS: ReadonlyArray<readonly [BudgetKind, keyof BudgetAmounts]> = [
  ['requests', 'requests'],
  ['tokens', 'tokens'],
  ['gpuSeconds', 'gpuMs'],
];

/**
 * The kind of budget `need` does not fit in, or undefined when it fits. A call may reserve no
 * more than what is left (so one call cannot run past the budget by its requested output), and a
 * used-up budget refuses even a call that reserves nothing (GPU time).
 */
function budgetOverflow(check: BudgetCheck, used: BudgetAmounts): BudgetKind | undefined {
  const need = wholeNeed(check);
  for (const [kind, field] of KINDS) {
    const limit = check.limits[field];
    if (limit === null) continue;
    if (used[field] >= limit || used[field] + need[field] > limit) return kind;
  }
  return undefined;
}

function addAmounts(a: BudgetAmounts, b: BudgetAmounts, sign = 1): BudgetAmounts {
  return {
    tokens: a.tokens + sign * b.tokens,
    requests: a.requests + sign * b.requests,
    gpuMs: a.gpuMs + sign * b.gpuMs,
  };
}

interface Counter {
  start: number;
  end: number;
  /** The request log's sums at the last (re)load; undefined until the first load ends. */
  base: BudgetAmounts | undefined;
  loading: Promise<void> | undefined;
  loadedAt: number;
  /** Calls ended here since the last load. */
  ended: BudgetAmounts;
  reserved: BudgetAmounts;
}

export interface BudgetLedgerOptions {
  /** How often a counter re-reads the request log. Default 30 s. */
  refreshMs?: number;
  /** Monotonic ms for the refresh. Default `performance.now`. */
  now?: () => number;
}

export class BudgetLedger implements BudgetStore {
  readonly #counters = new Map<string, Counter>();
  readonly #refreshMs: number;
  readonly #now: () => number;

  constructor(options: BudgetLedgerOptions = {}) {
    this.#refreshMs = options.refreshMs ?? 30_000;
    this.#now = options.now ?? (() => performance.now());
  }

  reserve(keyId: string, check: BudgetCheck): BudgetDecision | Promise<BudgetDecision> {
    const counter = this.#counter(keyId, check);
    if (counter.base === undefined) return this.#load(counter, check).then(() => this.reserve(keyId, check));
    this.#refreshIfDue(counter, check);
    const used = addAmounts(addAmounts(counter.base, counter.ended), counter.reserved);
    const kind = budgetOverflow(check, used);
    if (kind !== undefined) return { allowed: false, kind, used };
    const need = wholeNeed(check);
    counter.reserved = addAmounts(counter.reserved, need);
    return { allowed: true, reservation: { start: check.start, need }, used: addAmounts(used, need) };
  }

  /** Ends a reservation: gives it back and adds what the call used, in the period it started in. */
  settle(keyId: string, reservation: BudgetReservation, used: BudgetAmounts): void {
    const counter = this.#counters.get(keyId);
    if (!counter || counter.start !== reservation.start) return; // that period is over: the log holds it
    counter.reserved = addAmounts(counter.reserved, reservation.need, -1);
    counter.ended = addAmounts(counter.ended, used);
  }

  /** The period's use, reservations counted (the dashboard, rate-limit headers). */
  async used(keyId: string, check: Omit<BudgetCheck, 'need' | 'limits'>): Promise<BudgetAmounts> {
    const counter = this.#counter(keyId, check);
    if (counter.base === undefined) await this.#load(counter, check);
    return addAmounts(addAmounts(counter.base!, counter.ended), counter.reserved);
  }

  #counter(keyId: string, check: Pick<BudgetCheck, 'start' | 'end'>): Counter {
    let counter = this.#counters.get(keyId);
    if (!counter || counter.start !== check.start || counter.end !== check.end) {
      counter = {
        start: check.start,
        end: check.end,
        base: undefined,
        loading: undefined,
        loadedAt: 0,
        ended: { ...NO_AMOUNTS },
        reserved: { ...NO_AMOUNTS },
      };
      this.#counters.set(keyId, counter);
    }
    return counter;
  }

  /** (Re)reads the log's sums; the calls that end meanwhile stay counted on top. */
  #load(counter: Counter, check: Pick<BudgetCheck, 'seed'>): Promise<void> {
    counter.loading ??= (async () => {
      const endedBefore = counter.ended;
      try {
        const base = await check.seed();
        counter.base = base;
        counter.ended = addAmounts(counter.ended, endedBefore, -1);
      } finally {
        counter.loadedAt = this.#now();
        counter.loading = undefined;
      }
    })();
    return counter.loading;
  }

  #refreshIfDue(counter: Counter, check: BudgetCheck): void {
    if (counter.loading || this.#now() - counter.loadedAt < this.#refreshMs) return;
    // In the background: this call is decided on what is known now.
    this.#load(counter, check).catch(() => {});
  }
}

/** A call's need in whole units, never negative. */
export function wholeNeed(check: BudgetCheck): BudgetAmounts {
  const whole = (field: keyof BudgetAmounts): number => Math.max(0, Math.ceil(check.need[field]));
  return { tokens: whole('tokens'), requests: whole('requests'), gpuMs: whole('gpuMs') };
}
