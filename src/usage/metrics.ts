/**
 * Prometheus metrics (formatted by prom-client), fed by the call recorder as each call ends. Counters live in
 * this process's memory and only ever grow: they are never computed from the request log (a
 * prune would make them go down) and never reloaded from it at start (a restart is a counter
 * reset, which Prometheus' `rate()` expects). A scrape formats what is in memory: no database.
 *
 * Cardinality is bounded: at most `maxModels` model labels and `maxKeys` key labels, after which
 * new values are reported as `other`. A model name only takes a slot with a call that was not
 * refused as the client's mistake (4xx), so made-up model names cannot use up the slots.
 */
import type { Registry } from 'prom-client';
import type { LimitKind } from './limits.js';
import { registerScrapeTimeMetric, ScrapeTimeMetric, SecondsHistogram, type MetricValue } from './scrape-time-metrics.js';

export const OTHER_LABEL = 'other';
/** Label value for calls without a key (open mode) or without a model (e.g. `GET /v1/models`). */
export const NONE_LABEL = 'none';

/** Distinct label values, capped; never evicts (a counter's series must not disappear). */
export class LabelCap {
  readonly #seen = new Set<string>();
  constructor(readonly max: number) {}

  /** `value` if admitted earlier or now (when `admit` and there is room), else `other`. */
  label(value: string, admit = true): string {
    if (this.#seen.has(value)) return value;
    if (admit && this.#seen.size < this.max) {
      this.#seen.add(value);
      return value;
    }
    return OTHER_LABEL;
  }
}

export interface MetricsOptions {
  maxModels?: number;
  maxKeys?: number;
  /** Node process metrics (CPU, memory, event loop lag, GC). Default true. */
  processMetrics?: boolean;
}

const LATENCY_BUCKETS_S: readonly number[] = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300];

/** What a finished call tells the metrics. Times in ms. */
export interface CallObservation {
  model: string | undefined;
  keyName: string | undefined;
  status: number;
  durationMs: number;
  ttfbMs: number | undefined;
  ttftMs: number | undefined;
  inputTokens: number | null;
  outputTokens: number | null;
  cachedTokens: number | null;
  errorClass: string | undefined;
}

/** Everything the calls of one (model, key) add up to, in plain numbers (scrape-time-metrics.ts). */
class CallSeries {
  /** Calls by HTTP status. */
  readonly requests = new Map<number, number>();
  input = 0;
  output = 0;
  cached = 0;
  readonly duration = new SecondsHistogram(LATENCY_BUCKETS_S);
  readonly ttfb = new SecondsHistogram(LATENCY_BUCKETS_S);
  readonly ttft = new SecondsHistogram(LATENCY_BUCKETS_S);
  readonly labels: { model: string; key: string };

  constructor(model: string, key: string) {
    this.labels = { model, key };
  }
}

/**
 * A failure of llama-swap or the model server: no answer in time, no connection, a broken
 * stream, or a 5xx. A 4xx they return (unknown model, bad parameters) is the caller's problem.
 */
export function isUpstreamFailure(errorClass: string | undefined, status: number): boolean {
  if (!errorClass?.startsWith('upstream_')) return false;
  if (errorClass === 'upstream_status' || errorClass === 'upstream_error') return status >= 500;
  return true;
}

export class GatewayMetrics {
  readonly #models: LabelCap;
  readonly #keys: LabelCap;
  readonly #processMetrics: boolean;
  readonly #queueLength: (() => number) | undefined;
  readonly #limitsShared: (() => boolean) | undefined;
  #inFlight = 0;
  /** `model` → `class` → calls. */
  readonly #upstreamErrors = new Map<string, Map<string, number>>();
  /** `key` → `limit` → calls. */
  readonly #rateLimited = new Map<string, Map<LimitKind, number>>();
  #dropped = 0;
  #written = 0;
  #writeFailures = 0;
  /** model → key → series; bounded by the label caps. */
  readonly #series = new Map<string, Map<string, CallSeries>>();
  /** Built at the first scrape (#buildRegistry). */
  #registry: Promise<Registry> | undefined;

  constructor(options: MetricsOptions & { queueLength?: () => number; limitsShared?: () => boolean } = {}) {
    this.#models = new LabelCap(options.maxModels ?? 100);
    this.#keys = new LabelCap(options.maxKeys ?? 200);
    this.#processMetrics = options.processMetrics ?? true;
    this.#queueLength = options.queueLength;
    this.#limitsShared = options.limitsShared;
  }

  /**
   * prom-client is loaded, and its registry filled, when /metrics is first asked for: a gateway
   * nobody scrapes does not keep the module (~3 MB resident) or its process-metric observers.
   * Every counter is a plain number from the start, so nothing counted before is lost; Node's
   * process metrics (GC, event-loop lag) count from the first scrape on.
   */
  async #buildRegistry(): Promise<Registry> {
    const { Registry, collectDefaultMetrics } = await import('prom-client');
    const registry = new Registry();
    const add = (name: string, help: string, type: 'counter' | 'gauge' | 'histogram', values: () => MetricValue[]) =>
      registerScrapeTimeMetric(registry, new ScrapeTimeMetric(name, help, type, values));
    const each = (pick: (series: CallSeries) => MetricValue[]) => () => {
      const out: MetricValue[] = [];
      for (const byKey of this.#series.values()) for (const series of byKey.values()) out.push(...pick(series));
      return out;
    };
    const histogram = (name: string, help: string, of: (series: CallSeries) => SecondsHistogram) =>
      add(name, help, 'histogram', each((series) => of(series).values(name, series.labels)));
    const single = (value: () => number) => () => [{ labels: {}, value: value() }];
    const nested = <K extends string>(map: Map<string, Map<K, number>>, outer: string, inner: string) => () =>
      [...map].flatMap(([a, byB]) => [...byB].map(([b, value]) => ({ labels: { [outer]: a, [inner]: b }, value })));

    add('gatehouse_requests_total', 'Calls to /v1 that ended, by model, key name and HTTP status (499: the client left before a status was sent).', 'counter',
      each((series) => [...series.requests].map(([status, value]) => ({ labels: { ...series.labels, status: String(status) }, value }))),
    );
    add('gatehouse_tokens_total', 'Tokens of calls that ended, by type: input (cached included), output, cached.', 'counter',
      each((series) =>
        // Every type from the series' first call on, zero included: rate() needs a starting point.
        (['input', 'output', 'cached'] as const).map((type) => ({ labels: { ...series.labels, type }, value: series[type] })),
      ),
    );
    histogram('gatehouse_request_duration_seconds', 'Time from the call arriving to the response ending.', (series) => series.duration);
    histogram('gatehouse_time_to_first_byte_seconds', 'Time from the call arriving to the response headers being sent.', (series) => series.ttfb);
    histogram('gatehouse_time_to_first_token_seconds', 'Time from the call arriving to the first generated token (streams) or the first body byte.', (series) => series.ttft);
    add('gatehouse_requests_in_flight', 'Calls to /v1 not yet ended, streams included.', 'gauge', single(() => this.#inFlight));
    add('gatehouse_upstream_errors_total', 'Calls that failed because of llama-swap or the model server (timeout, unreachable, broken stream, 5xx), by class (upstream_timeout, upstream_unreachable, upstream_status ...).', 'counter', nested(this.#upstreamErrors, 'model', 'class'));
    add('gatehouse_rate_limited_total', 'Calls refused with 429 by a per-key limit, by key name and limit (rpm, tpm, concurrent).', 'counter', nested(this.#rateLimited, 'key', 'limit'));
    add('gatehouse_usage_records_dropped_total', 'Usage records dropped because the write queue was full (the store was too slow or down).', 'counter', single(() => this.#dropped));
    add('gatehouse_usage_records_written_total', 'Usage records written to the store.', 'counter', single(() => this.#written));
    add('gatehouse_usage_write_failures_total', 'Failed batch writes of usage records (the batch is retried).', 'counter', single(() => this.#writeFailures));
    add('gatehouse_usage_queue_length', 'Usage records waiting to be written.', 'gauge', single(() => this.#queueLength?.() ?? 0));
    add('gatehouse_limits_shared', 'Per-key limits are counted in Redis for every replica (1), or by this replica alone (0: GATEHOUSE_REDIS_URL unset, or Redis unreachable).', 'gauge', single(() => (this.#limitsShared?.() ? 1 : 0)));
    if (this.#processMetrics) collectDefaultMetrics({ register: registry });
    return registry;
  }

  callStarted(): void {
    this.#inFlight++;
  }

  callEnded(call: CallObservation): void {
    this.#inFlight--;
    // A 4xx may carry any made-up model name (404 unknown model): it must not take a slot.
    const admit = call.status >= 100 && (call.status < 400 || call.status >= 500);
    const model = call.model === undefined ? NONE_LABEL : this.#models.label(call.model, admit);
    const key = call.keyName === undefined ? NONE_LABEL : this.#keys.label(call.keyName);
    const series = this.#seriesOf(model, key);
    series.requests.set(call.status, (series.requests.get(call.status) ?? 0) + 1);
    if (call.inputTokens) series.input += call.inputTokens;
    if (call.outputTokens) series.output += call.outputTokens;
    if (call.cachedTokens) series.cached += call.cachedTokens;
    series.duration.observe(call.durationMs / 1000);
    if (call.ttfbMs !== undefined) series.ttfb.observe(call.ttfbMs / 1000);
    if (call.ttftMs !== undefined) series.ttft.observe(call.ttftMs / 1000);
    if (isUpstreamFailure(call.errorClass, call.status)) increment(this.#upstreamErrors, model, call.errorClass!, 1);
  }

  #seriesOf(model: string, key: string): CallSeries {
    let byKey = this.#series.get(model);
    if (!byKey) {
      byKey = new Map();
      this.#series.set(model, byKey);
    }
    let series = byKey.get(key);
    if (!series) {
      series = new CallSeries(model, key);
      byKey.set(key, series);
    }
    return series;
  }

  rateLimited(keyName: string | undefined, limit: LimitKind): void {
    increment(this.#rateLimited, keyName === undefined ? NONE_LABEL : this.#keys.label(keyName), limit, 1);
  }

  recordsDropped(n: number): void {
    this.#dropped += n;
  }

  recordsWritten(n: number): void {
    this.#written += n;
  }

  writeFailed(): void {
    this.#writeFailures++;
  }

  /** The Prometheus text exposition. */
  async exposition(): Promise<{ contentType: string; body: string }> {
    this.#registry ??= this.#buildRegistry().catch((error: unknown) => {
      this.#registry = undefined;
      throw error;
    });
    const registry = await this.#registry;
    return { contentType: registry.contentType, body: await registry.metrics() };
  }
}

function increment<K extends string>(map: Map<string, Map<K, number>>, outer: string, inner: K, n: number): void {
  let byInner = map.get(outer);
  if (!byInner) {
    byInner = new Map();
    map.set(outer, byInner);
  }
  byInner.set(inner, (byInner.get(inner) ?? 0) + n);
}
