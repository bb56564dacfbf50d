/**
 * `MemoryLimitStore`: per-key limits counted in this process (each replica counts its own
 * calls), as sliding windows of the last 60 s kept as logs of timestamps (README.md, Limits).
 * It is also the shared store's fallback while Redis is unreachable.
 */
import type { KeyLimits } from '../store/records.js';
import {
  LIMIT_WINDOW_MS,
  type LimitDecision,
  type LimitSnapshot,
  type LimitStore,
  type LimitsStatus,
  type ReservationDecision,
  type TokenReservation,
} from './limit-store.js';

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
}

export class MemoryLimitStore implements LimitStore {
  readonly #now: () => number;
  readonly #windows = new Map<string, KeyWindow>();
  readonly #sweeper: NodeJS.Timeout;

  constructor(options: MemoryLimitStoreOptions = {}) {
    this.#now = options.now ?? (() => performance.now());
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
