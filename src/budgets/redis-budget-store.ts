/**
 * Key budgets shared by every replica through Redis: one running total per key and period and
 * atomic reservations against it (`redis-budget-scripts.ts`), on the connection the limits use
 * (`SharedRedis`: timeout, breaker). While Redis is skipped, this process's `BudgetLedger` counts;
 * a Redis that forgot a period (restart, eviction) is seeded again from the request log.
 */
import type { Redis } from 'ioredis';
import { optional, type SharedRedis } from '../limits/shared-redis.js';
import { BudgetLedger, wholeNeed, type BudgetLedgerOptions } from './budget-ledger.js';
import type {
  BudgetAmounts,
  BudgetCheck,
  BudgetDecision,
  BudgetKind,
  BudgetReservation,
  BudgetStore,
} from './budget-store.js';
import {
  BUDGET_RESERVE_LUA,
  BUDGET_SEED_LUA,
  BUDGET_SETTLE_LUA,
  BUDGET_USED_LUA,
  budgetKeys,
} from './redis-budget-scripts.js';

/** The scripts, as ioredis commands (EVALSHA, falling back to EVAL after a Redis restart). */
interface BudgetCommands {
  gatehouseBudgetReserve(
    totalsKey: string,
    reservedKey: string,
    now: string,
    start: string,
    tokens: string,
    requests: string,
    gpuMs: string,
    needTokens: number,
    needRequests: number,
    needGpuMs: number,
    id: string,
  ): Promise<unknown>;
  gatehouseBudgetSeed(
    totalsKey: string,
    tokens: number,
    requests: number,
    gpuMs: number,
    expireAt: number,
  ): Promise<unknown>;
  gatehouseBudgetSettle(
    totalsKey: string,
    reservedKey: string,
    member: string,
    tokens: number,
    requests: number,
    gpuMs: number,
  ): Promise<unknown>;
  gatehouseBudgetUsed(totalsKey: string, reservedKey: string, now: string, start: string): Promise<unknown>;
}

export class RedisBudgetStore implements BudgetStore {
  readonly #redis: SharedRedis;
  readonly #commands: Redis & BudgetCommands;
  readonly #fallback: BudgetLedger;

  constructor(redis: SharedRedis, fallback: BudgetLedgerOptions = {}) {
    this.#redis = redis;
    this.#fallback = new BudgetLedger(fallback);
    this.#commands = redis.client as Redis & BudgetCommands;
    this.#commands.defineCommand('gatehouseBudgetReserve', { numberOfKeys: 2, lua: BUDGET_RESERVE_LUA });
    this.#commands.defineCommand('gatehouseBudgetSeed', { numberOfKeys: 1, lua: BUDGET_SEED_LUA });
    this.#commands.defineCommand('gatehouseBudgetSettle', { numberOfKeys: 2, lua: BUDGET_SETTLE_LUA });
    this.#commands.defineCommand('gatehouseBudgetUsed', { numberOfKeys: 2, lua: BUDGET_USED_LUA });
  }

  /** A reservation taken while Redis is skipped lives in the fallback (no `id`) and is settled there. */
  reserve(keyId: string, check: BudgetCheck): BudgetDecision | Promise<BudgetDecision> {
    if (!this.#redis.up) return this.#fallback.reserve(keyId, check);
    return this.#reserveShared(keyId, check);
  }

  async #reserveShared(keyId: string, check: BudgetCheck): Promise<BudgetDecision> {
    const keys = budgetKeys(this.#redis.prefix, keyId, check.start);
    const need = wholeNeed(check);
    const id = this.#redis.callId();
    const reserve = () =>
      this.#redis.timed(
        this.#commands.gatehouseBudgetReserve(
          keys.totals,
          keys.reserved,
          this.#redis.nowArg(),
          String(check.start),
          optional(check.limits.tokens),
          optional(check.limits.requests),
          optional(check.limits.gpuMs),
          need.tokens,
          need.requests,
          need.gpuMs,
          id,
        ),
      );
    let reply: unknown;
    try {
      reply = await reserve();
      if (Array.isArray(reply) && reply[0] === -1) {
        // The first call of the period anywhere: start from the request log's sums.
        const seed = await check.seed().catch((error: unknown) => {
          throw new SeedFailure(error);
        });
        await this.#redis.timed(
          this.#commands.gatehouseBudgetSeed(
            keys.totals,
            seed.tokens,
            seed.requests,
            seed.gpuMs,
            check.end + 3_600_000,
          ),
        );
        reply = await reserve();
      }
    } catch (error) {
      if (error instanceof SeedFailure) throw error.cause;
      this.#redis.trip(error);
      return this.#fallback.reserve(keyId, check);
    }
    if (Array.isArray(reply) && reply[0] === 1)
      return {
        allowed: true,
        reservation: { start: check.start, need, id: String(reply[4]) },
        used: amounts(reply, 1),
      };
    if (Array.isArray(reply) && reply[0] === 0)
      return { allowed: false, kind: reply[1] as BudgetKind, used: amounts(reply, 2) };
    throw new Error(`unexpected reply from the budget reserve script: ${JSON.stringify(reply)}`);
  }

  async settle(keyId: string, reservation: BudgetReservation, used: BudgetAmounts): Promise<void> {
    if (reservation.id === undefined) return this.#fallback.settle(keyId, reservation, used);
    // While Redis is skipped the reservation is left to expire; the request log has the call.
    if (!this.#redis.up) return;
    const keys = budgetKeys(this.#redis.prefix, keyId, reservation.start);
    try {
      await this.#redis.timed(
        this.#commands.gatehouseBudgetSettle(
          keys.totals,
          keys.reserved,
          reservation.id,
          Math.round(used.tokens),
          Math.round(used.requests),
          used.gpuMs,
        ),
      );
    } catch (error) {
      this.#redis.trip(error);
    }
  }

  async used(keyId: string, check: Omit<BudgetCheck, 'need' | 'limits'>): Promise<BudgetAmounts> {
    if (!this.#redis.up) return this.#fallback.used(keyId, check);
    const keys = budgetKeys(this.#redis.prefix, keyId, check.start);
    let reply: unknown;
    try {
      reply = await this.#redis.timed(
        this.#commands.gatehouseBudgetUsed(keys.totals, keys.reserved, this.#redis.nowArg(), String(check.start)),
      );
    } catch (error) {
      this.#redis.trip(error);
      return this.#fallback.used(keyId, check);
    }
    // No totals in Redis yet: no call this period since they expired; the log says what it holds.
    if (Array.isArray(reply) && reply[0] === -1) return check.seed();
    return amounts(reply as unknown[], 0);
  }
}

/** Three amounts from a script's reply, from index `at`: tokens, requests, GPU ms (as strings). */
function amounts(reply: unknown[], at: number): BudgetAmounts {
  return { tokens: Number(reply[at]), requests: Number(reply[at + 1]), gpuMs: Number(reply[at + 2]) };
}

/** The request log could not be read to seed a period: not Redis's failure, so no reason to trip the breaker. */
class SeedFailure extends Error {
  constructor(cause: unknown) {
    super('reading the budget totals from the store failed', { cause });
  }
}
