/**
 * The budget store's contract: what a call asks of its key's budget in one period, the answers,
 * and the three operations. `BudgetLedger` counts in this process, `RedisBudgetStore` in Redis
 * for every replica.
 */

/** The three things a budget counts; GPU time in milliseconds. */
export interface BudgetAmounts {
  tokens: number;
  requests: number;
  gpuMs: number;
}

export type BudgetKind = 'tokens' | 'requests' | 'gpuSeconds';

/** What one call asks of its key's budget in one period. */
export interface BudgetCheck {
  /** The period, epoch ms: [start, end). */
  start: number;
  end: number;
  /** The budget's amounts (GPU in ms); null: no budget of that kind. */
  limits: { tokens: number | null; requests: number | null; gpuMs: number | null };
  /** What the call reserves until it ends. */
  need: BudgetAmounts;
  /** The key's use in [start, end) as the request log holds it. */
  seed: () => Promise<BudgetAmounts>;
}

/** A call's hold on its key's budget; `id` is the store's handle (Redis). */
export interface BudgetReservation {
  start: number;
  need: BudgetAmounts;
  id?: string;
}

export type BudgetDecision =
  /** `used`: the period's use, reservations (this call's included) counted. */
  | { allowed: true; reservation: BudgetReservation; used: BudgetAmounts }
  | { allowed: false; kind: BudgetKind; used: BudgetAmounts };

export const NO_AMOUNTS: Readonly<BudgetAmounts> = Object.freeze({ tokens: 0, requests: 0, gpuMs: 0 });

/** Running totals of key budgets per period; methods may return promises, the steps await them. */
export interface BudgetStore {
  /**
   * Reserves a call's share of its key's budget for the period, when it fits beside what the
   * period used and the other reservations, atomically with that check.
   */
  reserve(keyId: string, check: BudgetCheck): BudgetDecision | Promise<BudgetDecision>;
  /** Ends a budget reservation: gives it back and adds what the call used. */
  settle(keyId: string, reservation: BudgetReservation, used: BudgetAmounts): void | Promise<void>;
  /** The period's use of a key's budget, reservations counted (the dashboard, rate-limit headers). */
  used(keyId: string, check: Omit<BudgetCheck, 'need' | 'limits'>): Promise<BudgetAmounts>;
}
