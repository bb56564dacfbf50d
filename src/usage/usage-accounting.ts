/**
 * The usage subsystem, wired once per app: the response tap, the call recorder, the write
 * queue, retention, per-key limits and the metrics registry. `buildApp` creates it from the
 * settings and the store; the route table takes its steps, tap and start hook.
 */
import type { Logger } from 'pino';
import type { ProxyStep, TapFactory } from '../core/steps.js';
import type { ProxyContext } from '../core/context.js';
import type { BudgetPeriod } from '../store/records.js';
import type { Store } from '../store/store.js';
import { captureRequestBody } from './body-capture.js';
import { createCallRecorder } from './call-recorder.js';
import { keyLimits } from '../limits/key-limits.js';
import type { LimitStore } from '../limits/limit-store.js';
import { MemoryLimitStore } from '../limits/memory-limit-store.js';
import { RedisLimitStore } from '../limits/redis-limit-store.js';
import { SharedRedis, type SharedRedisOptions } from '../limits/shared-redis.js';
import { tokenReservation } from '../limits/token-reservation.js';
import { KeySlotWaits } from '../limits/key-slot-waits.js';
import { createRateLimitHeaders, rateLimitHeadersStep } from '../limits/rate-limit-headers.js';
import { budgetReservation } from '../budgets/budget-reservation.js';
import { BudgetLedger } from '../budgets/budget-ledger.js';
import { NO_AMOUNTS, type BudgetAmounts, type BudgetStore } from '../budgets/budget-store.js';
import { periodWindow, type PeriodWindow } from '../budgets/budget-period.js';
import { RedisBudgetStore } from '../budgets/redis-budget-store.js';
import { GatewayMetrics, type MetricsOptions } from './metrics.js';
import { UsageRetention, type RetentionOptions } from './retention.js';
import { usageSummary, type SummaryGroupBy, type SummaryRange, type UsageSummary } from './summary.js';
import { createUsageTap } from './usage-tap.js';
import { systemClock, type Scheduler } from '../queue/scheduler.js';
import { UsageWriter, type UsageWriterOptions } from './usage-writer.js';

/** The settings usage reads (`settings/` validates them). */
export interface UsageSettings {
  usageRecording: boolean;
  usageRetentionMs: number;
  usageCaptureBytes: number;
  redisUrl?: string | undefined;
  redisPrefix?: string | undefined;
  /** How long a call may wait for one of its key's concurrency slots (`GATEHOUSE_QUEUE_TIMEOUT`). */
  queueTimeoutMs: number;
  /** The IANA zone of budget periods (`GATEHOUSE_TIMEZONE`). */
  timeZone: string;
}

export interface UsageAccountingOptions {
  settings: UsageSettings;
  /** Without a store nothing is written (metrics and limits still work). */
  store: Store | undefined;
  logger: Logger;
  /** Default: `RedisLimitStore` (shared) with `settings.redisUrl`, else `MemoryLimitStore` (per process). */
  limits?: LimitStore;
  /** Default: `RedisBudgetStore` (shared) with `settings.redisUrl`, else `BudgetLedger` (per process). */
  budgets?: BudgetStore;
  /** Timing of the shared Redis connection (command timeout, retry); defaults in `SharedRedisOptions`. */
  redis?: Pick<SharedRedisOptions, 'commandTimeoutMs' | 'retryMs' | 'startTimeoutMs'>;
  metrics?: MetricsOptions;
  writer?: Omit<UsageWriterOptions, 'onWritten' | 'onDropped' | 'onError'>;
  retention?: Omit<RetentionOptions, 'retentionMs' | 'onError'>;
  /** Wall clock (record times, summaries). Default `Date.now`. */
  now?: () => number;
  /**
   * The admission queue: calls waiting for a key's concurrency slot wait on its clock and are
   * shown with it. Default: the system clock, shown nowhere.
   */
  queue?: Scheduler;
}

export interface UsageAccounting {
  readonly metrics: GatewayMetrics;
  readonly limits: LimitStore;
  readonly budgets: BudgetStore;
  /** Whether usage records are written (`GATEHOUSE_USAGE_RECORDING` and a store). */
  readonly recording: boolean;
  /** `keyLimits`, for the `/v1` chain right after `clientAuth`. */
  readonly limitStep: ProxyStep;
  /** `tokenReservation`, once the body is read and the call is known to be forwarded. */
  readonly reserveStep: ProxyStep;
  /** `budgetReservation`, right after `tokenReservation`. */
  readonly budgetStep: ProxyStep;
  /** Sets the rate-limit headers of keys with limits or a budget: GET/HEAD calls, before `modelsListing`. */
  readonly readHeadersStep: ProxyStep;
  /** The same for every other call, after the reservations. */
  readonly headersStep: ProxyStep;
  /** A key's use of its budget in the period holding now (the dashboard). */
  budgetUse(keyId: string, period: BudgetPeriod): Promise<{ window: PeriodWindow; used: BudgetAmounts }>;
  /** `captureRequestBody`, after `readModel`, when body capture is on. */
  readonly captureStep: ProxyStep | undefined;
  /** The response tap; undefined when recording is off. */
  readonly tap: TapFactory | undefined;
  readonly onStart: (ctx: ProxyContext) => void;
  /** `keyIds`: only calls made with these keys (a member's own). */
  summary(range: SummaryRange, groupBy: SummaryGroupBy | null, keyIds?: readonly string[]): Promise<UsageSummary>;
  /** Resolves once the limit store is usable: Redis connected, or given up on for now (at most ~1 s). */
  ready(): Promise<void>;
  /** Writes the queued records now. */
  flush(): Promise<void>;
  /** One retention pass now; resolves with the rows deleted. */
  prune(): Promise<number>;
  /** Writes what is queued and stops the timers. Call before closing the store. */
  close(): Promise<void>;
}

export function createUsageAccounting(options: UsageAccountingOptions): UsageAccounting {
  const { settings, store, logger } = options;
  const now = options.now ?? Date.now;
  const recording = settings.usageRecording && store !== undefined;
  const report = throttledErrorLog(logger);

  let writer: UsageWriter | undefined;
  // One Redis connection (and breaker) for limits and budgets, unless a test brings its own stores.
  const redis =
    settings.redisUrl !== undefined && (options.limits === undefined || options.budgets === undefined)
      ? new SharedRedis({
          url: settings.redisUrl,
          prefix: settings.redisPrefix ?? 'gatehouse:',
          logger,
          ...options.redis,
        })
      : undefined;
  const limits = options.limits ?? (redis ? new RedisLimitStore({ connection: redis }) : new MemoryLimitStore());
  const budgets = options.budgets ?? (redis ? new RedisBudgetStore(redis) : new BudgetLedger());
  const metrics = new GatewayMetrics({
    ...options.metrics,
    queueLength: () => writer?.queued ?? 0,
    limitsShared: () => limits.status().scope === 'shared',
  });
  if (recording) {
    writer = new UsageWriter(store.usage, {
      ...writeBatching(store.usage.maxAppendRecords),
      ...options.writer,
      onWritten: (n) => metrics.recordsWritten(n),
      onDropped: (n) => metrics.recordsDropped(n),
      onError: (error) => {
        metrics.writeFailed();
        report(error, 'writing usage records failed; the batch is kept and retried');
      },
    });
  }
  const retention = store
    ? new UsageRetention(store.usage, {
        ...options.retention,
        now,
        retentionMs: settings.usageRetentionMs,
        onError: (error) => report(error, 'pruning old usage records failed'),
      })
    : undefined;
  const capture = recording && settings.usageCaptureBytes > 0;
  // Budgets start from the request log's sums for the period; without a log, from this process's count.
  const seed = (keyId: string, from: number, to: number): Promise<BudgetAmounts> =>
    recording ? store.usage.keyTotals(keyId, from, to) : Promise.resolve({ ...NO_AMOUNTS });
  const budgetUse = async (keyId: string, period: BudgetPeriod) => {
    const window = periodWindow(now(), period, settings.timeZone);
    const used = await budgets.used(keyId, { ...window, seed: () => seed(keyId, window.start, window.end) });
    return { window, used };
  };
  const headers = createRateLimitHeaders({
    windows: limits,
    now,
    budgetUse: (keyId, period) => budgetUse(keyId, period).then(({ window, used }) => ({ ...window, ...used })),
  });

  return {
    metrics,
    limits,
    budgets,
    recording,
    limitStep: keyLimits(
      limits,
      (keyName, limit) => metrics.rateLimited(keyName, limit),
      {
        waits: new KeySlotWaits(options.queue?.clock ?? systemClock, options.queue),
        queueTimeoutMs: settings.queueTimeoutMs,
      },
      headers,
    ),
    reserveStep: tokenReservation(
      limits,
      (keyName, limit) => metrics.rateLimited(keyName, limit),
      (error) => report(error, 'counting tokens for the TPM limit failed'),
      headers,
    ),
    budgetStep: budgetReservation({
      store: budgets,
      now,
      timeZone: settings.timeZone,
      seed,
      headers,
      onLimited: (keyName) => metrics.rateLimited(keyName, 'budget'),
      onError: (error) => report(error, 'counting a call against its key budget failed'),
    }),
    readHeadersStep: rateLimitHeadersStep(headers, 'reads'),
    headersStep: rateLimitHeadersStep(headers, 'writes'),
    budgetUse,
    captureStep: capture ? captureRequestBody(settings.usageCaptureBytes) : undefined,
    tap: recording ? createUsageTap({ captureBytes: capture ? settings.usageCaptureBytes : 0 }) : undefined,
    onStart: createCallRecorder({ metrics, writer, now }),
    summary(range, groupBy, keyIds) {
      if (!store) throw new Error('usage summary needs a store');
      return usageSummary(store, range, groupBy, now(), keyIds);
    },
    ready: () => redis?.ready() ?? Promise.resolve(),
    flush: () => writer?.flush() ?? Promise.resolve(),
    prune: () => retention?.prune() ?? Promise.resolve(0),
    async close() {
      await retention?.close();
      await writer?.close();
      await limits.close();
      await redis?.close();
    },
  };
}

/** One log line per kind of failure at most every 10 s, with how many were folded into it. */
function throttledErrorLog(logger: Logger): (error: unknown, message: string) => void {
  const last = new Map<string, { at: number; suppressed: number }>();
  return (error, message) => {
    const at = Date.now();
    const entry = last.get(message);
    if (entry && at - entry.at < 10_000) {
      entry.suppressed++;
      return;
    }
    logger.error({ err: error, suppressed: entry?.suppressed ?? 0 }, message);
    last.set(message, { at, suppressed: 0 });
  };
}

/** Batches of up to 200 records, joined while they wait, never more than the store takes in one append. */
function writeBatching(maxRecords: number): { batchSize: number; maxBatchesPerWrite: number } {
  const batchSize = Math.max(1, Math.min(200, maxRecords));
  return { batchSize, maxBatchesPerWrite: Math.max(1, Math.floor(maxRecords / batchSize)) };
}
