/**
 * The JSON and SSE load suites, closed loop: for each connection count, a warm-up run per target, then
 * `rounds` rounds in which every target runs once (order rotated per round); the result per
 * target is the median over rounds. Each run also reads the target process's CPU time, so the
 * report can show CPU per request, which moves less with machine noise than req/s does.
 * And the open-loop JSON cell: one connection at a fixed rate, in the same kind of rounds.
 */
import type { LoadDriver, LoadRequest, LoadRunResult } from './load.js';
import type { Profile } from './options.js';
import { runOpenLoop } from './open-loop.js';
import { cpuTimeMs } from './proc.js';
import { median, sleep } from './stats.js';
import { rotated, type Target } from './targets.js';

export type Workload = 'json' | 'sse';

type RoundRun = LoadRunResult & { cpuUsPerReq: number };

export interface TargetLoadResult {
  targetId: string;
  rps: number;
  p50Ms: number;
  p99Ms: number;
  /** CPU time of the target's process per successful request (floor/gateway: the proxy; direct: the upstream). */
  cpuUsPerReq: number;
  /** (max − min) / median of the rounds' req/s: how steady the machine was. */
  rpsSpread: number;
  errors: number;
  non2xx: number;
  rounds: RoundRun[];
}

export interface LoadCellResult {
  workload: Workload;
  connections: number;
  /** Set for an open-loop cell: calls per second sent on a fixed schedule. Unset: closed loop. */
  ratePerSecond?: number;
  targets: TargetLoadResult[];
}

const PAUSE_BETWEEN_RUNS_MS = 100;

export function requestFor(workload: Workload, headers: Readonly<Record<string, string>>): LoadRequest {
  const body = {
    model: 'bench-model',
    messages: [{ role: 'user', content: 'Say hello.' }],
    max_tokens: 16,
    ...(workload === 'sse' ? { stream: true } : {}),
  };
  return {
    method: 'POST',
    path: '/v1/chat/completions',
    headers: {
      'content-type': 'application/json',
      ...(workload === 'sse' ? { accept: 'text/event-stream' } : {}),
      ...headers,
    },
    body: JSON.stringify(body),
  };
}

export async function runLoadCell(
  driver: LoadDriver,
  targets: readonly Target[],
  workload: Workload,
  connections: number,
  profile: Profile,
  progress: (line: string) => void,
): Promise<LoadCellResult> {
  const name = `${workload} ${connections}c`;
  for (const target of targets) {
    progress(`${name} warm-up ${target.label}`);
    await driver.run(target.url, requestFor(workload, target.headers), connections, profile.warmupSeconds);
    await sleep(PAUSE_BETWEEN_RUNS_MS);
  }
  const run = (target: Target) =>
    driver.run(target.url, requestFor(workload, target.headers), connections, profile.runSeconds);
  return { workload, connections, targets: await runRounds(targets, profile.rounds, run, name, progress) };
}

/**
 * JSON calls on one connection at a fixed rate (open loop, bench/open-loop.ts): a warm-up run per
 * target, then rounds in which every target runs once, order rotated.
 */
export async function runOpenLoopCell(
  targets: readonly Target[],
  profile: Profile,
  progress: (line: string) => void,
): Promise<LoadCellResult> {
  const { ratePerSecond: rate, rounds, callsPerRound, warmupCalls } = profile.openLoop;
  const name = `json 1c at ${rate}/s`;
  for (const target of targets) {
    progress(`${name} warm-up ${target.label}`);
    await runOpenLoop(target.url, requestFor('json', target.headers), { rate, calls: warmupCalls });
    await sleep(PAUSE_BETWEEN_RUNS_MS);
  }
  const run = (target: Target) =>
    runOpenLoop(target.url, requestFor('json', target.headers), { rate, calls: callsPerRound });
  const results = await runRounds(targets, rounds, run, name, progress);
  return { workload: 'json', connections: 1, ratePerSecond: rate, targets: results };
}

/** `rounds` rounds in which every target runs once (order rotated), its process's CPU time read around each run. */
async function runRounds(
  targets: readonly Target[],
  rounds: number,
  runOne: (target: Target) => Promise<LoadRunResult>,
  name: string,
  progress: (line: string) => void,
): Promise<TargetLoadResult[]> {
  const runs = new Map<string, RoundRun[]>(targets.map((t) => [t.id, []]));
  for (let round = 0; round < rounds; round++) {
    for (const target of rotated(targets, round)) {
      const cpuBefore = await cpuTimeMs(target.pid);
      const result = await runOne(target);
      const cpuAfter = await cpuTimeMs(target.pid);
      const cpuUsPerReq =
        cpuBefore !== undefined && cpuAfter !== undefined && result.okResponses > 0
          ? ((cpuAfter - cpuBefore) * 1000) / result.okResponses
          : Number.NaN;
      runs.get(target.id)!.push({ ...result, cpuUsPerReq });
      const failures = result.errors + result.non2xx > 0 ? `, ${result.errors} errors, ${result.non2xx} non-2xx` : '';
      progress(
        `${name} round ${round + 1}/${rounds} ${target.label}: ` +
          `${Math.round(result.rps)} req/s, p50 ${result.p50Ms.toFixed(3)} ` +
          `p99 ${result.p99Ms.toFixed(3)} ms${failures}`,
      );
      await sleep(PAUSE_BETWEEN_RUNS_MS);
    }
  }
  return targets.map((target) => {
    const rounds = runs.get(target.id)!;
    const rps = median(rounds.map((r) => r.rps));
    return {
      targetId: target.id,
      rps,
      p50Ms: median(rounds.map((r) => r.p50Ms)),
      p99Ms: median(rounds.map((r) => r.p99Ms)),
      cpuUsPerReq: median(rounds.map((r) => r.cpuUsPerReq)),
      rpsSpread:
        rounds.length > 1 ? (Math.max(...rounds.map((r) => r.rps)) - Math.min(...rounds.map((r) => r.rps))) / rps : 0,
      errors: rounds.reduce((sum, r) => sum + r.errors, 0),
      non2xx: rounds.reduce((sum, r) => sum + r.non2xx, 0),
      rounds,
    };
  });
}

/** Unmeasured JSON and SSE load on every target, before any suite (V8 compiles the hot paths). */
export async function warmUpTargets(
  driver: LoadDriver,
  targets: readonly Target[],
  seconds: number,
  progress: (line: string) => void,
): Promise<void> {
  for (const target of targets) {
    progress(`JIT warm-up: ${target.label}`);
    for (const workload of ['json', 'sse'] as const)
      await driver.run(target.url, requestFor(workload, target.headers), 50, seconds);
  }
}
