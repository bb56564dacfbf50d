/** Command-line options of `npm run bench` and the two timing profiles (full and --quick). */
import { parseArgs } from 'node:util';

export const SUITES = ['json', 'sse', 'streams', 'rss'] as const;
export type Suite = (typeof SUITES)[number];

export interface Profile {
  /** Measured rounds per load workload and target; the report shows their median. */
  rounds: number;
  /** Measured rounds of the stream probes (fewer: they take longer per round and have no paired bars). */
  streamRounds: number;
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
  /** Concurrent streams for the stream probe, and how many waves of them one round opens. */
  streamProbes: ReadonlyArray<{ streams: number; waves: number }>;
  streamChunks: number;
  streamIntervalMs: number;
  idleStreams: number;
  /** Fresh processes of the bar's gateway measured with idle streams (the bar takes their median). */
  idleRssProcesses: number;
}

const FULL: Profile = {
  rounds: 5,
  streamRounds: 3,
  runSeconds: 2,
  warmupSeconds: 1,
  jitWarmupSeconds: 2,
  connections: [1, 50],
  streamProbes: [
    { streams: 1, waves: 10 },
    { streams: 100, waves: 3 },
  ],
  streamChunks: 20,
  streamIntervalMs: 10,
  idleStreams: 1000,
  idleRssProcesses: 3,
};

const QUICK: Profile = {
  ...FULL,
  rounds: 1,
  streamRounds: 1,
  runSeconds: 1,
  warmupSeconds: 0.5,
  jitWarmupSeconds: 1,
  streamProbes: [
    { streams: 1, waves: 3 },
    { streams: 100, waves: 1 },
  ],
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
  /** Scenario ids to run (`baseline` is always added); undefined = every scenario enabled by default. */
  scenarioIds: string[] | undefined;
  /** Directory for the gateway's `--cpu-prof` output; undefined = no profiling. */
  cpuProfDir: string | undefined;
}

export const HELP = `Usage: npm run bench -- [options]

Starts a fixed-response upstream, a bare node:http pass-through (the floor) and the gateway as
separate processes on 127.0.0.1, and measures them in alternating runs. See docs/benchmarks.md.

Options:
  --quick               one short round per measurement (smoke run, about 2 minutes)
  --only LIST           comma-separated subset of: ${SUITES.join(', ')}
  --json FILE           also write machine-readable results to FILE
  --engine NAME         load generator: autocannon, wrk, or auto (wrk when on PATH; default)
  --scenarios LIST      gateway scenarios to run (ids from bench/scenarios.ts: baseline,
                        auth-on, recording-off, postgres; baseline is always added).
                        Default: all four (postgres is skipped, with a note, when no
                        PostgreSQL answers at $GATEHOUSE_BENCH_DATABASE_URL)
  --rounds N            measured rounds per load workload and per stream probe
                        (1-20; default 5 for load and 3 for streams, --quick 1)
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
        help: { type: 'boolean', short: 'h' },
      },
    });
  } catch (error) {
    throw new UsageError((error as Error).message);
  }
  const { values } = parsed;
  if (values.help) return 'help';

  const suites = new Set<Suite>();
  for (const name of (values.only ?? SUITES.join(',')).split(',').map((s) => s.trim()).filter(Boolean)) {
    if (!(SUITES as readonly string[]).includes(name)) throw new UsageError(`--only: unknown suite "${name}" (expected ${SUITES.join(', ')})`);
    suites.add(name as Suite);
  }
  if (suites.size === 0) throw new UsageError('--only: name at least one suite');

  const engine = values.engine ?? 'auto';
  if (engine !== 'auto' && engine !== 'autocannon' && engine !== 'wrk') throw new UsageError(`--engine: "${engine}" is not autocannon, wrk or auto`);

  const base = values.quick ? QUICK : FULL;
  const profile: Profile = {
    ...base,
    rounds: boundedNumber('--rounds', values.rounds, base.rounds, 1, 20, true),
    streamRounds: boundedNumber('--rounds', values.rounds, base.streamRounds, 1, 20, true),
    runSeconds: boundedNumber('--seconds', values.seconds, base.runSeconds, 0.5, 30, false),
  };

  return {
    quick: values.quick === true,
    profile,
    suites,
    jsonOut: values.json,
    engine,
    scenarioIds: values.scenarios?.split(',').map((s) => s.trim()).filter(Boolean),
    cpuProfDir: values['cpu-prof'],
  };
}

function boundedNumber(flag: string, raw: string | undefined, fallback: number, min: number, max: number, integer: boolean): number {
  if (raw === undefined) return fallback;
  const n = Number(raw);
  if (!Number.isFinite(n) || n < min || n > max || (integer && !Number.isInteger(n))) {
    throw new UsageError(`${flag}: "${raw}" must be ${integer ? 'a whole number' : 'a number'} from ${min} to ${max}`);
  }
  return n;
}
