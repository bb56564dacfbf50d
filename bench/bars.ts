/**
 * The bars the gateway must clear (from the benchmark issues). Two kinds:
 *
 * - Floor bars judge the `baseline` scenario (the default configuration) against the floor
 *   and direct, from the medians of rounds. "Added" always means gateway − direct, measured
 *   in the same run.
 * - Comparison bars judge one scenario against another (bench/scenarios.ts `comparisons`),
 *   from paired rounds: the median of the per-round ratios (differences for latency).
 */
import type { IdleStreamsResult } from './idle-streams.js';
import { median } from './stats.js';
import type { LoadCellResult, Workload } from './load-suite.js';
import type { ScenarioComparison } from './scenarios.js';
import type { StreamCellResult } from './stream-suite.js';
import type { Target } from './targets.js';

/** The scenario the floor bars judge: the product's default configuration. */
export const FLOOR_BAR_SCENARIO = 'baseline';

const BARS = {
  /** Gateway req/s ÷ floor req/s at 50 connections, JSON and SSE. */
  minFloorRatioAt50: 0.8,
  /** Added p50 latency at 1 connection, JSON and SSE. */
  maxAddedP50At1Ms: 0.3,
  /** Added time to first byte, p50, 1 stream. */
  maxAddedTtfbP50At1Ms: 1,
  /** Added per-event latency, p50, 100 concurrent streams. */
  maxAddedChunkP50At100Ms: 0.5,
  /** Gateway RSS with 1,000 idle streams open (MB = 10^6 bytes). */
  maxIdleRssBytes: 120e6,
} as const;

/**
 * What one comparison bar holds, in the comparison's direction (subject vs reference):
 * - `added-p50`: median of per-round (subject p50 − reference p50) ≤ limit ms;
 * - `rps-loss`: 1 − median of per-round (subject req/s ÷ reference req/s) ≤ limit (a share);
 * - `rps-ratio`: median of per-round (subject req/s ÷ reference req/s) ≥ limit.
 */
export interface ComparisonBarSpec {
  comparisonId: string;
  workload: Workload;
  connections: number;
  measure: 'added-p50' | 'rps-loss' | 'rps-ratio';
  limit: number;
}

const COMPARISON_BARS: readonly ComparisonBarSpec[] = [
  { comparisonId: 'auth-on-vs-baseline', workload: 'json', connections: 1, measure: 'added-p50', limit: 0.05 },
  { comparisonId: 'auth-on-vs-baseline', workload: 'json', connections: 50, measure: 'rps-loss', limit: 0.05 },
  { comparisonId: 'baseline-vs-recording-off', workload: 'json', connections: 50, measure: 'rps-loss', limit: 0.1 },
  { comparisonId: 'baseline-vs-recording-off', workload: 'sse', connections: 50, measure: 'rps-loss', limit: 0.1 },
  { comparisonId: 'postgres-vs-baseline', workload: 'json', connections: 50, measure: 'rps-ratio', limit: 0.9 },
];

export interface BarResult {
  /**
   * Stable id for machine-readable output, e.g. `json-50c-floor-ratio:gateway:baseline` or
   * `json-50c-rps-loss:auth-on-vs-baseline`.
   */
  id: string;
  kind: 'floor' | 'comparison';
  /** Who is judged, in words: `baseline` or `auth-on vs baseline`. */
  judges: string;
  /** The scenario ids involved: [judged] for floor bars, [subject, reference] for comparison bars. */
  scenarioIds: string[];
  /** The gateway target the table marker goes next to (floor bars; the subject for comparison bars). */
  targetId: string;
  description: string;
  value: number;
  limit: number;
  /** `%`: value and limit in percent. */
  unit: '×' | 'ms' | 'MB' | '%';
  /** How value must relate to limit to pass. */
  op: '≥' | '≤';
  /** How the value was computed. */
  method: string;
  pass: boolean;
}

export interface RssEntry extends IdleStreamsResult {
  targetId: string;
  /**
   * Measured on a freshly started copy of the target that served calls for a moment (the bar), or on the one that
   * ran the load suites.
   */
  fresh: boolean;
}

const MEDIAN_OF_ROUNDS = 'median of rounds';
const PAIRED = 'median of per-round values, the two gateways run back to back in each round';

export function judgeBars(
  gateways: readonly Target[],
  load: readonly LoadCellResult[],
  streams: readonly StreamCellResult[],
  rss: readonly RssEntry[],
  comparisons: readonly ScenarioComparison[],
): BarResult[] {
  const bars: BarResult[] = [];
  const gw = gateways.find((g) => g.scenarioId === FLOOR_BAR_SCENARIO);
  if (gw) {
    const floorBar = (id: string, description: string, value: number, limit: number, unit: BarResult['unit'], op: BarResult['op'], pass: boolean, method = MEDIAN_OF_ROUNDS) =>
      bars.push({ id: `${id}:${gw.id}`, kind: 'floor', judges: FLOOR_BAR_SCENARIO, scenarioIds: [FLOOR_BAR_SCENARIO], targetId: gw.id, description, value, limit, unit, op, method, pass });
    for (const cell of load) {
      const get = (id: string) => cell.targets.find((t) => t.targetId === id);
      const g = get(gw.id);
      const direct = get('direct');
      const floor = get('floor');
      const name = cell.workload.toUpperCase();
      if (cell.connections === 50 && g && floor) {
        const ratio = g.rps / floor.rps;
        floorBar(`${cell.workload}-50c-floor-ratio`, `${name}, 50 connections: req/s ≥ ${BARS.minFloorRatioAt50}× floor`, ratio, BARS.minFloorRatioAt50, '×', '≥', ratio >= BARS.minFloorRatioAt50);
      }
      if (cell.connections === 1 && g && direct) {
        const added = g.p50Ms - direct.p50Ms;
        floorBar(`${cell.workload}-1c-added-p50`, `${name}, 1 connection: added p50 (vs direct) ≤ ${BARS.maxAddedP50At1Ms} ms`, added, BARS.maxAddedP50At1Ms, 'ms', '≤', added <= BARS.maxAddedP50At1Ms);
      }
    }
    for (const cell of streams) {
      const g = cell.targets.find((t) => t.targetId === gw.id);
      const direct = cell.targets.find((t) => t.targetId === 'direct');
      if (!g || !direct) continue;
      if (cell.shape.streams === 1) {
        const added = g.ttfbP50Ms - direct.ttfbP50Ms;
        floorBar('stream-1-added-ttfb-p50', `streams, 1 stream: added first byte p50 ≤ ${BARS.maxAddedTtfbP50At1Ms} ms`, added, BARS.maxAddedTtfbP50At1Ms, 'ms', '≤', added <= BARS.maxAddedTtfbP50At1Ms && g.failed === 0);
      }
      if (cell.shape.streams === 100) {
        const added = g.chunkP50Ms - direct.chunkP50Ms;
        floorBar('stream-100-added-chunk-p50', `streams, 100 streams: added per-event p50 ≤ ${BARS.maxAddedChunkP50At100Ms} ms`, added, BARS.maxAddedChunkP50At100Ms, 'ms', '≤', added <= BARS.maxAddedChunkP50At100Ms && g.failed === 0);
      }
    }
    // The settled reading: what a process holds for the streams once V8 has collected the garbage
    // of opening them (the 1-s reading, shown beside it, still includes that garbage); the median
    // over the fresh processes measured.
    const idle = rss.filter((r) => r.targetId === gw.id && r.fresh);
    const held = idle.map((r) => r.rssSettledBytes ?? r.rssWithStreamsBytes).filter((b): b is number => b !== undefined);
    if (idle.length > 0 && held.length === idle.length) {
      const value = median(held);
      // A stream that never opened costs no memory: the bar only counts with all of them open.
      const pass = value <= BARS.maxIdleRssBytes && idle.every((r) => r.open === r.requested);
      const when = idle.some((r) => r.rssSettledBytes === undefined) ? '1 s after opening' : 'settled';
      const method = idle.length === 1 ? 'one measurement' : `median of ${idle.length} fresh processes`;
      floorBar('idle-rss', `${idle[0]!.requested.toLocaleString('en-US')} idle streams (fresh process after serving calls, ` +
          `RSS ${when}): RSS ≤ ${BARS.maxIdleRssBytes / 1e6} MB`, value / 1e6, BARS.maxIdleRssBytes / 1e6, 'MB', '≤', pass, method);
    }
  }

  for (const spec of COMPARISON_BARS) {
    const comparison = comparisons.find((c) => c.id === spec.comparisonId);
    const cell = load.find((c) => c.workload === spec.workload && c.connections === spec.connections);
    const pair = cell?.pairs.find((p) => p.id === spec.comparisonId);
    if (!comparison || !pair) continue;
    const where = `${spec.workload.toUpperCase()}, ${spec.connections} connection${spec.connections > 1 ? 's' : ''}`;
    const base = { kind: 'comparison' as const, judges: `${comparison.subject} vs ${comparison.reference}`, scenarioIds: [comparison.subject, comparison.reference], targetId: pair.subjectId, method: PAIRED };
    const id = `${spec.workload}-${spec.connections}c-${spec.measure}:${spec.comparisonId}`;
    if (spec.measure === 'added-p50') {
      const value = pair.p50DeltaMs;
      bars.push({ ...base, id, description: `${where}: added p50 (${comparison.subject} − ${comparison.reference}) ≤ ${spec.limit} ms`, value, limit: spec.limit, unit: 'ms', op: '≤', pass: value <= spec.limit });
    } else if (spec.measure === 'rps-loss') {
      const value = (1 - pair.rpsRatio) * 100;
      const limit = spec.limit * 100;
      bars.push({ ...base, id, description: `${where}: throughput loss (1 − ${comparison.subject} ÷ ${comparison.reference} req/s) ` + `≤ ${limit} %`, value, limit, unit: '%', op: '≤', pass: value <= limit });
    } else {
      const value = pair.rpsRatio;
      bars.push({ ...base, id, description: `${where}: req/s ${comparison.subject} ÷ ${comparison.reference} ≥ ${spec.limit}×`, value, limit: spec.limit, unit: '×', op: '≥', pass: value >= spec.limit });
    }
  }
  return bars;
}
