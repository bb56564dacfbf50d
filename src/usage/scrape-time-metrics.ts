/**
 * Metrics kept as plain numbers and handed to prom-client's registry only when scraped.
 *
 * Why not prom-client's Counter/Histogram on the call path: every `inc`/`observe` hashes its
 * label object and allocates, even through a cached `labels()` child, and a `/v1` call touches
 * up to seven series. Measured with `--cpu-prof` under the bench's JSON load, that was ~7 µs and
 * ~0.8 KB of garbage per call (docs/benchmarks.md). Here a call adds to numbers it already holds;
 * the registry asks `get()` for the values at scrape time and formats them as it does its own.
 */

import type { Registry } from 'prom-client';

export type Labels = Readonly<Record<string, string>>;

/** One line of a metric as prom-client's registry formats it. */
export interface MetricValue {
  labels: Record<string, string | number>;
  value: number;
  metricName?: string;
}

/** The shape prom-client's `Registry#registerMetric` reads from a metric: name, help, type, get(). */
export class ScrapeTimeMetric {
  readonly aggregator = 'sum';

  constructor(
    readonly name: string,
    readonly help: string,
    readonly type: 'counter' | 'gauge' | 'histogram',
    private readonly collectValues: () => MetricValue[],
  ) {}

  get(): { name: string; help: string; type: string; values: MetricValue[]; aggregator: string } {
    return { name: this.name, help: this.help, type: this.type, values: this.collectValues(), aggregator: this.aggregator };
  }

  /** Counters here only reset with the process (Prometheus' `rate()` expects that). */
  reset(): void {}
}

/** A fixed-bucket histogram of seconds: bucket counts, sum and count. */
export class SecondsHistogram {
  readonly #bounds: readonly number[];
  /** Non-cumulative: index i counts values in (bounds[i-1], bounds[i]]; the last one, above all. */
  readonly #counts: Float64Array;
  #sum = 0;
  #count = 0;

  constructor(bounds: readonly number[]) {
    this.#bounds = bounds;
    this.#counts = new Float64Array(bounds.length + 1);
  }

  observe(seconds: number): void {
    const bounds = this.#bounds;
    let i = 0;
    // Fifteen bounds, most calls in the first few: a forward scan beats a binary search.
    while (i < bounds.length && seconds > bounds[i]!) i++;
    this.#counts[i]!++;
    this.#sum += seconds;
    this.#count++;
  }

  /** Prometheus lines: cumulative `_bucket`s ending with `+Inf`, then `_sum` and `_count`. */
  values(name: string, labels: Labels): MetricValue[] {
    const out: MetricValue[] = [];
    let cumulative = 0;
    for (let i = 0; i <= this.#bounds.length; i++) {
      cumulative += this.#counts[i]!;
      const le = i < this.#bounds.length ? this.#bounds[i]! : '+Inf';
      out.push({ metricName: `${name}_bucket`, labels: { le, ...labels }, value: cumulative });
    }
    out.push({ metricName: `${name}_sum`, labels: { ...labels }, value: this.#sum });
    out.push({ metricName: `${name}_count`, labels: { ...labels }, value: this.#count });
    return out;
  }
}

/**
 * Adds `metric` to `registry`. prom-client types `registerMetric` as taking its own metric
 * classes only, but the registry reads nothing else than what ScrapeTimeMetric has.
 */
export function registerScrapeTimeMetric(registry: Registry, metric: ScrapeTimeMetric): void {
  registry.registerMetric(metric as unknown as Parameters<Registry['registerMetric']>[0]);
}
