/**
 * The paced streaming suite, shaped like the public gateway harnesses': N concurrent streams of
 * 64 deltas 20 ms apart. Per target it searches the largest N whose p99 inter-delta gap stays
 * under the limit with no stall (doubling, then bisecting between the last pass and the first
 * fail), the targets taking turns trial by trial so a slow phase of the machine hits them all.
 * Then time to first delta at one stream, in rounds alternating the targets; per target the
 * median over rounds of each round's p50 and p99.
 */
import type { Profile } from './options.js';
import { runWave, sequentialTtfb, type PacedShape } from './paced-streams.js';
import { median, percentile, sleep } from './stats.js';
import { rotated, type Target } from './targets.js';

export interface PacedTrial {
  streams: number;
  p50GapMs: number;
  p99GapMs: number;
  maxGapMs: number;
  stalls: number;
  pass: boolean;
}

export interface PacedTargetResult {
  targetId: string;
  /** Largest N that passed (0: not even one stream). */
  sustained: number;
  /** N reached the profile's maximum without failing: the true N may be higher. */
  capped: boolean;
  /** The suite's time budget ran out before the search ended. */
  cutShort: boolean;
  trials: PacedTrial[];
}

export interface TtfbResult {
  targetId: string;
  samples: number;
  failed: number;
  /** Medians over rounds of each round's p50 and p99: a noisy round moves them less than a pooled percentile. */
  p50Ms: number;
  p99Ms: number;
}

export interface PacedResult {
  shape: PacedShape;
  gapLimitMs: number;
  stallGapMs: number;
  targets: PacedTargetResult[];
  ttfbRounds: number;
  ttfb: TtfbResult[];
}

const PAUSE_BETWEEN_TRIALS_MS = 300;

/** The search for one target: doubles from `start` until a fail, then bisects `bisectSteps` times. */
class Search {
  lo = 0;
  hi: number | undefined;
  bisections = 0;
  next: number | undefined;
  readonly trials: PacedTrial[] = [];
  private failedOnce = false;

  constructor(
    private readonly start: number,
    private readonly max: number,
    private readonly bisectSteps: number,
    private readonly tries: number,
  ) {
    this.next = start;
  }

  record(trial: PacedTrial): void {
    this.trials.push(trial);
    const n = trial.streams;
    if (!trial.pass && !this.failedOnce && this.tries > 1) {
      this.failedOnce = true; // one retry of the same N before it counts as a fail
      return;
    }
    this.failedOnce = false;
    if (trial.pass) this.lo = n;
    else this.hi = n;
    if (this.hi === undefined) {
      this.next = n >= this.max ? undefined : Math.min(this.max, n * 2);
      return;
    }
    if (this.bisections >= this.bisectSteps || this.hi - this.lo <= 1) {
      this.next = undefined;
      return;
    }
    this.bisections++;
    this.next = Math.floor((this.lo + this.hi) / 2);
    if (this.next <= this.lo) this.next = undefined;
  }

  get capped(): boolean {
    return this.hi === undefined && this.lo >= this.max;
  }
}

export async function runPacedSuite(
  targets: readonly Target[],
  profile: Profile,
  progress: (line: string) => void,
): Promise<PacedResult> {
  const p = profile.paced;
  const shape: PacedShape = { deltas: p.deltas, intervalMs: p.intervalMs };
  const searches = new Map(
    targets.map((t) => [t.id, new Search(p.startStreams, p.maxStreams, p.bisectSteps, p.tries)]),
  );
  const deadline = performance.now() + p.searchBudgetSeconds * 1000;
  let turn = 0;
  while (performance.now() < deadline && [...searches.values()].some((s) => s.next !== undefined)) {
    for (const target of rotated(targets, turn++)) {
      const search = searches.get(target.id)!;
      const n = search.next;
      if (n === undefined || performance.now() >= deadline) continue;
      const wave = await runWave(target, shape, n, p.stallGapMs);
      const p99GapMs = percentile(wave.gapsMs, 99);
      const trial: PacedTrial = {
        streams: n,
        p50GapMs: percentile(wave.gapsMs, 50),
        p99GapMs,
        maxGapMs: wave.gapsMs.reduce((max, gap) => Math.max(max, gap), 0),
        stalls: wave.stalls,
        pass: wave.stalls === 0 && p99GapMs < p.gapLimitMs,
      };
      search.record(trial);
      progress(
        `paced ${target.label} N=${n}: gap p50 ${trial.p50GapMs.toFixed(1)} p99 ${p99GapMs.toFixed(1)} max ` +
          `${trial.maxGapMs.toFixed(1)} ms, ${wave.stalls} stalled: ${trial.pass ? 'pass' : 'fail'}`,
      );
      await sleep(PAUSE_BETWEEN_TRIALS_MS);
    }
  }
  const results: PacedTargetResult[] = targets.map((target) => {
    const search = searches.get(target.id)!;
    return {
      targetId: target.id,
      sustained: search.lo,
      capped: search.capped,
      cutShort: search.next !== undefined,
      trials: search.trials,
    };
  });

  const rounds = new Map(
    targets.map((t) => [t.id, { p50: [] as number[], p99: [] as number[], samples: 0, failed: 0 }]),
  );
  for (const target of targets) await sequentialTtfb(target, shape, p.ttfbWarmup);
  for (let round = 0; round < p.ttfbRounds; round++) {
    for (const target of rotated(targets, round)) {
      const r = await sequentialTtfb(target, shape, p.ttfbPerRound);
      const s = rounds.get(target.id)!;
      s.p50.push(percentile(r.ttfbMs, 50));
      s.p99.push(percentile(r.ttfbMs, 99));
      s.samples += r.ttfbMs.length;
      s.failed += r.failed;
    }
  }
  const ttfb = targets.map((target) => {
    const s = rounds.get(target.id)!;
    return { targetId: target.id, samples: s.samples, failed: s.failed, p50Ms: median(s.p50), p99Ms: median(s.p99) };
  });
  for (const t of ttfb)
    progress(
      `paced first delta, 1 stream, ${targets.find((x) => x.id === t.targetId)!.label}: p50 ` +
        `${t.p50Ms.toFixed(3)} p99 ${t.p99Ms.toFixed(3)} ms (${t.samples} streams)`,
    );
  return {
    shape,
    gapLimitMs: p.gapLimitMs,
    stallGapMs: p.stallGapMs,
    targets: results,
    ttfbRounds: p.ttfbRounds,
    ttfb,
  };
}
