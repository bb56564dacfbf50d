/**
 * `npm run bench -- --judge a.json,b.json`: one report whose every number is the median of the
 * same number in runs saved with --json, with the bars judged on it. The verdict on the bars is
 * two full runs' median, so one noisy run neither passes nor fails them alone.
 */
import { readFileSync } from 'node:fs';
import { judgeBars, type RssEntry } from './bars.js';
import type { LoadCellResult, TargetLoadResult } from './load-suite.js';
import type { PacedResult, PacedTargetResult, TtfbResult } from './paced-suite.js';
import type { BenchReport } from './report.js';
import { median } from './stats.js';

export function readReport(file: string): BenchReport {
  const report = JSON.parse(readFileSync(file, 'utf8')) as BenchReport;
  if (!report.meta || !Array.isArray(report.load) || !Array.isArray(report.rss))
    throw new Error(`${file} is not a report written by \`npm run bench -- --json\``);
  return report;
}

/** Runs that differ in what they measured, said before the merged report (the median still comes out). */
export function judgeWarnings(reports: readonly BenchReport[], names: readonly string[]): string[] {
  const warnings: string[] = [];
  const quick = names.filter((_, i) => reports[i]!.meta.quick);
  if (quick.length > 0) warnings.push(`${quick.join(', ')}: --quick runs; the bars are judged on full runs`);
  if (new Set(reports.map((r) => r.meta.code)).size > 1)
    warnings.push(`the runs measured different code: ${reports.map((r) => r.meta.code ?? 'unknown').join(', ')}`);
  const shape = (r: BenchReport) =>
    [
      ...r.load.map((c) => `${c.workload} ${c.connections} ${c.ratePerSecond}`),
      r.paced ? 'paced' : '',
      r.rss.length,
    ].join(',');
  if (new Set(reports.map(shape)).size > 1)
    warnings.push("the runs ran different suites: a number missing from a run is the median of the others'");
  return warnings;
}

const medianOf = <T>(items: readonly T[], pick: (item: T) => number) => median(items.map(pick));
const sumOf = <T>(items: readonly T[], pick: (item: T) => number) => items.reduce((sum, i) => sum + pick(i), 0);
const maxOf = (values: ReadonlyArray<number | undefined>) => {
  const known = values.filter((v): v is number => v !== undefined);
  return known.length > 0 ? Math.max(...known) : undefined;
};
/** The median of the values the runs have; undefined when none has one. */
const medianKnown = (values: ReadonlyArray<number | undefined>) => {
  const known = values.filter((v): v is number => v !== undefined);
  return known.length > 0 ? median(known) : undefined;
};

export function medianReport(reports: readonly BenchReport[], names: readonly string[]): BenchReport {
  const [first] = reports;
  if (!first) throw new Error('no reports to judge');
  const meta = {
    ...first.meta,
    finishedAt: reports.at(-1)!.meta.finishedAt,
    code: [...new Set(reports.map((r) => r.meta.code ?? 'unknown'))].join(', '),
    quick: reports.some((r) => r.meta.quick),
    busyBeforeStart: maxOf(reports.map((r) => r.meta.busyBeforeStart)),
    foreignCpuShare: maxOf(reports.map((r) => r.meta.foreignCpuShare)),
    medianOf: [...names],
  };
  const load = first.load.map((cell) => medianCell(cell, reports));
  const paced = reports.every((r) => r.paced) ? medianPaced(reports.map((r) => r.paced!)) : undefined;
  const rss = medianRss(reports.map((r) => r.rss));
  const gateways = first.targets.filter((t) => t.kind === 'gateway');
  return { meta, targets: first.targets, load, paced, rss, bars: judgeBars(gateways, load, paced, rss) };
}

function medianCell(cell: LoadCellResult, reports: readonly BenchReport[]): LoadCellResult {
  const same = reports
    .map((r) =>
      r.load.find(
        (c) =>
          c.workload === cell.workload && c.connections === cell.connections && c.ratePerSecond === cell.ratePerSecond,
      ),
    )
    .filter((c): c is LoadCellResult => c !== undefined);
  const targets = cell.targets.map((target): TargetLoadResult => {
    const rows = same
      .map((c) => c.targets.find((t) => t.targetId === target.targetId))
      .filter((t): t is TargetLoadResult => t !== undefined);
    return {
      targetId: target.targetId,
      rps: medianOf(rows, (t) => t.rps),
      p50Ms: medianOf(rows, (t) => t.p50Ms),
      p99Ms: medianOf(rows, (t) => t.p99Ms),
      cpuUsPerReq: medianOf(rows, (t) => t.cpuUsPerReq),
      rpsSpread: Math.max(...rows.map((t) => t.rpsSpread)),
      errors: sumOf(rows, (t) => t.errors),
      non2xx: sumOf(rows, (t) => t.non2xx),
      rounds: rows.flatMap((t) => t.rounds),
    };
  });
  return { ...cell, targets };
}

function medianPaced(runs: readonly PacedResult[]): PacedResult {
  const first = runs[0]!;
  const targets = first.targets.map((target): PacedTargetResult => {
    const rows = runs
      .map((r) => r.targets.find((t) => t.targetId === target.targetId))
      .filter((t): t is PacedTargetResult => t !== undefined);
    return {
      targetId: target.targetId,
      sustained: medianOf(rows, (t) => t.sustained),
      capped: rows.every((t) => t.capped),
      cutShort: rows.some((t) => t.cutShort),
      trials: rows.flatMap((t) => t.trials),
    };
  });
  const ttfb = first.ttfb.map((target): TtfbResult => {
    const rows = runs
      .map((r) => r.ttfb.find((t) => t.targetId === target.targetId))
      .filter((t): t is TtfbResult => t !== undefined);
    return {
      targetId: target.targetId,
      samples: sumOf(rows, (t) => t.samples),
      failed: sumOf(rows, (t) => t.failed),
      p50Ms: medianOf(rows, (t) => t.p50Ms),
      p99Ms: medianOf(rows, (t) => t.p99Ms),
    };
  });
  return { ...first, targets, ttfb };
}

/** The k-th entry of a target's fresh (or after-load) measurements is merged with the k-th of the other runs. */
function medianRss(runs: ReadonlyArray<readonly RssEntry[]>): RssEntry[] {
  const key = (e: RssEntry) => `${e.targetId}\u0000${e.fresh}`;
  const positioned = runs.map((entries) => {
    const seen = new Map<string, number>();
    return entries.map((e) => {
      const k = seen.get(key(e)) ?? 0;
      seen.set(key(e), k + 1);
      return { at: `${key(e)}\u0000${k}`, e };
    });
  });
  return positioned[0]!.map(({ at, e }) => {
    const rows = positioned.flatMap((entries) => entries.filter((p) => p.at === at).map((p) => p.e));
    return {
      targetId: e.targetId,
      fresh: e.fresh,
      requested: e.requested,
      open: Math.min(...rows.map((r) => r.open)),
      rssBeforeBytes: medianKnown(rows.map((r) => r.rssBeforeBytes)),
      rssWithStreamsBytes: medianKnown(rows.map((r) => r.rssWithStreamsBytes)),
      anonWithStreamsBytes: medianKnown(rows.map((r) => r.anonWithStreamsBytes)),
      rssSettledBytes: medianKnown(rows.map((r) => r.rssSettledBytes)),
      settledAfterMs: medianKnown(rows.map((r) => r.settledAfterMs)),
      rssAfterCloseBytes: medianKnown(rows.map((r) => r.rssAfterCloseBytes)),
    };
  });
}
