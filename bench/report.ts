/**
 * Turns the suites' results into the printed report (tables with PASS/FAIL next to the
 * numbers a bar judges) and the machine-readable JSON written by --json.
 */
import type { BarResult, RssEntry } from './bars.js';
import type { LoadCellResult } from './load-suite.js';
import type { Engine, Profile } from './options.js';
import type { PacedResult } from './paced-suite.js';
import { JUDGED_SCENARIO } from './scenarios.js';
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
  /** The gateway scenarios run, in order (the first is `keyed`). */
  scenarios: Array<{ id: string; title: string }>;
  /** Default scenarios that could not run on this machine, and why. */
  skippedScenarios: Array<{ id: string; reason: string }>;
  /** Set by --judge: the reports whose median this one is. */
  medianOf?: string[];
}

export interface BenchReport {
  meta: BenchMeta;
  targets: Array<Pick<Target, 'id' | 'label' | 'kind' | 'scenarioId'>>;
  load: LoadCellResult[];
  paced: PacedResult | undefined;
  rss: RssEntry[];
  bars: BarResult[];
}

const int = (n: number) => (Number.isFinite(n) ? Math.round(n).toLocaleString('en-US') : '—');
const ms = (n: number) => (Number.isFinite(n) ? n.toFixed(3) : '—');
const signed = (n: number) => (Number.isFinite(n) ? `${n >= 0 ? '+' : ''}${n.toFixed(3)}` : '—');
const ratio = (n: number) => (Number.isFinite(n) ? `${n.toFixed(2)}×` : '—');
const mb = (bytes: number | undefined) => (bytes === undefined ? '—' : `${(bytes / 1e6).toFixed(1)} MB`);
const pct = (n: number) => (Number.isFinite(n) ? `${Math.round(n * 100)}%` : '—');
const ms1 = (n: number) => (Number.isFinite(n) ? n.toFixed(1) : '—');

function barValue(bar: BarResult): string {
  switch (bar.unit) {
    case '×':
      return ratio(bar.value);
    case 'ms':
      return `${signed(bar.value)} ms`;
    case 'MB':
      return `${bar.value.toFixed(1)} MB`;
  }
}

const barLimit = (bar: BarResult) =>
  `${bar.op} ${bar.unit === 'ms' ? bar.limit.toFixed(3) : bar.limit}${bar.unit === '×' ? '×' : ` ${bar.unit}`}`;
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

function marker(bars: readonly BarResult[], id: string): string {
  const bar = bars.find((b) => b.id === id);
  return bar ? barMarker(bar) : '';
}

/** Which JSON table carries which bar's PASS/FAIL note. */
const LOAD_CELL_BARS: Partial<Record<string, string[]>> = {
  '50c': ['json-50c-cpu-ratio'],
  '1c': ['json-1c-added-p50'],
  open: ['json-open-loop-added-p99'],
};
const cellKind = (cell: LoadCellResult) => (cell.ratePerSecond === undefined ? `${cell.connections}c` : 'open');

function loadCellHeading(cell: LoadCellResult, meta: BenchMeta): string[] {
  const p = meta.profile;
  const what = cell.workload === 'json' ? 'JSON chat completion' : 'SSE chat completion (5 events + [DONE])';
  const connections = `${cell.connections} connection${cell.connections > 1 ? 's' : ''}`;
  if (cell.ratePerSecond === undefined)
    return [
      `${what}, ${connections}: ${p.rounds} × ${p.runSeconds} s after ${p.warmupSeconds} s warm-up ` +
        '(closed loop: each call sent when the last is answered)',
    ];
  const o = p.openLoop;
  return [
    `${what}, ${connections} at ${cell.ratePerSecond} calls/s`,
    `  open loop: calls sent on a fixed schedule whatever the answers, latency from the scheduled send; ` +
      `${o.rounds} × ${o.callsPerRound.toLocaleString('en-US')} calls after ${o.warmupCalls} warm-up`,
  ];
}

export function renderReport(report: BenchReport): string {
  const { meta } = report;
  const label = (id: string) => report.targets.find((t) => t.id === id)?.label ?? id;
  const judgedId = report.targets.find((t) => t.scenarioId === JUDGED_SCENARIO)?.id;
  const lines: string[] = [];
  const p = meta.profile;
  lines.push(`Gatehouse benchmark, ${meta.startedAt}, code ${meta.code ?? 'unknown'}`);
  if (meta.medianOf)
    lines.push(
      `MEDIAN OF ${meta.medianOf.length} RUNS (${meta.medianOf.join(', ')}): every number below is the median of ` +
        "the runs' numbers, and the bars are judged on them.",
    );
  lines.push(
    `node ${meta.node}, ${meta.platform}, ${meta.cpuCount} × ${meta.cpuModel}; load generator: ` +
      `${meta.engine} (in ${meta.engine === 'autocannon' ? 'the bench process' : 'its own process'})`,
  );
  lines.push(
    `other work on the machine: ${pct(meta.busyBeforeStart ?? Number.NaN)} CPU busy before start, ` +
      `${pct(meta.foreignCpuShare ?? Number.NaN)} of all CPU used by other processes during the ` +
      `run${meta.quick ? '; --quick: one short round each, numbers are rough' : ''}`,
  );
  lines.push(
    `Method: separate processes on 127.0.0.1; targets alternate within each round (order rotated); load: ` +
      `medians of ${p.rounds} round${p.rounds > 1 ? 's' : ''}.`,
  );
  lines.push('"added" = target − direct (the upstream without a proxy), from the same run.');
  lines.push(
    'Gateway scenarios (one process each: node bin/gatehouse serve, no runtime flags or tuning variables; ' +
      'bench/scenarios.ts):',
  );
  const idWidth = Math.max(
    0,
    ...meta.scenarios.map((s) => s.id.length),
    ...meta.skippedScenarios.map((s) => s.id.length),
  );
  for (const s of meta.scenarios)
    lines.push(
      `  ${s.id.padEnd(idWidth)}  ${s.title}${s.id === JUDGED_SCENARIO ? '  <- the bars judge this one' : ''}`,
    );
  for (const s of meta.skippedScenarios) lines.push(`  ${s.id.padEnd(idWidth)}  SKIPPED: ${s.reason}`);

  for (const cell of report.load) {
    lines.push('');
    lines.push(...loadCellHeading(cell, meta));
    const direct = cell.targets.find((t) => t.targetId === 'direct');
    const floor = cell.targets.find((t) => t.targetId === 'floor');
    const barIds = cell.workload === 'json' ? (LOAD_CELL_BARS[cellKind(cell)] ?? []) : [];
    const rows = cell.targets.map((t) => {
      const isDirect = t.targetId === 'direct';
      const bars =
        t.targetId === judgedId
          ? barIds
              .map((id) => marker(report.bars, id))
              .filter(Boolean)
              .join('; ')
          : '';
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
        `${bars}${problems}`,
      ];
    });
    lines.push(
      ...table(
        [
          '  target',
          'req/s',
          'spread',
          'vs floor',
          'p50 ms',
          'p99 ms',
          'added p50',
          'added p99',
          'CPU µs/req',
          'CPU vs floor',
        ],
        rows,
      ),
    );
  }

  const paced = report.paced;
  if (paced) {
    const floor = paced.targets.find((t) => t.targetId === 'floor');
    lines.push('');
    lines.push(
      `Paced streams: N concurrent streams of ${paced.shape.deltas} deltas ${paced.shape.intervalMs} ms ` +
        `apart; the largest N whose p99 inter-delta gap`,
    );
    lines.push(
      `stays under ${paced.gapLimitMs} ms with no stall (a stream incomplete or with a gap ≥ ` +
        `${paced.stallGapMs} ms). N doubles from ${p.paced.startStreams} (cap ${p.paced.maxStreams}),`,
    );
    lines.push(
      `then bisects ${p.paced.bisectSteps}×${p.paced.tries > 1 ? '; a failing N is tried twice' : ''}. ` +
        `Trials: N:p99 gap ms, /K st = K streams stalled, ✓ pass, ✗ fail.`,
    );
    const rows = paced.targets.map((t) => {
      const at = t.trials.filter((x) => x.pass && x.streams === t.sustained).at(-1);
      return [
        `  ${label(t.targetId)}`,
        `${t.capped ? '≥ ' : ''}${t.sustained}${t.cutShort ? ' (cut short)' : ''}`,
        floor && floor.sustained > 0 ? ratio(t.sustained / floor.sustained) : '',
        at ? ms1(at.p99GapMs) : '—',
        t.targetId === judgedId ? marker(report.bars, 'paced-streams-floor-ratio') : '',
      ];
    });
    lines.push(...table(['  target', 'sustained N', 'vs floor', 'p99 gap at N'], rows));
    const width = Math.max(...paced.targets.map((t) => label(t.targetId).length));
    for (const t of paced.targets) {
      const trials = t.trials.map(
        (x) => `${x.streams}:${ms1(x.p99GapMs)}${x.stalls ? `/${x.stalls}st` : ''}${x.pass ? '✓' : '✗'}`,
      );
      lines.push(`  trials ${label(t.targetId).padEnd(width)}  ${trials.join(' ')}`);
    }
    lines.push('');
    lines.push(
      'Time to first delta, 1 stream at a time on one keep-alive connection (the upstream sends the first ' +
        'delta with the',
    );
    lines.push(
      `headers): ${paced.ttfbRounds} rounds of ${p.paced.ttfbPerRound} streams per target; medians of the ` +
        `rounds' p50 and p99`,
    );
    const direct = paced.ttfb.find((t) => t.targetId === 'direct');
    const ttfbRows = paced.ttfb.map((t) => {
      const isDirect = t.targetId === 'direct';
      return [
        `  ${label(t.targetId)}`,
        ms(t.p50Ms),
        ms(t.p99Ms),
        direct && !isDirect ? signed(t.p50Ms - direct.p50Ms) : '',
        direct && !isDirect ? signed(t.p99Ms - direct.p99Ms) : '',
        String(t.failed),
        t.targetId === judgedId ? marker(report.bars, 'paced-1-added-ttfb-p99') : '',
      ];
    });
    lines.push(...table(['  target', 'p50 ms', 'p99 ms', 'added p50', 'added p99', 'failed'], ttfbRows));
  }

  if (report.rss.length > 0) {
    lines.push('');
    lines.push(
      'Idle streams held open through each proxy (upstream sends headers + one event, then nothing); RSS ' +
        'from /proc/PID/status.',
    );
    lines.push(
      '"fresh, served": started anew, then 0.2 s of calls (JSON, SSE) before the streams. "1 s after": RSS ' +
        '1 s after the last',
    );
    lines.push(
      'stream opened; "settled": 20 s later (V8 collects the garbage of opening them once the process goes quiet).',
    );
    // The bar's marker goes on the last of a target's fresh rows (the bar takes their median).
    const lastFresh = new Map(
      report.rss.map((r, i) => [r.targetId, r.fresh ? i : -1] as const).filter(([, i]) => i >= 0),
    );
    const rows = report.rss.map((r, i) => [
      `  ${label(r.targetId)} (${r.fresh ? 'fresh, served' : 'after load'})`,
      `${r.open}/${r.requested}`,
      mb(r.rssBeforeBytes),
      mb(r.rssWithStreamsBytes),
      mb(r.anonWithStreamsBytes),
      r.rssSettledBytes === undefined
        ? '—'
        : `${mb(r.rssSettledBytes)} (+${((r.settledAfterMs ?? 0) / 1000).toFixed(0)} s)`,
      mb(r.rssAfterCloseBytes),
      r.rssBeforeBytes !== undefined && r.rssWithStreamsBytes !== undefined && r.open > 0
        ? `${((r.rssWithStreamsBytes - r.rssBeforeBytes) / r.open / 1024).toFixed(1)} KiB`
        : '—',
      r.targetId === judgedId && r.fresh && lastFresh.get(r.targetId) === i ? marker(report.bars, 'idle-rss') : '',
    ]);
    lines.push(
      ...table(
        [
          '  target',
          'open',
          'RSS before',
          'RSS 1 s after',
          'of which anon',
          'RSS settled',
          'RSS after close',
          'per stream',
        ],
        rows,
      ),
    );
  }

  lines.push('');
  const passed = report.bars.filter((b) => b.pass).length;
  lines.push(
    `Bars (scenario ${JUDGED_SCENARIO} against the floor and direct, ` +
      `${meta.medianOf ? `median of ${meta.medianOf.length} runs` : 'same run'}): ${passed} of ` +
      `${report.bars.length} pass`,
  );
  if (report.bars.length === 0)
    lines.push(`  (none: scenario ${JUDGED_SCENARIO} did not run, or the suites that feed them were left out)`);
  else
    lines.push(
      ...table(
        ['  bar', 'value', 'limit', 'result', 'from'],
        report.bars.map((b) => [`  ${b.description}`, barValue(b), barLimit(b), b.pass ? 'PASS' : 'FAIL', b.method]),
      ),
    );

  const reasons: string[] = [];
  if ((meta.busyBeforeStart ?? 0) > 0.1)
    reasons.push(`the machine was ${pct(meta.busyBeforeStart!)} busy before the bench started`);
  if ((meta.foreignCpuShare ?? 0) > 0.1)
    reasons.push(`other processes took ${pct(meta.foreignCpuShare!)} of the CPU during the run`);
  if (report.load.some((c) => c.targets.some((t) => t.rpsSpread > 0.15)))
    reasons.push('some req/s medians come from rounds more than 15% apart (spread column)');
  if (reasons.length > 0) {
    lines.push('');
    lines.push(
      `Note: ${reasons.join('; ')}. Numbers are noisy: trust ratios and CPU µs/req more than req/s, and rerun.`,
    );
  }
  return `${lines.join('\n')}\n`;
}
