/**
 * The per-key limit store's contract: the decisions it answers with, and its interface split by
 * job (the call's check and slot, the TPM window, reading the windows, where counting happens).
 * `MemoryLimitStore` (`memory-limit-store.ts`) and `RedisLimitStore` (`redis-limit-store.ts`)
 * implement it; README.md has the algorithm.
 */
import type { KeyLimits } from '../store/records.js';

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

/**
 * The per-call check: every RPM, TPM and concurrency limit of a key at once, and the concurrency
 * slot it may take (`keyLimits`; the queue's shared caps count their slots the same way).
 */
export interface SlotCounter {
  /**
   * Checks every limit of the key and, when all pass, counts the call (and takes a concurrency
   * slot when the key has that limit), atomically.
   */
  acquire(keyId: string, limits: KeyLimits): LimitDecision | Promise<LimitDecision>;
  /** Gives back the concurrency slot of a call that `acquire` gave one, with its `lease`. */
  release(keyId: string, lease?: string): void | Promise<void>;
}

/** Tokens in a key's TPM window: reservations of calls in flight, then their real counts (`tokenReservation`). */
export interface TokenWindow {
  /**
   * Reserves `tokens` (capped at `tpm`: a call bigger than the limit runs alone) in the key's
   * TPM window when they fit beside the finished calls' tokens and the other reservations,
   * atomically with that check.
   */
  reserveTokens(keyId: string, tpm: number, tokens: number): ReservationDecision | Promise<ReservationDecision>;
  /** Ends a reservation: gives it back and adds the call's real tokens (0 when unknown). */
  settleTokens(keyId: string, reservation: TokenReservation, tokens: number): void | Promise<void>;
  /** Adds the tokens of a finished call to the key's TPM window. */
  addTokens(keyId: string, tokens: number): void | Promise<void>;
}

/** Reads the windows without counting (the rate-limit headers). */
export interface WindowReader {
  /** The RPM and TPM windows of a key with those limits, as they are now (nothing is counted). */
  peek(keyId: string, limits: KeyLimits): LimitSnapshot | Promise<LimitSnapshot>;
}

/** Where the counting happens, for `GET /api/limits` and the metrics; and its shutdown. */
export interface CountingScope {
  status(): LimitsStatus;
  close(): void | Promise<void>;
}

/** Everything a per-key limit store does; each user asks only for the part it needs. */
export interface LimitStore extends SlotCounter, TokenWindow, WindowReader, CountingScope {}
