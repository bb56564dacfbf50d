/**
 * Prometheus metrics (prom-client, one registry per app), fed by the call recorder as each call
 * ends. Counters live in this process's memory and only ever grow: they are never computed from
 * the request log (a prune would make them go down) and never reloaded from it at start (a
 * restart is a counter reset, which Prometheus' `rate()` expects). A scrape reads no database.
 *
 * Cardinality is bounded: at most `maxModels` model labels and `maxKeys` key labels, after which
 * new values are reported as `other`. A model name only takes a slot with a call that was not
 * refused as the client's mistake (4xx), so made-up model names cannot use up the slots.
 */
import { collectDefaultMetrics, Counter, Gauge, Histogram, Registry } from 'prom-client';
import type { LimitKind } from '../limits/limit-store.js';

const OTHER_LABEL = 'other';
/** Label value for calls without a key (open mode) or without a model (e.g. `GET /v1/models`). */
const NONE_LABEL = 'none';

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

/** Waits in the admission queue: from none to its 10-minute default timeout. */
const QUEUE_WAIT_BUCKETS_S = [0.001, 0.1, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600];

export interface MetricsOptions {
  /** Calls waiting in the admission queue now (read when scraped). */
  queueDepth?: () => number;
  maxModels?: number;
  maxKeys?: number;
  /** Node process metrics (CPU, memory, event loop lag, GC). Default true. */
  processMetrics?: boolean;
}

const LATENCY_BUCKETS_S = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300];

/** What a finished call tells the metrics. Times in ms. */
export interface CallObservation {
  model: string | undefined;
  keyName: string | undefined;
  status: number;
  /** Which listener the call came through: `/v1` or the Ollama API. */
  door: 'v1' | 'ollama';
  durationMs: number;
  ttfbMs: number | undefined;
  ttftMs: number | undefined;
  inputTokens: number | null;
  outputTokens: number | null;
  cachedTokens: number | null;
  errorClass: string | undefined;
  /** Time spent in the admission queue; undefined for calls that never reached it. */
  queueMs: number | undefined;
}

/**
 * A failure of llama-swap or the model server: no answer in time, no connection, a broken
 * stream, or a 5xx. A 4xx they return (unknown model, bad parameters) is the caller's problem.
 */
function isUpstreamFailure(errorClass: string | undefined, status: number): boolean {
  if (!errorClass?.startsWith('upstream_')) return false;
  if (errorClass === 'upstream_status' || errorClass === 'upstream_error') return status >= 500;
  return true;
}

export class GatewayMetrics {
  readonly #registry = new Registry();
  readonly #models: LabelCap;
  readonly #keys: LabelCap;
  readonly #processMetrics: boolean;
  #processMetricsStarted = false;
  readonly #requests: Counter<'model' | 'key' | 'status' | 'door'>;
  readonly #tokens: Counter<'model' | 'key' | 'type'>;
  readonly #duration: Histogram<'model' | 'key'>;
  readonly #ttfb: Histogram<'model' | 'key'>;
  readonly #ttft: Histogram<'model' | 'key'>;
  readonly #inFlight: Gauge;
  readonly #queueWait: Histogram<'model'>;
  readonly #upstreamErrors: Counter<'model' | 'class'>;
  readonly #rateLimited: Counter<'key' | 'limit'>;
  readonly #dropped: Counter;
  readonly #written: Counter;
  readonly #writeFailures: Counter;

  constructor(options: MetricsOptions & { queueLength?: () => number; limitsShared?: () => boolean } = {}) {
    this.#models = new LabelCap(options.maxModels ?? 100);
    this.#keys = new LabelCap(options.maxKeys ?? 200);
    this.#processMetrics = options.processMetrics ?? true;
    const registers = [this.#registry];
    const histogram = (name: string, help: string) =>
      new Histogram({ name, help, labelNames: ['model', 'key'] as const, buckets: LATENCY_BUCKETS_S, registers });
    this.#requests = new Counter({
      name: 'gatehouse_requests_total',
      help:
        'Calls to /v1 and the Ollama API that ended, by model, key name, HTTP status (499: the client left ' +
        'before a status was sent) and door (v1, ollama).',
      labelNames: ['model', 'key', 'status', 'door'] as const,
      registers,
    });
    this.#tokens = new Counter({
      name: 'gatehouse_tokens_total',
      help: 'Tokens of calls that ended, by type: input (cached included), output, cached.',
      labelNames: ['model', 'key', 'type'] as const,
      registers,
    });
    this.#duration = histogram(
      'gatehouse_request_duration_seconds',
      'Time from the call arriving to the response ending.',
    );
    this.#ttfb = histogram(
      'gatehouse_time_to_first_byte_seconds',
      'Time from the call arriving to the response headers being sent.',
    );
    this.#ttft = histogram(
      'gatehouse_time_to_first_token_seconds',
      'Time from the call arriving to the first generated token (streams) or the first body byte.',
    );
    this.#inFlight = new Gauge({
      name: 'gatehouse_requests_in_flight',
      help: 'Calls to /v1 not yet ended, streams included.',
      registers,
    });
    this.#upstreamErrors = new Counter({
      name: 'gatehouse_upstream_errors_total',
      help:
        'Calls that failed because of llama-swap or the model server (timeout, unreachable, broken ' +
        'stream, 5xx), by class (upstream_timeout, upstream_unreachable, upstream_status ...).',
      labelNames: ['model', 'class'] as const,
      registers,
    });
    this.#rateLimited = new Counter({
      name: 'gatehouse_rate_limited_total',
      help: 'Calls refused with 429 by a per-key limit, by key name and limit (rpm, tpm, concurrent, budget).',
      labelNames: ['key', 'limit'] as const,
      registers,
    });
    this.#dropped = new Counter({
      name: 'gatehouse_usage_records_dropped_total',
      help: 'Usage records dropped because the write queue was full (the store was too slow or down).',
      registers,
    });
    this.#written = new Counter({
      name: 'gatehouse_usage_records_written_total',
      help: 'Usage records written to the store.',
      registers,
    });
    this.#writeFailures = new Counter({
      name: 'gatehouse_usage_write_failures_total',
      help: 'Failed batch writes of usage records (the batch is retried).',
      registers,
    });
    this.#queueWait = new Histogram({
      name: 'gatehouse_queue_wait_seconds',
      help: 'Time calls waited in the admission queue before they were forwarded, by model.',
      labelNames: ['model'] as const,
      buckets: QUEUE_WAIT_BUCKETS_S,
      registers,
    });
    const { queueLength, limitsShared, queueDepth } = options;
    this.#registry.registerMetric(
      new Gauge({
        name: 'gatehouse_queue_depth',
        help: 'Calls waiting in the admission queue for their turn (GATEHOUSE_MAX_INFLIGHT and _PER_MODEL).',
        registers: [],
        collect() {
          this.set(queueDepth?.() ?? 0);
        },
      }),
    );
    // Read when scraped: the writer's queue and the limit store own these values.
    this.#registry.registerMetric(
      new Gauge({
        name: 'gatehouse_usage_queue_length',
        help: 'Usage records waiting to be written.',
        registers: [],
        collect() {
          this.set(queueLength?.() ?? 0);
        },
      }),
    );
    this.#registry.registerMetric(
      new Gauge({
        name: 'gatehouse_limits_shared',
        help:
          'Per-key limits are counted in Redis for every replica (1), or by this replica alone (0: ' +
          'GATEHOUSE_REDIS_URL unset, or Redis unreachable).',
        registers: [],
        collect() {
          this.set(limitsShared?.() ? 1 : 0);
        },
      }),
    );
  }

  callStarted(): void {
    this.#inFlight.inc();
  }

  callEnded(call: CallObservation): void {
    this.#inFlight.dec();
    // A 4xx may carry any made-up model name (404 unknown model): it must not take a slot.
    const admit = call.status >= 100 && (call.status < 400 || call.status >= 500);
    const model = call.model === undefined ? NONE_LABEL : this.#models.label(call.model, admit);
    const key = call.keyName === undefined ? NONE_LABEL : this.#keys.label(call.keyName);
    this.#requests.inc({ model, key, status: call.status, door: call.door });
    // Every type from the series' first call on, zero included: rate() needs a starting point.
    this.#tokens.inc({ model, key, type: 'input' }, call.inputTokens ?? 0);
    this.#tokens.inc({ model, key, type: 'output' }, call.outputTokens ?? 0);
    this.#tokens.inc({ model, key, type: 'cached' }, call.cachedTokens ?? 0);
    const series = { model, key };
    this.#duration.observe(series, call.durationMs / 1000);
    if (call.ttfbMs !== undefined) this.#ttfb.observe(series, call.ttfbMs / 1000);
    if (call.ttftMs !== undefined) this.#ttft.observe(series, call.ttftMs / 1000);
    if (call.queueMs !== undefined) this.#queueWait.observe({ model }, call.queueMs / 1000);
    if (isUpstreamFailure(call.errorClass, call.status)) this.#upstreamErrors.inc({ model, class: call.errorClass });
  }

  rateLimited(keyName: string | undefined, limit: LimitKind | 'budget'): void {
    this.#rateLimited.inc({ key: keyName === undefined ? NONE_LABEL : this.#keys.label(keyName), limit });
  }

  recordsDropped(n: number): void {
    this.#dropped.inc(n);
  }

  recordsWritten(n: number): void {
    this.#written.inc(n);
  }

  writeFailed(): void {
    this.#writeFailures.inc();
  }

  /**
   * The Prometheus text exposition. Node's process metrics start at the first scrape, so a
   * gateway nobody scrapes runs no GC or event-loop observers.
   */
  async exposition(): Promise<{ contentType: string; body: string }> {
    if (this.#processMetrics && !this.#processMetricsStarted) {
      this.#processMetricsStarted = true;
      collectDefaultMetrics({ register: this.#registry });
    }
    return { contentType: this.#registry.contentType, body: await this.#registry.metrics() };
  }
}
