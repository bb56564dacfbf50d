/**
 * Per-key limits shared by every replica through Redis (`GATEHOUSE_REDIS_URL`): the same three
 * limits and the same sliding windows as `MemoryLimitStore`, counted in Redis by atomic Lua
 * scripts (`redis-limit-scripts.ts`), so N replicas together allow a key its limit once, not N
 * times. The connection, its timeouts and its breaker are `SharedRedis`'s: while the breaker is
 * open, calls are counted in a per-replica `MemoryLimitStore` (the fallback).
 *
 * The fallback also notes every call Redis allowed (RPM) and every finished call's tokens
 * (TPM), so when Redis goes away each replica continues from its own share of the window
 * rather than from zero.
 *
 * Concurrency slots are leases: a slot's score is its expiry, renewed every `renewEveryMs`
 * while the call runs; a replica that crashes stops renewing, and its slots free themselves
 * within `leaseMs`. A slot taken from the fallback is released there (`lease` undefined).
 */
import type { Redis } from 'ioredis';
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
import { MemoryLimitStore } from './memory-limit-store.js';
import {
  ACQUIRE_LUA,
  ADD_TOKENS_LUA,
  limitKeys,
  parseAcquireReply,
  RENEW_LUA,
  RESERVE_LUA,
  SETTLE_LUA,
} from './redis-limit-scripts.js';
import { optional, SharedRedis, type SharedRedisOptions } from './shared-redis.js';

interface SlotLeaseOptions {
  /** How long a concurrency slot lives without renewal (a crashed holder's slots). Default 20 s. */
  leaseMs?: number;
  /** How often held slots are renewed. Default a quarter of `leaseMs`. */
  renewEveryMs?: number;
}

/** Either a connection of its own (closed with the store) or one shared with the budget store. */
export type RedisLimitStoreOptions = SlotLeaseOptions & (SharedRedisOptions | { connection: SharedRedis });

/** The scripts, as ioredis commands (EVALSHA, falling back to EVAL after a Redis restart). */
interface LimitCommands {
  gatehouseAcquire(
    rpmKey: string,
    tpmKey: string,
    slotsKey: string,
    reservedKey: string,
    now: string,
    windowMs: number,
    rpm: string,
    tpm: string,
    concurrent: string,
    id: string,
    leaseMs: number,
  ): Promise<unknown>;
  gatehouseAddTokens(tpmKey: string, now: string, windowMs: number, tokens: number): Promise<unknown>;
  gatehouseRenew(slotsKey: string, now: string, leaseMs: number, ...ids: string[]): Promise<unknown>;
  gatehouseReserve(
    tpmKey: string,
    reservedKey: string,
    now: string,
    windowMs: number,
    tpm: number,
    need: number,
    id: string,
  ): Promise<unknown>;
  gatehouseSettle(
    tpmKey: string,
    reservedKey: string,
    now: string,
    windowMs: number,
    member: string,
    tokens: number,
  ): Promise<unknown>;
}

export class RedisLimitStore implements LimitStore {
  readonly #redis: SharedRedis;
  readonly #commands: Redis & LimitCommands;
  /** Whether the connection is this store's own, closed with it. */
  readonly #ownsConnection: boolean;
  readonly #fallback = new MemoryLimitStore();
  readonly #leaseMs: number;
  readonly #renewTimer: NodeJS.Timeout;
  /** Slots this replica holds in Redis, per key: renewed until released. */
  readonly #held = new Map<string, Set<string>>();

  constructor(options: RedisLimitStoreOptions) {
    this.#ownsConnection = !('connection' in options);
    this.#redis = 'connection' in options ? options.connection : new SharedRedis(options);
    this.#leaseMs = options.leaseMs ?? 20_000;
    this.#commands = this.#redis.client as Redis & LimitCommands;
    this.#commands.defineCommand('gatehouseAcquire', { numberOfKeys: 4, lua: ACQUIRE_LUA });
    this.#commands.defineCommand('gatehouseReserve', { numberOfKeys: 2, lua: RESERVE_LUA });
    this.#commands.defineCommand('gatehouseSettle', { numberOfKeys: 2, lua: SETTLE_LUA });
    this.#commands.defineCommand('gatehouseAddTokens', { numberOfKeys: 1, lua: ADD_TOKENS_LUA });
    this.#commands.defineCommand('gatehouseRenew', { numberOfKeys: 1, lua: RENEW_LUA });
    const renewEvery = options.renewEveryMs ?? Math.floor(this.#leaseMs / 4);
    this.#renewTimer = setInterval(() => void this.#renew(), renewEvery);
    this.#renewTimer.unref();
  }

  /** Resolves once connected, or once the start timeout passed (then limits are per replica until Redis answers). */
  ready(): Promise<void> {
    return this.#redis.ready();
  }

  acquire(keyId: string, limits: KeyLimits): LimitDecision | Promise<LimitDecision> {
    if (!this.#redis.up) return this.#fallback.acquire(keyId, limits);
    return this.#acquireShared(keyId, limits);
  }

  async #acquireShared(keyId: string, limits: KeyLimits): Promise<LimitDecision> {
    const keys = limitKeys(this.#redis.prefix, keyId);
    const id = this.#redis.callId();
    let reply;
    try {
      reply = parseAcquireReply(
        await this.#redis.timed(
          this.#commands.gatehouseAcquire(
            keys.rpm,
            keys.tpm,
            keys.slots,
            keys.reserved,
            this.#redis.nowArg(),
            LIMIT_WINDOW_MS,
            optional(limits.rpm),
            optional(limits.tpm),
            optional(limits.concurrent),
            id,
            this.#leaseMs,
          ),
        ),
      );
    } catch (error) {
      this.#redis.trip(error);
      return this.#fallback.acquire(keyId, limits);
    }
    if (reply[0] === 0) return { allowed: false, limit: reply[1], max: reply[2], retryAfterMs: reply[3] };
    if (limits.rpm !== null) this.#fallback.countRequest(keyId);
    if (reply[1] === 0) return { allowed: true, slot: false };
    let held = this.#held.get(keyId);
    if (!held) this.#held.set(keyId, (held = new Set()));
    held.add(id);
    return { allowed: true, slot: true, lease: id };
  }

  async release(keyId: string, lease?: string): Promise<void> {
    if (lease === undefined) return this.#fallback.release(keyId);
    const held = this.#held.get(keyId);
    held?.delete(lease);
    if (held?.size === 0) this.#held.delete(keyId);
    // While Redis is skipped the slot is left to expire: it is no longer renewed.
    if (!this.#redis.up) return;
    try {
      await this.#redis.timed(this.#commands.zrem(limitKeys(this.#redis.prefix, keyId).slots, lease));
    } catch (error) {
      this.#redis.trip(error);
    }
  }

  async addTokens(keyId: string, tokens: number): Promise<void> {
    const whole = Math.round(tokens);
    if (!(whole > 0)) return;
    this.#fallback.addTokens(keyId, whole);
    if (!this.#redis.up) return;
    try {
      await this.#redis.timed(
        this.#commands.gatehouseAddTokens(
          limitKeys(this.#redis.prefix, keyId).tpm,
          this.#redis.nowArg(),
          LIMIT_WINDOW_MS,
          whole,
        ),
      );
    } catch (error) {
      this.#redis.trip(error);
    }
  }

  /** A reservation taken while Redis is skipped lives in the fallback (no `id`) and is settled there. */
  reserveTokens(keyId: string, tpm: number, tokens: number): ReservationDecision | Promise<ReservationDecision> {
    if (!this.#redis.up) return this.#fallback.reserveTokens(keyId, tpm, tokens);
    return this.#reserveShared(keyId, tpm, Math.min(Math.max(0, Math.ceil(tokens)), tpm));
  }

  async #reserveShared(keyId: string, tpm: number, need: number): Promise<ReservationDecision> {
    const keys = limitKeys(this.#redis.prefix, keyId);
    const id = this.#redis.callId();
    let reply: unknown;
    try {
      reply = await this.#redis.timed(
        this.#commands.gatehouseReserve(keys.tpm, keys.reserved, this.#redis.nowArg(), LIMIT_WINDOW_MS, tpm, need, id),
      );
    } catch (error) {
      this.#redis.trip(error);
      return this.#fallback.reserveTokens(keyId, tpm, need);
    }
    if (Array.isArray(reply) && reply[0] === 1)
      return { allowed: true, reservation: { tokens: need, id: `${id}|${need}` } };
    if (Array.isArray(reply) && reply[0] === 0 && typeof reply[1] === 'number')
      return { allowed: false, limit: 'tpm', max: tpm, retryAfterMs: reply[1] };
    throw new Error(`unexpected reply from the reserve script: ${JSON.stringify(reply)}`);
  }

  async settleTokens(keyId: string, reservation: TokenReservation, tokens: number): Promise<void> {
    if (reservation.id === undefined) return this.#fallback.settleTokens(keyId, reservation, tokens);
    const whole = Math.max(0, Math.round(tokens));
    if (whole > 0) this.#fallback.addTokens(keyId, whole);
    // While Redis is skipped the reservation is left to expire (RESERVATION_TTL_MS).
    if (!this.#redis.up) return;
    const keys = limitKeys(this.#redis.prefix, keyId);
    try {
      await this.#redis.timed(
        this.#commands.gatehouseSettle(
          keys.tpm,
          keys.reserved,
          this.#redis.nowArg(),
          LIMIT_WINDOW_MS,
          reservation.id,
          whole,
        ),
      );
    } catch (error) {
      this.#redis.trip(error);
    }
  }

  peek(keyId: string, limits: KeyLimits): LimitSnapshot | Promise<LimitSnapshot> {
    return this.#fallback.peek(keyId, limits);
  }

  status(): LimitsStatus {
    return this.#redis.status();
  }

  async close(): Promise<void> {
    clearInterval(this.#renewTimer);
    this.#fallback.close();
    if (this.#ownsConnection) await this.#redis.close();
  }

  async #renew(): Promise<void> {
    if (!this.#redis.up || this.#held.size === 0) return;
    try {
      await Promise.all(
        [...this.#held].map(([keyId, ids]) =>
          this.#redis.timed(
            this.#commands.gatehouseRenew(
              limitKeys(this.#redis.prefix, keyId).slots,
              this.#redis.nowArg(),
              this.#leaseMs,
              ...ids,
            ),
          ),
        ),
      );
    } catch (error) {
      this.#redis.trip(error);
    }
  }
}
