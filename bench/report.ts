/**
 * Turns the suites' results into the printed report (tables with PASS/FAIL next to the
 * numbers a bar judges) and the machine-readable JSON written by --json.
 */
import { FLOOR_BAR_SCENARIO, type BarResult, type RssEntry } from './bars.js';
import type { LoadCellResult } from './load-suite.js';
import type { Engine, Profile } from './options.js';
import type { ScenarioComparison } from './scenarios.js';
import type { StreamCellResult } from './stream-suite.js';
import type { Target } from './targets.js';

export interface BenchMeta {
  startedAt: string;
  finishedAt: string;
  /** Git commit of the measured code, noting local changes in src/. */
  code: string | undefined;
  node: string;
  platform: string;
  cpuModel: string;
  cpuCount: number;
  loadAverageAtStart: number[];
  loadAverageAtEnd: number[];
  /** Share of the machine's CPU busy during 1 s before the bench started anything. */
  busyBeforeStart: number | undefined;
  /** Share of the machine's CPU used by processes other than the bench and its children during the run. */
  foreignCpuShare: number | undefined;
  engine: Engine;
  quick: boolean;
  profile: Profile;
  /** The gateway scenarios run, in order (the first is `baseline`). */
  scenarios: Array<{ id: string; title: string }>;
  /** Default scenarios that could not run on this machine, and why. */
  skippedScenarios: Array<{ id: string; reason: string }>;
}

/** One scenario comparison's numbers (direction: subject ÷ reference, subject − reference). */
export interface ComparisonSummary extends ScenarioComparison {
  subjectTargetId: string;
  referenceTargetId: string;
  /** Paired load cells: medians of the per-round values. */
  load: Array<{
    workload: string;
    connections: number;
    rpsRatio: number;
    /** (1 − rpsRatio) × 100: the subject's throughput loss in percent (negative: a gain). */
    rpsLossPercent: number;
    p50DeltaMs: number;
    cpuRatio: number;
    roundRpsRatios: number[];
  }>;
  /** Stream cells, not paired: difference of the two targets' medians of rounds. */
  streams: Array<{ streams: number; ttfbP50DeltaMs: number; eventP50DeltaMs: number }>;
  /** RSS with the idle streams open, fresh processes: subject − reference. */
  idleRssDeltaBytes?: number;
}

export interface BenchReport {
  meta: BenchMeta;
  targets: Array<Pick<Target, 'id' | 'label' | 'kind' | 'scenarioId'>>;
  load: LoadCellResult[];
  streams: StreamCellResult[];
  rss: RssEntry[];
  bars: BarResult[];
  comparisons: ComparisonSummary[];
}

const int = (n: number) => (Number.isFinite(n) ? Math.round(n).toLocaleString('en-US') : '—');
const ms = (n: number) => (Number.isFinite(n) ? n.toFixed(3) : '—');
const signed = (n: number) => (Number.isFinite(n) ? `${n >= 0 ? '+' : ''}${n.toFixed(3)}` : '—');
const ratio = (n: number) => (Number.isFinite(n) ? `${n.toFixed(2)}×` : '—');
const mb = (bytes: number | undefined) => (bytes === undefined ? '—' : `${(bytes / 1e6).toFixed(1)} MB`);
const pct = (n: number) => (Number.isFinite(n) ? `${Math.round(n * 100)}%` : '—');
const percent1 = (n: number) => (Number.isFinite(n) ? `${n.toFixed(1)} %` : '—');

function barValue(bar: BarResult): string {
  switch (bar.unit) {
    case '×':
      return ratio(bar.value);
    case 'ms':
      return `${signed(bar.value)} ms`;
    case 'MB':
      return `${bar.value.toFixed(1)} MB`;
    case '%':
      return percent1(bar.value);
  }
}

const barLimit = (bar: BarResult) => `${bar.op} ${bar.limit}${bar.unit === '×' ? '×' : ` ${bar.unit}`}`;
const barMarker = (bar: BarResult) => `${bar.pass ? 'PASS' : 'FAIL'} (${barValue(bar)} vs ${barLimit(bar)})`;

/**
 * Left-aligns the first column, right-aligns the others; cells past the header (PASS/FAIL notes) are appended as
 * they are.
 */
function table(header: string[], rows: string[][]): string[] {
  const all = [header, ...rows];
  const widths = header.map((_, i) => Math.max(...all.map((row) => (row[i] ?? '').length)));
  return all.map((row) =>
    row
      .map((cell, i) => (i === 0 ? cell.padEnd(widths[i]!) : i >= header.length ? cell : cell.padStart(widths[i]!)))
      .join('  ')
      .trimEnd(),
  );
}

function marker(bars: readonly BarResult[], idPrefix: string, targetId: string): string {
  const bar = bars.find((b) => b.id === `${idPrefix}:${targetId}`);
  return bar ? barMarker(bar) : '';
}

/** The numbers of every comparison that ran, in its direction (subject vs reference). */
export function compare(
  targets: readonly Target[],
  comparisons: readonly ScenarioComparison[],
  load: readonly LoadCellResult[],
  streams: readonly StreamCellResult[],
  rss: readonly RssEntry[],
): ComparisonSummary[] {
  const out: ComparisonSummary[] = [];
  for (const comparison of comparisons) {
    const subjectTargetId = targets.find((t) => t.scenarioId === comparison.subject)?.id;
    const referenceTargetId = targets.find((t) => t.scenarioId === comparison.reference)?.id;
    if (!subjectTargetId || !referenceTargetId) continue;
    const summary: ComparisonSummary = { ...comparison, subjectTargetId, referenceTargetId, load: [], streams: [] };
    for (const cell of load) {
      const pair = cell.pairs.find((p) => p.id === comparison.id);
      if (!pair) continue;
      summary.load.push({
        workload: cell.workload,
        connections: cell.connections,
        rpsRatio: pair.rpsRatio,
        rpsLossPercent: (1 - pair.rpsRatio) * 100,
        p50DeltaMs: pair.p50DeltaMs,
        cpuRatio: pair.cpuRatio,
        roundRpsRatios: pair.rounds.map((r) => r.rpsRatio),
      });
    }
    for (const cell of streams) {
      const a = cell.targets.find((t) => t.targetId === subjectTargetId);
      const b = cell.targets.find((t) => t.targetId === referenceTargetId);
      if (a && b) summary.streams.push({ streams: cell.shape.streams, ttfbP50DeltaMs: a.ttfbP50Ms - b.ttfbP50Ms, eventP50DeltaMs: a.chunkP50Ms - b.chunkP50Ms });
    }
    const a = rss.find((r) => r.targetId === subjectTargetId && r.fresh);
    const b = rss.find((r) => r.targetId === referenceTargetId && r.fresh);
    const heldA = a?.rssSettledBytes ?? a?.rssWithStreamsBytes;
    const heldB = b?.rssSettledBytes ?? b?.rssWithStreamsBytes;
    if (heldA !== undefined && heldB !== undefined) summary.idleRssDeltaBytes = heldA - heldB;
    out.push(summary);
  }
  return out;
}

/** A pair whose per-round req/s ratios differ by more than this gets a note. */
const NOISY_PAIR_RANGE = 0.1;

export function renderReport(report: BenchReport): string {
  const { meta } = report;
  const label = (id: string) => report.targets.find((t) => t.id === id)?.label ?? id;
  const lines: string[] = [];
  const p = meta.profile;
  lines.push(`Gatehouse benchmark, ${meta.startedAt}, code ${meta.code ?? 'unknown'}`);
  lines.push(`node ${meta.node}, ${meta.platform}, ${meta.cpuCount} × ${meta.cpuModel}; load generator: ` +
      `${meta.engine} (in ${meta.engine === 'autocannon' ? 'the bench process' : 'its own process'})`);
  lines.push(`other work on the machine: ${pct(meta.busyBeforeStart ?? Number.NaN)} CPU busy before start, ` +
      `${pct(meta.foreignCpuShare ?? Number.NaN)} of all CPU used by other processes during the ` +
      `run${meta.quick ? '; --quick: one short round each, numbers are rough' : ''}`);
  lines.push(`Method: separate processes on 127.0.0.1; targets alternate within each round (order rotated); medians ` +
      `of ${p.rounds} round${p.rounds > 1 ? 's' : ''} (streams: ${p.streamRounds}).`);
  lines.push('"added" = target − direct (the upstream without a proxy), from the same run.');
  lines.push('Gateway scenarios (one process each: node bin/gatehouse serve, no runtime flags or tuning variables; ' +
      'bench/scenarios.ts):');
  const idWidth = Math.max(0, ...meta.scenarios.map((s) => s.id.length), ...meta.skippedScenarios.map((s) => s.id.length));
  for (const s of meta.scenarios) {
    lines.push(`  ${s.id.padEnd(idWidth)}  ${s.title}${s.id === FLOOR_BAR_SCENARIO ? '  <- the floor bars judge this one' : ''}`);
  }
  for (const s of meta.skippedScenarios) lines.push(`  ${s.id.padEnd(idWidth)}  SKIPPED: ${s.reason}`);

  for (const cell of report.load) {
    lines.push('');
    lines.push(`${cell.workload === 'json' ? 'JSON chat completion' : 'SSE chat completion (5 events + [DONE])'}, ` +
        `${cell.connections} connection${cell.connections > 1 ? 's' : ''}: ${p.rounds} × ${p.runSeconds} s ` +
        `after ${p.warmupSeconds} s warm-up`);
    const direct = cell.targets.find((t) => t.targetId === 'direct');
    const floor = cell.targets.find((t) => t.targetId === 'floor');
    const rows = cell.targets.map((t) => {
      const isDirect = t.targetId === 'direct';
      const bar = cell.connections === 50 ? marker(report.bars, `${cell.workload}-50c-floor-ratio`, t.targetId) : cell.connections === 1 ? marker(report.bars, `${cell.workload}-1c-added-p50`, t.targetId) : '';
      const problems = t.errors + t.non2xx > 0 ? ` [${t.errors} errors, ${t.non2xx} non-2xx]` : '';
      return [
        `  ${label(t.targetId)}`,
        int(t.rps),
        pct(t.rpsSpread),
        floor && !isDirect ? ratio(t.rps / floor.rps) : '',
        ms(t.p50Ms),
        ms(t.p99Ms),
        direct && !isDirect ? signed(t.p50Ms - direct.p50Ms) : '',
        direct && !isDirect ? signed(t.p99Ms - direct.p99Ms) : '',
        int(t.cpuUsPerReq),
        floor && !isDirect ? ratio(t.cpuUsPerReq / floor.cpuUsPerReq) : '',
        `${bar}${problems}`,
      ];
    });
    lines.push(...table(['  target', 'req/s', 'spread', 'vs floor', 'p50 ms', 'p99 ms', 'added p50', 'added p99', 'CPU µs/req', 'CPU vs floor'], rows));
  }

  for (const cell of report.streams) {
    const s = cell.shape;
    lines.push('');
    lines.push(`Streams: ${s.streams} concurrent, ${s.chunks} events ${s.intervalMs} ms apart; ${cell.rounds} ` +
        `round${cell.rounds > 1 ? 's' : ''} × ${s.waves} wave${s.waves > 1 ? 's' : ''} (after 1 unmeasured ` +
        `wave)`);
    const direct = cell.targets.find((t) => t.targetId === 'direct');
    const rows = cell.targets.map((t) => {
      const isDirect = t.targetId === 'direct';
      const bar = s.streams === 1 ? marker(report.bars, 'stream-1-added-ttfb-p50', t.targetId) : s.streams === 100 ? marker(report.bars, 'stream-100-added-chunk-p50', t.targetId) : '';
      return [
        `  ${label(t.targetId)}`,
        ms(t.ttfbP50Ms),
        ms(t.ttfbP99Ms),
        direct && !isDirect ? signed(t.ttfbP50Ms - direct.ttfbP50Ms) : '',
        ms(t.chunkP50Ms),
        ms(t.chunkP99Ms),
        direct && !isDirect ? signed(t.chunkP50Ms - direct.chunkP50Ms) : '',
        direct && !isDirect ? signed(t.chunkP99Ms - direct.chunkP99Ms) : '',
        String(t.failed),
        bar,
      ];
    });
    lines.push(...table(['  target', '1st byte p50', '1st byte p99', 'added 1st p50', 'event p50', 'event p99', 'added event p50', 'added event p99', 'failed'], rows));
  }

  if (report.rss.length > 0) {
    lines.push('');
    lines.push('Idle streams held open through each proxy (upstream sends headers + one event, then nothing); RSS ' +
        'from /proc/PID/status.');
    lines.push('"fresh, served": started anew, then 0.2 s of calls (JSON, SSE) before the streams. "1 s after": RSS ' +
        '1 s after the last');
    lines.push('stream opened; "settled": 20 s later (V8 collects the garbage of opening them once the process goes quiet).');
    // The bar's marker goes on the last of a target's fresh rows (the bar takes their median).
    const lastFresh = new Map(report.rss.map((r, i) => [r.targetId, r.fresh ? i : -1] as const).filter(([, i]) => i >= 0));
    const rows = report.rss.map((r, i) => [
      `  ${label(r.targetId)} (${r.fresh ? 'fresh, served' : 'after load'})`,
      `${r.open}/${r.requested}`,
      mb(r.rssBeforeBytes),
      mb(r.rssWithStreamsBytes),
      mb(r.anonWithStreamsBytes),
      r.rssSettledBytes === undefined ? '—' : `${mb(r.rssSettledBytes)} (+${((r.settledAfterMs ?? 0) / 1000).toFixed(0)} s)`,
      mb(r.rssAfterCloseBytes),
      r.rssBeforeBytes !== undefined && r.rssWithStreamsBytes !== undefined && r.open > 0 ? `${((r.rssWithStreamsBytes - r.rssBeforeBytes) / r.open / 1024).toFixed(1)} KiB` : '—',
      r.fresh && lastFresh.get(r.targetId) === i ? marker(report.bars, 'idle-rss', r.targetId) : '',
    ]);
    lines.push(...table(['  target', 'open', 'RSS before', 'RSS 1 s after', 'of which anon', 'RSS settled', 'RSS after close', 'per stream'], rows));
  }

  if (report.comparisons.length > 0) {
    lines.push('');
    lines.push('Scenario comparisons, SUBJECT vs REFERENCE: req/s and CPU as SUBJECT ÷ REFERENCE, latency as ' +
        'SUBJECT − REFERENCE.');
    lines.push('Load rows are paired: the two gateways ran back to back in every round (order alternating), each value is');
    lines.push('the median of the per-round values, "per round" lists the rounds\' req/s ratios. Stream and RSS lines are');
    lines.push('differences of the tables\' medians above (not paired; context, no bars).');
    for (const c of report.comparisons) {
      lines.push('');
      lines.push(`  ${c.subject} vs ${c.reference}: ${c.what}`);
      const rows = c.load.map((l) => {
        const bar = report.bars.find((b) => b.kind === 'comparison' && b.id.startsWith(`${l.workload}-${l.connections}c-`) && b.id.endsWith(`:${c.id}`));
        return [
          `    ${l.workload.toUpperCase()}, ${l.connections} conn`,
          ratio(l.rpsRatio),
          percent1(l.rpsLossPercent),
          l.roundRpsRatios.map((r) => (Number.isFinite(r) ? r.toFixed(3) : '—')).join(' '),
          signed(l.p50DeltaMs),
          ratio(l.cpuRatio),
          bar ? barMarker(bar) : '',
        ];
      });
      lines.push(...table([`    ${c.subject} vs ${c.reference}`, 'req/s ratio', 'loss', 'per round', 'p50 Δ ms', 'CPU/req ratio'], rows));
      for (const st of c.streams) lines.push(`    streams, ${st.streams} concurrent: first byte p50 ${signed(st.ttfbP50DeltaMs)} ms, event ` +
            `p50 ${signed(st.eventP50DeltaMs)} ms`);
      if (c.idleRssDeltaBytes !== undefined) lines.push(`    idle streams, fresh processes (served, settled): RSS ` +
            `${c.idleRssDeltaBytes >= 0 ? '+' : ''}${mb(c.idleRssDeltaBytes)}`);
    }
  }

  lines.push('');
  const passed = report.bars.filter((b) => b.pass).length;
  lines.push(`Bars: ${passed} of ${report.bars.length} pass`);
  const groups = new Map<string, BarResult[]>();
  for (const bar of report.bars) groups.set(bar.judges, [...(groups.get(bar.judges) ?? []), bar]);
  for (const [judges, bars] of groups) {
    const first = bars[0]!;
    const what = report.comparisons.find((c) => `${c.subject} vs ${c.reference}` === judges)?.what ?? 'comparison';
    const heading =
      first.kind === 'floor'
        ? `  ${judges} (the default configuration) vs the floor and direct; ${first.method}:`
        : `  ${judges} (${what}); paired, ${first.method}:`;
    lines.push(heading);
    for (const bar of bars) lines.push(`    ${bar.pass ? 'PASS' : 'FAIL'}  [${judges}] ${bar.description}: ${barValue(bar)}`);
  }
  if (!report.bars.some((b) => b.kind === 'floor')) lines.push(`  (no floor bars: scenario ${FLOOR_BAR_SCENARIO} did not run)`);
  for (const s of meta.skippedScenarios) lines.push(`  (no bars for ${s.id}: skipped)`);

  const reasons: string[] = [];
  if ((meta.busyBeforeStart ?? 0) > 0.1) reasons.push(`the machine was ${pct(meta.busyBeforeStart!)} busy before the bench started`);
  if ((meta.foreignCpuShare ?? 0) > 0.1) reasons.push(`other processes took ${pct(meta.foreignCpuShare!)} of the CPU during the run`);
  if (report.load.some((c) => c.targets.some((t) => t.rpsSpread > 0.15))) reasons.push('some req/s medians come from rounds more than 15% apart (spread column)');
  if (report.load.some((c) => c.pairs.some((pair) => pair.rpsRatioRange > NOISY_PAIR_RANGE))) reasons.push(`some paired req/s ratios moved by more than ${NOISY_PAIR_RANGE} between rounds (per round column)`);
  if (reasons.length > 0) {
    lines.push('');
    lines.push(`Note: ${reasons.join('; ')}. Numbers are noisy: trust ratios and CPU µs/req more than req/s, and rerun.`);
  }
  return `${lines.join('\n')}\n`;
}
