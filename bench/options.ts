/** Command-line options of `npm run bench` and the two timing profiles (full and --quick). */
import { parseArgs } from 'node:util';

export const SUITES = ['json', 'rate', 'sse', 'paced', 'rss'] as const;
export type Suite = (typeof SUITES)[number];
/** What runs without --only: SSE load has no bar (the paced suite covers streaming). */
const DEFAULT_SUITES: readonly Suite[] = ['json', 'rate', 'paced', 'rss'];

export interface PacedProfile {
  deltas: number;
  intervalMs: number;
  /** A trial passes when its p99 inter-delta gap is below this and no stream stalled. */
  gapLimitMs: number;
  /** A gap this long (or an incomplete stream) is a stall. */
  stallGapMs: number;
  startStreams: number;
  maxStreams: number;
  /** Bisections between the last passing and the first failing N. */
  bisectSteps: number;
  /** 2: a failing N is tried once more before it counts as a fail. */
  tries: number;
  /** The search stops here, whatever it has found. */
  searchBudgetSeconds: number;
  ttfbWarmup: number;
  ttfbRounds: number;
  ttfbPerRound: number;
}

/** JSON calls on one connection at a fixed rate, open loop (bench/open-loop.ts). */
export interface OpenLoopProfile {
  ratePerSecond: number;
  /** Unmeasured calls per target before the first round. */
  warmupCalls: number;
  rounds: number;
  callsPerRound: number;
}

export interface Profile {
  /** Measured rounds per load workload and target; the report shows their median. */
  rounds: number;
  /** Seconds per load run. */
  runSeconds: number;
  /** Seconds of unmeasured load per target before the first round of a workload. */
  warmupSeconds: number;
  /**
   * Seconds of unmeasured JSON and SSE load at 50 connections per target before any suite, so the JIT has compiled
   * every hot path.
   */
  jitWarmupSeconds: number;
  /** Connection counts for the JSON and SSE load. */
  connections: readonly number[];
  openLoop: OpenLoopProfile;
  paced: PacedProfile;
  idleStreams: number;
  /** Fresh processes of the bar's gateway measured with idle streams (the bar takes their median). */
  idleRssProcesses: number;
}

const FULL: Profile = {
  rounds: 5,
  runSeconds: 2,
  warmupSeconds: 1,
  jitWarmupSeconds: 2,
  connections: [1, 50],
  openLoop: { ratePerSecond: 200, warmupCalls: 200, rounds: 3, callsPerRound: 2000 },
  paced: {
    deltas: 64,
    intervalMs: 20,
    gapLimitMs: 40,
    stallGapMs: 200,
    startStreams: 4,
    maxStreams: 1024,
    bisectSteps: 3,
    tries: 2,
    searchBudgetSeconds: 240,
    ttfbWarmup: 100,
    ttfbRounds: 10,
    ttfbPerRound: 200,
  },
  idleStreams: 1000,
  idleRssProcesses: 3,
};

const QUICK: Profile = {
  ...FULL,
  rounds: 1,
  runSeconds: 1,
  warmupSeconds: 0.5,
  jitWarmupSeconds: 1,
  openLoop: { ...FULL.openLoop, warmupCalls: 100, rounds: 1, callsPerRound: 600 },
  paced: {
    ...FULL.paced,
    startStreams: 16,
    bisectSteps: 1,
    tries: 1,
    searchBudgetSeconds: 90,
    ttfbWarmup: 50,
    ttfbRounds: 3,
    ttfbPerRound: 100,
  },
  idleRssProcesses: 1,
};

export type Engine = 'autocannon' | 'wrk';

export interface BenchOptions {
  quick: boolean;
  profile: Profile;
  suites: ReadonlySet<Suite>;
  jsonOut: string | undefined;
  /** `auto` picks wrk when it is on PATH. */
  engine: Engine | 'auto';
  /** Scenario ids to run (`keyed` is always added); undefined = every scenario enabled by default. */
  scenarioIds: string[] | undefined;
  /** Directory for the gateway's `--cpu-prof` output; undefined = no profiling. */
  cpuProfDir: string | undefined;
  /** Reports written by earlier runs' --json: judge the bars on their median instead of running. */
  judge: string[] | undefined;
}

export const HELP = `Usage: npm run bench -- [options]

Starts a fixed-response upstream, a bare node:http pass-through (the floor) and the gateway as
separate processes on 127.0.0.1, and measures them in alternating runs. See docs/benchmarks.md.

Options:
  --quick               one short round per measurement (smoke run, about 3 minutes)
  --only LIST           comma-separated subset of: ${SUITES.join(', ')}
                        (default: ${DEFAULT_SUITES.join(', ')})
  --json FILE           also write machine-readable results to FILE
  --judge A.json,B.json judge the bars on the median of runs saved with --json
                        (two full runs make the verdict); runs nothing
  --engine NAME         load generator: autocannon, wrk, or auto (wrk when on PATH; default)
  --scenarios LIST      gateway scenarios to run (ids from bench/scenarios.ts: keyed,
                        recording-off, open, postgres; keyed, which the bars judge, is
                        always added). Default: keyed, recording-off
  --rounds N            measured rounds per load workload (1-20; default 5, --quick 1)
  --seconds S           seconds per load run (0.5-30; default 2, --quick 1)
  --cpu-prof DIR        run the gateway with --cpu-prof, writing the profile into DIR
  -h, --help            show this help
`;

export class UsageError extends Error {}

export function parseOptions(argv: string[]): BenchOptions | 'help' {
  let parsed;
  try {
    parsed = parseArgs({
      args: argv,
      allowPositionals: false,
      strict: true,
      options: {
        quick: { type: 'boolean' },
        only: { type: 'string' },
        json: { type: 'string' },
        engine: { type: 'string' },
        scenarios: { type: 'string' },
        rounds: { type: 'string' },
        seconds: { type: 'string' },
        'cpu-prof': { type: 'string' },
        judge: { type: 'string' },
        help: { type: 'boolean', short: 'h' },
      },
    });
  } catch (error) {
    throw new UsageError((error as Error).message);
  }
  const { values } = parsed;
  if (values.help) return 'help';

  const suites = new Set<Suite>();
  for (const name of (values.only ?? DEFAULT_SUITES.join(','))
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean)) {
    if (!(SUITES as readonly string[]).includes(name))
      throw new UsageError(`--only: unknown suite "${name}" (expected ${SUITES.join(', ')})`);
    suites.add(name as Suite);
  }
  if (suites.size === 0) throw new UsageError('--only: name at least one suite');

  const engine = values.engine ?? 'auto';
  if (engine !== 'auto' && engine !== 'autocannon' && engine !== 'wrk')
    throw new UsageError(`--engine: "${engine}" is not autocannon, wrk or auto`);

  const base = values.quick ? QUICK : FULL;
  const profile: Profile = {
    ...base,
    rounds: boundedNumber('--rounds', values.rounds, base.rounds, 1, 20, true),
    runSeconds: boundedNumber('--seconds', values.seconds, base.runSeconds, 0.5, 30, false),
  };

  return {
    quick: values.quick === true,
    profile,
    suites,
    jsonOut: values.json,
    engine,
    scenarioIds: values.scenarios
      ?.split(',')
      .map((s) => s.trim())
      .filter(Boolean),
    cpuProfDir: values['cpu-prof'],
    judge: judgeFiles(values.judge),
  };
}

function judgeFiles(raw: string | undefined): string[] | undefined {
  if (raw === undefined) return undefined;
  const files = raw
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean);
  if (files.length < 2) throw new UsageError('--judge: name at least two reports written with --json');
  return files;
}

function boundedNumber(
  flag: string,
  raw: string | undefined,
  fallback: number,
  min: number,
  max: number,
  integer: boolean,
): number {
  if (raw === undefined) return fallback;
  const n = Number(raw);
  if (!Number.isFinite(n) || n < min || n > max || (integer && !Number.isInteger(n))) {
    throw new UsageError(`${flag}: "${raw}" must be ${integer ? 'a whole number' : 'a number'} from ${min} to ${max}`);
  }
  return n;
}
