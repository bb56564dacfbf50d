/**
 * The Redis connection that per-key limits and key budgets count in, shared by every replica
 * (`GATEHOUSE_REDIS_URL`). Redis must never stop traffic, so:
 * - every command has a short timeout (`commandTimeoutMs`, 100 ms) and none waits for a
 *   connection (no offline queue, no retries per command): a command fails at once when there
 *   is no connection, and within the timeout when Redis stops answering;
 * - a failure trips a breaker (`trip`): while it is open the stores skip Redis and count in their
 *   per-replica fallbacks, and a PING probes in the background every `retryMs`; the first answer
 *   closes it;
 * - the outage is logged once (warn) and the recovery once (info).
 * The stores define their own Lua commands on `client` and check `up` before each use.
 */
import { randomBytes } from 'node:crypto';
import { createRequire } from 'node:module';
import type { Redis } from 'ioredis';
import type { Logger } from 'pino';
import type { LimitsStatus } from './limit-store.js';

export interface SharedRedisOptions {
  /** `redis://[:password@]host:port[/db]` or `rediss://` (TLS). A secret: never logged. */
  url: string;
  /** Prefix of every key, e.g. `gatehouse:` (tests use one per run). */
  prefix: string;
  logger: Logger;
  /** Longest wait for one Redis command. Default 100 ms. */
  commandTimeoutMs?: number;
  /** After a failure, Redis is skipped for this long, then probed in the background. Default 2 s. */
  retryMs?: number;
  /** How long `ready()` waits for the first connection at start. Default 1 s. */
  startTimeoutMs?: number;
  /** Milliseconds for the scripts (tests move time); default Redis's own clock. */
  now?: () => number;
}

/**
 * Lua that sets `now`, in milliseconds: ARGV[1] when the caller passed a number (`nowArg()`, the
 * tests' clock), else Redis's own clock. Every script starts with it.
 */
export const NOW = `
local now = tonumber(ARGV[1])
if not now then
  local t = redis.call('TIME')
  now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
end
`;

type State = 'connecting' | 'up' | 'down';

export class SharedRedis {
  readonly client: Redis;
  readonly prefix: string;
  readonly #logger: Logger;
  readonly #where: string;
  readonly #password: string;
  readonly #retryMs: number;
  readonly #timeoutMs: number;
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
  /** Settles when the first connection succeeded or failed. */
  readonly #started: Promise<void>;
  #settleStart: (() => void) | undefined;

  constructor(options: SharedRedisOptions) {
    this.prefix = options.prefix;
    this.#logger = options.logger;
    this.#where = describeRedisUrl(options.url);
    this.#password = redisPassword(options.url);
    this.#retryMs = options.retryMs ?? 2000;
    this.#now = options.now;
    this.#timeoutMs = options.commandTimeoutMs ?? 100;
    // Required here, not at the top: a gateway without GATEHOUSE_REDIS_URL never loads ioredis.
    const { Redis: RedisClient } = createRequire(import.meta.url)('ioredis') as { Redis: typeof Redis };
    this.client = new RedisClient(options.url, {
      // A backstop only (it also bounds the connection's AUTH and ready check): calls use the
      // short, stall-tolerant timeout of `timed`.
      commandTimeout: Math.max(1000, this.#timeoutMs * 10),
      connectTimeout: 1000,
      enableOfflineQueue: false,
      maxRetriesPerRequest: 0,
      // Reconnect for ever, at most every 2 s; the breaker decides when Redis is used again.
      retryStrategy: (times) => Math.min(times * 100, 2000),
      reconnectOnError: null,
      autoResubscribe: false,
      connectionName: 'gatehouse-limits',
    });
    // Without a listener ioredis prints every connection error to the console; the breaker logs.
    this.client.on('error', (error) => (this.#lastError = error));
    // While connecting, ioredis retries by itself (a failed ready check, e.g. after a stalled
    // start, closes and reconnects); the start timer decides when to give up for now.
    this.client.on('close', () => {
      if (!this.#closing && this.#state === 'up') this.trip(new Error('connection closed'));
    });
    this.client.on('ready', () => void this.#probe());

    const startTimeout = options.startTimeoutMs ?? 1000;
    this.#started = new Promise<void>((resolve) => (this.#settleStart = resolve));
    const startTimer = setTimeout(() => {
      if (this.#state === 'connecting')
        this.trip(this.#lastError ?? new Error(`no connection within ${startTimeout} ms`));
    }, startTimeout);
    startTimer.unref();
    void this.#started.then(() => clearTimeout(startTimer));
  }

  /** Resolves once connected, or once `startTimeoutMs` passed (then counting is per replica until Redis answers). */
  ready(): Promise<void> {
    return this.#started;
  }

  /** Whether Redis is used now (the breaker is closed). */
  get up(): boolean {
    return this.#state === 'up';
  }

  /** A new call id, unique across replicas. */
  callId(): string {
    return `${this.#replica}:${(++this.#seq).toString(36)}`;
  }

  /** The scripts' `now` argument: the test clock, or empty for Redis's own `TIME`. */
  nowArg(): string {
    return this.#now ? String(Math.floor(this.#now())) : '';
  }

  status(): LimitsStatus {
    const up = this.#state === 'up';
    return {
      scope: up ? 'shared' : 'replica',
      redis: up ? 'connected' : 'unavailable',
      unavailableSince: up ? null : this.#downSince,
    };
  }

  /** Closes the connection once; commands already sent on it go first. */
  async close(): Promise<void> {
    if (this.#closing) return;
    this.#closing = true;
    this.#settleStart?.();
    clearTimeout(this.#probeTimer);
    if (this.client.status === 'ready') {
      // QUIT goes after the releases already sent on this connection.
      await Promise.race([this.client.quit().catch(() => {}), new Promise((r) => setTimeout(r, 500).unref())]);
    }
    this.client.disconnect();
  }

  /**
   * `work`, or a "Command timed out" rejection after `commandTimeoutMs`. Timers run before I/O
   * in each turn of the event loop, so after the loop stalled (GC, a busy start) a reply may be
   * waiting unread when the timer fires: the timeout waits for that turn's I/O (setImmediate)
   * before it counts, so a slow process is not taken for a slow Redis.
   */
  timed<T>(work: Promise<T>): Promise<T> {
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

  /** Redis failed: skip it from now on, say so once, and start probing in the background. */
  trip(error: unknown): void {
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
      await this.timed(this.client.ping());
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
        { limits: 'shared', redis: this.#where, prefix: this.prefix },
        `Limits: per-key limits are shared by every replica through Redis at ${this.#where} (key prefix ` +
          `${this.prefix}).`,
      );
    }
  }

  /** An error's message, with the password taken out should a driver ever echo it. */
  #scrub(error: unknown): string {
    const message = error instanceof Error ? error.message : String(error);
    return this.#password ? message.split(this.#password).join('[REDACTED]') : message;
  }
}

/** A limit as a script argument: empty for none. */
export function optional(limit: number | null): string {
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
