/**
 * `GET /api/usage/summary`: totals and a zero-filled time series, overall and per key or per
 * model, read from the rollups (never the request log). Latency percentiles are estimated from
 * the rollups' fixed histogram (linear within a bucket whose bounds are ~1.5x apart, so within
 * about ±20 %).
 */
import { USAGE_LATENCY_BOUNDS_MS, type UsageBucket } from '../store/records.js';
import type { Store } from '../store/store.js';

export const SUMMARY_RANGES = {
  '1h': { rangeMs: 3_600_000, stepMs: 60_000, resolution: 'minute' },
  '24h': { rangeMs: 86_400_000, stepMs: 900_000, resolution: 'minute' },
  '30d': { rangeMs: 30 * 86_400_000, stepMs: 86_400_000, resolution: 'hour' },
} as const;

export type SummaryRange = keyof typeof SUMMARY_RANGES;
export type SummaryGroupBy = 'key' | 'model';

export interface UsageStats {
  requests: number;
  errors: number;
  /** Calls the client left before they were complete (not counted as errors). */
  aborted: number;
  inputTokens: number;
  outputTokens: number;
  cachedTokens: number;
  /** `null` when there were no calls. */
  latencyMs: { avg: number; p50: number; p95: number; p99: number } | null;
}

export interface SeriesPoint extends UsageStats {
  /** Start of the bucket, ISO 8601. */
  t: string;
}

export interface SummaryGroup {
  /** With `groupBy=key`: `null` id for calls without a key (open mode, refused keys). */
  key?: { id: string | null; name: string | null };
  /** With `groupBy=model`: `null` for calls that named no model. */
  model?: string | null;
  totals: UsageStats;
  series: SeriesPoint[];
}

export interface UsageSummary {
  range: SummaryRange;
  groupBy: SummaryGroupBy | null;
  from: string;
  to: string;
  stepMs: number;
  totals: UsageStats;
  series: SeriesPoint[];
  groups: SummaryGroup[];
}

interface Sums {
  requests: number;
  errors: number;
  aborted: number;
  inputTokens: number;
  outputTokens: number;
  cachedTokens: number;
  durationMsSum: number;
  latency: number[];
}

export async function usageSummary(
  store: Store,
  range: SummaryRange,
  groupBy: SummaryGroupBy | null,
  now: number,
  keyIds?: readonly string[],
): Promise<UsageSummary> {
  const { rangeMs, stepMs, resolution } = SUMMARY_RANGES[range];
  // The bucket holding `now` is the last one: the current minute/quarter/day so far.
  const to = Math.floor(now / stepMs) * stepMs + stepMs;
  const from = to - rangeMs;
  const buckets = await store.usage.rollup({ resolution, from, to, stepMs, groupBy, ...(keyIds ? { keyIds } : {}) });
  const points = rangeMs / stepMs;
  const index = (bucket: number) => Math.floor((bucket - from) / stepMs);

  const overall = Array.from({ length: points }, emptySums);
  const groups = new Map<string | null, { keyName: string | null; series: Sums[] }>();
  for (const b of buckets) {
    const i = index(b.bucket);
    if (i < 0 || i >= points) continue;
    add(overall[i]!, b);
    if (groupBy === null) continue;
    let group = groups.get(b.group);
    if (!group) {
      group = { keyName: null, series: Array.from({ length: points }, emptySums) };
      groups.set(b.group, group);
    }
    if (b.keyName !== null) group.keyName = b.keyName;
    add(group.series[i]!, b);
  }

  const names = groupBy === 'key' ? new Map((await store.keys.list()).map((k) => [k.id, k.name])) : undefined;
  const series = (sums: Sums[]) => sums.map((s, i) => ({ t: new Date(from + i * stepMs).toISOString(), ...stats(s) }));
  const summaryGroups: SummaryGroup[] = [...groups.entries()].map(([id, group]) => {
    const totals = stats(sumAll(group.series));
    const head =
      groupBy === 'key'
        ? { key: { id, name: (id !== null ? names?.get(id) : undefined) ?? group.keyName } }
        : { model: id };
    return { ...head, totals, series: series(group.series) };
  });
  summaryGroups.sort((a, b) => b.totals.requests - a.totals.requests);

  return {
    range,
    groupBy,
    from: new Date(from).toISOString(),
    to: new Date(to).toISOString(),
    stepMs,
    totals: stats(sumAll(overall)),
    series: series(overall),
    groups: summaryGroups,
  };
}

function emptySums(): Sums {
  return {
    requests: 0,
    errors: 0,
    aborted: 0,
    inputTokens: 0,
    outputTokens: 0,
    cachedTokens: 0,
    durationMsSum: 0,
    latency: new Array<number>(USAGE_LATENCY_BOUNDS_MS.length + 1).fill(0),
  };
}

function add(into: Sums, b: Sums | UsageBucket): void {
  into.requests += b.requests;
  into.errors += b.errors;
  into.aborted += b.aborted;
  into.inputTokens += b.inputTokens;
  into.outputTokens += b.outputTokens;
  into.cachedTokens += b.cachedTokens;
  into.durationMsSum += b.durationMsSum;
  for (let i = 0; i < into.latency.length; i++) into.latency[i]! += b.latency[i] ?? 0;
}

function sumAll(series: Sums[]): Sums {
  const total = emptySums();
  for (const s of series) add(total, s);
  return total;
}

function stats(s: Sums): UsageStats {
  return {
    requests: s.requests,
    errors: s.errors,
    aborted: s.aborted,
    inputTokens: s.inputTokens,
    outputTokens: s.outputTokens,
    cachedTokens: s.cachedTokens,
    latencyMs:
      s.requests === 0
        ? null
        : {
            avg: round(s.durationMsSum / s.requests),
            p50: round(percentile(s.latency, 0.5)),
            p95: round(percentile(s.latency, 0.95)),
            p99: round(percentile(s.latency, 0.99)),
          },
  };
}

/**
 * The q-quantile of a histogram over `USAGE_LATENCY_BOUNDS_MS` (bounds inclusive, overflow last),
 * interpolated linearly inside the bucket it falls in. In the overflow bucket: its lower bound.
 */
export function percentile(counts: readonly number[], q: number): number {
  const total = counts.reduce((a, b) => a + b, 0);
  if (total === 0) return 0;
  const rank = q * total;
  let cumulative = 0;
  for (let i = 0; i < counts.length; i++) {
    const count = counts[i]!;
    if (count === 0) continue;
    if (cumulative + count >= rank) {
      const lower = i === 0 ? 0 : USAGE_LATENCY_BOUNDS_MS[i - 1]!;
      const upper = USAGE_LATENCY_BOUNDS_MS[i];
      if (upper === undefined) return lower;
      return lower + ((rank - cumulative) / count) * (upper - lower);
    }
    cumulative += count;
  }
  return USAGE_LATENCY_BOUNDS_MS.at(-1)!;
}

function round(ms: number): number {
  return Math.round(ms * 100) / 100;
}
