/**
 * The bars the gateway must hold, judged on the `keyed` scenario (an API key required, usage
 * recording on) against the floor and the upstream reached directly, all from the same run (or,
 * with --judge, from the median of several runs). "Added" always means target − direct.
 * Once they hold, speed work stops.
 */
import type { IdleStreamsResult } from './idle-streams.js';
import type { LoadCellResult } from './load-suite.js';
import type { PacedResult } from './paced-suite.js';
import { JUDGED_SCENARIO } from './scenarios.js';
import { median } from './stats.js';
import type { Target } from './targets.js';

const BARS = {
  /** Gateway CPU µs per call ÷ the floor's, JSON, 50 connections (closed loop). */
  maxJsonCpuFloorMultipleAt50: 3,
  /** Added p50, JSON, 1 connection, closed loop. */
  maxAddedP50At1Ms: 0.3,
  /** Added p99, JSON, 1 connection at a fixed rate (open loop): this many ms, or a multiple of the floor's. */
  maxAddedP99OpenLoopMs: 1,
  maxAddedP99OpenLoopFloorMultiple: 3,
  /** RSS with 1,000 idle streams open (MB = 10^6 bytes). */
  maxIdleRssBytes: 160e6,
  /** Paced streams sustained ÷ the floor's. */
  minPacedFloorRatio: 0.75,
  /** Added time to first delta, p99, one stream: this many ms, or a multiple of the floor's. */
  maxAddedTtfbP99At1Ms: 1.5,
  maxAddedTtfbP99At1FloorMultiple: 3,
} as const;

export interface BarResult {
  /** Stable id for machine-readable output, e.g. `json-50c-floor-ratio`. */
  id: string;
  description: string;
  value: number;
  limit: number;
  unit: '×' | 'ms' | 'MB';
  /** How value must relate to limit to pass. */
  op: '≥' | '≤';
  /** What the value was computed from. */
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
const signedMs = (n: number) => `${n >= 0 ? '+' : ''}${n.toFixed(3)} ms`;

export function judgeBars(
  gateways: ReadonlyArray<Pick<Target, 'id' | 'scenarioId'>>,
  load: readonly LoadCellResult[],
  paced: PacedResult | undefined,
  rss: readonly RssEntry[],
): BarResult[] {
  const gw = gateways.find((g) => g.scenarioId === JUDGED_SCENARIO);
  if (!gw) return [];
  const bars: BarResult[] = [];
  const bar = (
    id: string,
    description: string,
    value: number,
    limit: number,
    unit: BarResult['unit'],
    op: BarResult['op'],
    method: string,
    extraPass = true,
  ) =>
    bars.push({
      id,
      description,
      value,
      limit,
      unit,
      op,
      method,
      pass: extraPass && (op === '≥' ? value >= limit : value <= limit),
    });

  const closedCell = (connections: number) =>
    load.find((c) => c.workload === 'json' && c.connections === connections && c.ratePerSecond === undefined);
  const row = (c: LoadCellResult | undefined, id: string) => c?.targets.find((t) => t.targetId === id);
  const at50 = closedCell(50);
  const [g50, floor50] = [row(at50, gw.id), row(at50, 'floor')];
  if (g50 && floor50)
    bar(
      'json-50c-cpu-ratio',
      `JSON, 50 connections: CPU per call ≤ ${BARS.maxJsonCpuFloorMultipleAt50}× the floor's`,
      g50.cpuUsPerReq / floor50.cpuUsPerReq,
      BARS.maxJsonCpuFloorMultipleAt50,
      '×',
      '≤',
      `${Math.round(g50.cpuUsPerReq)} vs ${Math.round(floor50.cpuUsPerReq)} µs, ${MEDIAN_OF_ROUNDS}`,
    );
  const at1 = closedCell(1);
  const [g1, direct1] = [row(at1, gw.id), row(at1, 'direct')];
  if (g1 && direct1)
    bar(
      'json-1c-added-p50',
      `JSON, 1 connection: added p50 ≤ ${BARS.maxAddedP50At1Ms} ms`,
      g1.p50Ms - direct1.p50Ms,
      BARS.maxAddedP50At1Ms,
      'ms',
      '≤',
      MEDIAN_OF_ROUNDS,
    );

  const open = load.find((c) => c.workload === 'json' && c.ratePerSecond !== undefined);
  const [gOpen, floorOpen, directOpen] = [row(open, gw.id), row(open, 'floor'), row(open, 'direct')];
  if (open && gOpen && floorOpen && directOpen) {
    const floorAdded = floorOpen.p99Ms - directOpen.p99Ms;
    const limit = Math.max(BARS.maxAddedP99OpenLoopMs, BARS.maxAddedP99OpenLoopFloorMultiple * floorAdded);
    bar(
      'json-open-loop-added-p99',
      `JSON, 1 connection at ${open.ratePerSecond} calls/s: added p99 ≤ ${BARS.maxAddedP99OpenLoopMs} ms or ≤ ` +
        `${BARS.maxAddedP99OpenLoopFloorMultiple}× the floor's (floor ${signedMs(floorAdded)})`,
      gOpen.p99Ms - directOpen.p99Ms,
      limit,
      'ms',
      '≤',
      "median of the rounds' p99",
      gOpen.errors + gOpen.non2xx === 0,
    );
  }

  // The settled reading (V8 has collected the garbage of opening the streams), median over fresh processes.
  const idle = rss.filter((r) => r.targetId === gw.id && r.fresh);
  const held = idle.map((r) => r.rssSettledBytes ?? r.rssWithStreamsBytes).filter((b): b is number => b !== undefined);
  if (idle.length > 0 && held.length === idle.length) {
    const method = idle.length === 1 ? 'one fresh process' : `median of ${idle.length} fresh processes`;
    // A stream that never opened costs no memory: the bar only counts with all of them open.
    const allOpen = idle.every((r) => r.open === r.requested);
    bar(
      'idle-rss',
      `${idle[0]!.requested.toLocaleString('en-US')} idle streams: RSS ≤ ${BARS.maxIdleRssBytes / 1e6} MB`,
      median(held) / 1e6,
      BARS.maxIdleRssBytes / 1e6,
      'MB',
      '≤',
      method,
      allOpen,
    );
  }

  if (paced) {
    const g = paced.targets.find((t) => t.targetId === gw.id);
    const floor = paced.targets.find((t) => t.targetId === 'floor');
    if (g && floor) {
      const capped = floor.capped ? ` (the floor reached the search's cap of ${floor.sustained})` : '';
      bar(
        'paced-streams-floor-ratio',
        `paced streams sustained (p99 gap < ${paced.gapLimitMs} ms, no stall) ≥ ` +
          `${BARS.minPacedFloorRatio}× the floor's N${capped}`,
        floor.sustained > 0 ? g.sustained / floor.sustained : Number.NaN,
        BARS.minPacedFloorRatio,
        '×',
        '≥',
        `N ${g.sustained} vs ${floor.sustained}`,
      );
    }
    const [gt, ft, dt] = [gw.id, 'floor', 'direct'].map((id) => paced.ttfb.find((t) => t.targetId === id));
    if (gt && ft && dt) {
      const floorAdded = ft.p99Ms - dt.p99Ms;
      const limit = Math.max(BARS.maxAddedTtfbP99At1Ms, BARS.maxAddedTtfbP99At1FloorMultiple * floorAdded);
      bar(
        'paced-1-added-ttfb-p99',
        `1 stream: added time to first delta p99 ≤ ${BARS.maxAddedTtfbP99At1FloorMultiple}× the floor's or ≤ ` +
          `${BARS.maxAddedTtfbP99At1Ms} ms (floor ${signedMs(floorAdded)})`,
        gt.p99Ms - dt.p99Ms,
        limit,
        'ms',
        '≤',
        `median of ${paced.ttfbRounds} rounds' p99`,
        gt.failed === 0,
      );
    }
  }
  return bars;
}
