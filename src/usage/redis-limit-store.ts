/**
 * Per-key limits shared by every replica through Redis (`GATEHOUSE_REDIS_URL`): the same three
 * limits and the same sliding windows as `MemoryLimitStore`, counted in Redis by atomic Lua
 * scripts (`redis-limit-scripts.ts`), so N replicas together allow a key its limit once, not N
 * times.
 *
 * Redis must never stop traffic, so:
 * - every command has a short timeout (`commandTimeoutMs`, 100 ms) and none waits for a
 *   connection (no offline queue, no retries per command): a command fails at once when there
 *   is no connection, and within the timeout when Redis stops answering;
 * - a failure trips a breaker: for the next seconds Redis is skipped entirely and calls are
 *   counted in a per-replica `MemoryLimitStore` (the fallback), while a probe retries in the
 *   background every `retryMs`; the first answer closes the breaker;
 * - the outage is logged once (warn) and the recovery once (info).
 *
 * The fallback also notes every call Redis allowed (RPM) and every finished call's tokens
 * (TPM), so when Redis goes away each replica continues from its own share of the window
 * rather than from zero.
 *
 * Concurrency slots are leases: a slot's score is its expiry, renewed every `renewEveryMs`
 * while the call runs; a replica that crashes stops renewing, and its slots free themselves
 * within `leaseMs`. A slot taken from the fallback is released there (`lease` undefined).
 */
import { randomBytes } from 'node:crypto';
import { createRequire } from 'node:module';
import type { Redis } from 'ioredis';
import type { Logger } from 'pino';
import type { KeyLimits } from '../store/store.js';
import {
  LIMIT_WINDOW_MS,
  MemoryLimitStore,
  type LimitDecision,
  type LimitSnapshot,
  type LimitStore,
  type LimitsStatus,
  type ReservationDecision,
  type TokenReservation,
} from './limits.js';
import {
  wholeNeed,
  type BudgetAmounts,
  type BudgetCheck,
  type BudgetDecision,
  type BudgetKind,
  type BudgetReservation,
} from './budget-ledger.js';
import {
  BUDGET_RESERVE_LUA,
  BUDGET_SEED_LUA,
  BUDGET_SETTLE_LUA,
  BUDGET_USED_LUA,
  budgetKeys,
} from './redis-budget-scripts.js';
import {
  ACQUIRE_LUA,
  ADD_TOKENS_LUA,
  limitKeys,
  parseAcquireReply,
  RENEW_LUA,
  RESERVE_LUA,
  SETTLE_LUA,
} from './redis-limit-scripts.js';

export interface RedisLimitStoreOptions {
  /** `redis://[:password@]host:port[/db]` or `rediss://` (TLS). A secret: never logged. */
  url: string;
  /** Prefix of every key, e.g. `gatehouse:` (tests use one per run). */
  prefix: string;
  logger: Logger;
  /** Longest wait for one Redis command. Default 100 ms. */
  commandTimeoutMs?: number;
  /** After a failure, Redis is skipped for this long, then probed in the background. Default 2 s. */
  retryMs?: number;
  /** How long a concurrency slot lives without renewal (a crashed holder's slots). Default 20 s. */
  leaseMs?: number;
  /** How often held slots are renewed. Default a quarter of `leaseMs`. */
  renewEveryMs?: number;
  /** How long `ready()` waits for the first connection at start. Default 1 s. */
  startTimeoutMs?: number;
  /** Milliseconds for the scripts (tests move time); default Redis's own clock. */
  now?: () => number;
}

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
  gatehouseSettle(
    tpmKey: string,
    reservedKey: string,
    now: string,
    windowMs: number,
    member: string,
    tokens: number,
  ): Promise<unknown>;
}

type State = 'connecting' | 'up' | 'down';

export class RedisLimitStore implements LimitStore {
  readonly #redis: Redis & LimitCommands;
  readonly #fallback = new MemoryLimitStore();
  readonly #prefix: string;
  readonly #logger: Logger;
  readonly #where: string;
  readonly #password: string;
  readonly #retryMs: number;
  readonly #timeoutMs: number;
  readonly #leaseMs: number;
  readonly #now: (() => number) | undefined;
  /** Call ids are unique across replicas: this process's random part plus a counter. */
  readonly #replica = randomBytes(6).toString('base64url');
  #seq = 0;
  #state: State = 'connecting';
  #downSince: number | null = null;
  #probeTimer: NodeJS.Timeout | undefined;
  #probing = false;
  /** The connection's last error (refused, wrong password...), to say why at start. */
  #lastError: Error | undefined;
  #closing = false;
  readonly #renewTimer: NodeJS.Timeout;
  /** Settles when the first connection succeeded or failed. */
  readonly #started: Promise<void>;
  #settleStart: (() => void) | undefined;
  /** Slots this replica holds in Redis, per key: renewed until released. */
  readonly #held = new Map<string, Set<string>>();

  constructor(options: RedisLimitStoreOptions) {
    this.#prefix = options.prefix;
    this.#logger = options.logger;
    this.#where = describeRedisUrl(options.url);
    this.#password = redisPassword(options.url);
    this.#retryMs = options.retryMs ?? 2000;
    this.#leaseMs = options.leaseMs ?? 20_000;
    this.#now = options.now;
    this.#timeoutMs = options.commandTimeoutMs ?? 100;
    // Required here, not at the top: a gateway without GATEHOUSE_REDIS_URL never loads ioredis.
    const { Redis: RedisClient } = createRequire(import.meta.url)('ioredis') as { Redis: typeof Redis };
    this.#redis = new RedisClient(options.url, {
      // A backstop only (it also bounds the connection's AUTH and ready check): calls use the
      // short, stall-tolerant timeout of #timed.
      commandTimeout: Math.max(1000, this.#timeoutMs * 10),
      connectTimeout: 1000,
      enableOfflineQueue: false,
      maxRetriesPerRequest: 0,
      // Reconnect for ever, at most every 2 s; the breaker decides when Redis is used again.
      retryStrategy: (times) => Math.min(times * 100, 2000),
      reconnectOnError: null,
      autoResubscribe: false,
      connectionName: 'gatehouse-limits',
    }) as Redis & LimitCommands;
    this.#redis.defineCommand('gatehouseAcquire', { numberOfKeys: 4, lua: ACQUIRE_LUA });
    this.#redis.defineCommand('gatehouseReserve', { numberOfKeys: 2, lua: RESERVE_LUA });
    this.#redis.defineCommand('gatehouseSettle', { numberOfKeys: 2, lua: SETTLE_LUA });
    this.#redis.defineCommand('gatehouseAddTokens', { numberOfKeys: 1, lua: ADD_TOKENS_LUA });
    this.#redis.defineCommand('gatehouseRenew', { numberOfKeys: 1, lua: RENEW_LUA });
    this.#redis.defineCommand('gatehouseBudgetReserve', { numberOfKeys: 2, lua: BUDGET_RESERVE_LUA });
    this.#redis.defineCommand('gatehouseBudgetSeed', { numberOfKeys: 1, lua: BUDGET_SEED_LUA });
    this.#redis.defineCommand('gatehouseBudgetSettle', { numberOfKeys: 2, lua: BUDGET_SETTLE_LUA });
    this.#redis.defineCommand('gatehouseBudgetUsed', { numberOfKeys: 2, lua: BUDGET_USED_LUA });
    // Without a listener ioredis prints every connection error to the console; the breaker logs.
    this.#redis.on('error', (error) => (this.#lastError = error));
    // While connecting, ioredis retries by itself (a failed ready check, e.g. after a stalled
    // start, closes and reconnects); the start timer decides when to give up for now.
    this.#redis.on('close', () => {
      if (!this.#closing && this.#state === 'up') this.#trip(new Error('connection closed'));
    });
    this.#redis.on('ready', () => void this.#probe());

    const startTimeout = options.startTimeoutMs ?? 1000;
    this.#started = new Promise<void>((resolve) => (this.#settleStart = resolve));
    const startTimer = setTimeout(() => {
      if (this.#state === 'connecting')
        this.#trip(this.#lastError ?? new Error(`no connection within ${startTimeout} ms`));
    }, startTimeout);
    startTimer.unref();
    void this.#started.then(() => clearTimeout(startTimer));
    const renewEvery = options.renewEveryMs ?? Math.floor(this.#leaseMs / 4);
    this.#renewTimer = setInterval(() => void this.#renew(), renewEvery);
    this.#renewTimer.unref();
  }

  /** Resolves once connected, or once `startTimeoutMs` has passed (then limits are per replica until Redis answers). */
  ready(): Promise<void> {
    return this.#started;
  }

  acquire(keyId: string, limits: KeyLimits): LimitDecision | Promise<LimitDecision> {
    if (this.#state !== 'up') return this.#fallback.acquire(keyId, limits);
    return this.#acquireShared(keyId, limits);
  }

  async #acquireShared(keyId: string, limits: KeyLimits): Promise<LimitDecision> {
    const keys = limitKeys(this.#prefix, keyId);
    const id = `${this.#replica}:${(++this.#seq).toString(36)}`;
    let reply;
    try {
      reply = parseAcquireReply(
        await this.#timed(
          this.#redis.gatehouseAcquire(
            keys.rpm,
            keys.tpm,
            keys.slots,
            keys.reserved,
            this.#nowArg(),
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
      this.#trip(error);
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
    if (this.#state !== 'up') return;
    try {
      await this.#timed(this.#redis.zrem(limitKeys(this.#prefix, keyId).slots, lease));
    } catch (error) {
      this.#trip(error);
    }
  }

  async addTokens(keyId: string, tokens: number): Promise<void> {
    const whole = Math.round(tokens);
    if (!(whole > 0)) return;
    this.#fallback.addTokens(keyId, whole);
    if (this.#state !== 'up') return;
    try {
      await this.#timed(
        this.#redis.gatehouseAddTokens(limitKeys(this.#prefix, keyId).tpm, this.#nowArg(), LIMIT_WINDOW_MS, whole),
      );
    } catch (error) {
      this.#trip(error);
    }
  }

  /** A reservation taken while Redis is skipped lives in the fallback (no `id`) and is settled there. */
  reserveTokens(keyId: string, tpm: number, tokens: number): ReservationDecision | Promise<ReservationDecision> {
    if (this.#state !== 'up') return this.#fallback.reserveTokens(keyId, tpm, tokens);
    return this.#reserveShared(keyId, tpm, Math.min(Math.max(0, Math.ceil(tokens)), tpm));
  }

  async #reserveShared(keyId: string, tpm: number, need: number): Promise<ReservationDecision> {
    const keys = limitKeys(this.#prefix, keyId);
    const id = `${this.#replica}:${(++this.#seq).toString(36)}`;
    let reply: unknown;
    try {
      reply = await this.#timed(
        this.#redis.gatehouseReserve(keys.tpm, keys.reserved, this.#nowArg(), LIMIT_WINDOW_MS, tpm, need, id),
      );
    } catch (error) {
      this.#trip(error);
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
    if (this.#state !== 'up') return;
    const keys = limitKeys(this.#prefix, keyId);
    try {
      await this.#timed(
        this.#redis.gatehouseSettle(keys.tpm, keys.reserved, this.#nowArg(), LIMIT_WINDOW_MS, reservation.id, whole),
      );
    } catch (error) {
      this.#trip(error);
    }
  }

  peek(keyId: string, limits: KeyLimits): LimitSnapshot | Promise<LimitSnapshot> {
    return this.#fallback.peek(keyId, limits);
  }

  /** A reservation taken while Redis is skipped lives in the fallback (no `id`) and is settled there. */
  reserveBudget(keyId: string, check: BudgetCheck): BudgetDecision | Promise<BudgetDecision> {
    if (this.#state !== 'up') return this.#fallback.reserveBudget(keyId, check);
    return this.#reserveBudgetShared(keyId, check);
  }

  async #reserveBudgetShared(keyId: string, check: BudgetCheck): Promise<BudgetDecision> {
    const keys = budgetKeys(this.#prefix, keyId, check.start);
    const need = wholeNeed(check);
    const id = `${this.#replica}:${(++this.#seq).toString(36)}`;
    const reserve = () =>
      this.#timed(
        this.#redis.gatehouseBudgetReserve(
          keys.totals,
          keys.reserved,
          this.#nowArg(),
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
        await this.#timed(
          this.#redis.gatehouseBudgetSeed(keys.totals, seed.tokens, seed.requests, seed.gpuMs, check.end + 3_600_000),
        );
        reply = await reserve();
      }
    } catch (error) {
      if (error instanceof SeedFailure) throw error.cause;
      this.#trip(error);
      return this.#fallback.reserveBudget(keyId, check);
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

  async settleBudget(keyId: string, reservation: BudgetReservation, used: BudgetAmounts): Promise<void> {
    if (reservation.id === undefined) return this.#fallback.settleBudget(keyId, reservation, used);
    // While Redis is skipped the reservation is left to expire; the request log has the call.
    if (this.#state !== 'up') return;
    const keys = budgetKeys(this.#prefix, keyId, reservation.start);
    try {
      await this.#timed(
        this.#redis.gatehouseBudgetSettle(
          keys.totals,
          keys.reserved,
          reservation.id,
          Math.round(used.tokens),
          Math.round(used.requests),
          used.gpuMs,
        ),
      );
    } catch (error) {
      this.#trip(error);
    }
  }

  async budgetUsed(keyId: string, check: Omit<BudgetCheck, 'need' | 'limits'>): Promise<BudgetAmounts> {
    if (this.#state !== 'up') return this.#fallback.budgetUsed(keyId, check);
    const keys = budgetKeys(this.#prefix, keyId, check.start);
    let reply: unknown;
    try {
      reply = await this.#timed(
        this.#redis.gatehouseBudgetUsed(keys.totals, keys.reserved, this.#nowArg(), String(check.start)),
      );
    } catch (error) {
      this.#trip(error);
      return this.#fallback.budgetUsed(keyId, check);
    }
    // No totals in Redis yet: no call this period since they expired; the log says what it holds.
    if (Array.isArray(reply) && reply[0] === -1) return check.seed();
    return amounts(reply as unknown[], 0);
  }

  status(): LimitsStatus {
    const up = this.#state === 'up';
    return {
      scope: up ? 'shared' : 'replica',
      redis: up ? 'connected' : 'unavailable',
      unavailableSince: up ? null : this.#downSince,
    };
  }

  async close(): Promise<void> {
    this.#closing = true;
    this.#settleStart?.();
    clearInterval(this.#renewTimer);
    clearTimeout(this.#probeTimer);
    this.#fallback.close();
    if (this.#redis.status === 'ready') {
      // QUIT goes after the releases already sent on this connection.
      await Promise.race([this.#redis.quit().catch(() => {}), new Promise((r) => setTimeout(r, 500).unref())]);
    }
    this.#redis.disconnect();
  }

  /**
   * `work`, or a "Command timed out" rejection after `commandTimeoutMs`. Timers run before I/O
   * in each turn of the event loop, so after the loop stalled (GC, a busy start) a reply may be
   * waiting unread when the timer fires: the timeout waits for that turn's I/O (setImmediate)
   * before it counts, so a slow process is not taken for a slow Redis.
   */
  #timed<T>(work: Promise<T>): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      let settled = false;
      const timer = setTimeout(() => {
        setImmediate(() => {
          if (settled) return;
          settled = true;
          reject(new Error('Command timed out'));
        });
      }, this.#timeoutMs);
      work.then(
        (value) => {
          if (settled) return;
          settled = true;
          clearTimeout(timer);
          resolve(value);
        },
        (error: unknown) => {
          if (settled) return;
          settled = true;
          clearTimeout(timer);
          reject(error instanceof Error ? error : new Error(String(error)));
        },
      );
    });
  }

  #nowArg(): string {
    return this.#now ? String(Math.floor(this.#now())) : '';
  }

  async #renew(): Promise<void> {
    if (this.#state !== 'up' || this.#held.size === 0) return;
    try {
      await Promise.all(
        [...this.#held].map(([keyId, ids]) =>
          this.#timed(
            this.#redis.gatehouseRenew(limitKeys(this.#prefix, keyId).slots, this.#nowArg(), this.#leaseMs, ...ids),
          ),
        ),
      );
    } catch (error) {
      this.#trip(error);
    }
  }

  /** Redis failed: skip it from now on, say so once, and start probing in the background. */
  #trip(error: unknown): void {
    if (this.#closing) return;
    if (this.#state !== 'down') {
      const atStart = this.#state === 'connecting';
      this.#state = 'down';
      this.#downSince = Date.now();
      this.#settleStart?.();
      this.#logger.warn(
        { limits: 'replica', redis: this.#where, error: this.#scrub(error) },
        atStart
          ? `Redis at ${this.#where} is unreachable at start (${this.#scrub(error)}): per-key limits are ` +
              `counted per replica until it answers; retrying every ${this.#retryMs / 1000} s.`
          : `Redis at ${this.#where} is unreachable (${this.#scrub(error)}): per-key limits are counted ` +
              `per replica until it is back; retrying every ${this.#retryMs / 1000} s.`,
      );
    }
    this.#scheduleProbe();
  }

  #scheduleProbe(): void {
    if (this.#probeTimer !== undefined || this.#closing) return;
    this.#probeTimer = setTimeout(() => {
      this.#probeTimer = undefined;
      void this.#probe();
    }, this.#retryMs);
    this.#probeTimer.unref();
  }

  /** One PING; an answer closes the breaker. Runs in the background, never on a call's path. */
  async #probe(): Promise<void> {
    if (this.#state === 'up' || this.#probing || this.#closing) return;
    this.#probing = true;
    try {
      await this.#timed(this.#redis.ping());
    } catch {
      this.#probing = false;
      if (this.#state === 'connecting') return; // the start timer decides
      this.#scheduleProbe();
      return;
    }
    this.#probing = false;
    if (this.#closing) return;
    const wasDown = this.#state === 'down';
    const downForMs = this.#downSince === null ? 0 : Date.now() - this.#downSince;
    this.#state = 'up';
    this.#downSince = null;
    this.#settleStart?.();
    if (wasDown) {
      this.#logger.info(
        { limits: 'shared', redis: this.#where, down_ms: downForMs },
        `Redis at ${this.#where} is back: per-key limits are shared by every replica again.`,
      );
    } else {
      this.#logger.info(
        { limits: 'shared', redis: this.#where, prefix: this.#prefix },
        `Limits: per-key limits are shared by every replica through Redis at ${this.#where} (key prefix ` +
          `${this.#prefix}).`,
      );
    }
  }

  /** An error's message, with the password taken out should a driver ever echo it. */
  #scrub(error: unknown): string {
    const message = error instanceof Error ? error.message : String(error);
    return this.#password ? message.split(this.#password).join('[REDACTED]') : message;
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

function optional(limit: number | null): string {
  return limit === null ? '' : String(limit);
}

/** `redis://host:6379/0`: where, never who (no user, no password). */
function describeRedisUrl(url: string): string {
  try {
    const parsed = new URL(url);
    const db = parsed.pathname.replace(/^\//, '') || '0';
    return `${parsed.protocol}//${parsed.hostname}:${parsed.port || '6379'}/${db}`;
  } catch {
    return 'redis://(unparseable URL)';
  }
}

function redisPassword(url: string): string {
  try {
    return decodeURIComponent(new URL(url).password);
  } catch {
    return '';
  }
}
