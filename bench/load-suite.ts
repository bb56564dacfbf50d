/**
 * The JSON and SSE load suites: for each connection count, a warm-up run per target, then
 * `rounds` rounds in which every target runs once (order rotated per round); the result per
 * target is the median over rounds. Each run also reads the target process's CPU time, so the
 * report can show CPU per request, which moves less with machine noise than req/s does.
 *
 * Paired comparisons (two gateway scenarios measured against each other): the two run back to
 * back in every round, their order alternating between rounds, and the comparison is the
 * median of the per-round ratios (differences for latency). Machine load that changes between
 * rounds then hits both sides of a ratio alike. A target paired with more partners than it has
 * neighbours (baseline: auth-on before it, recording-off after it, and postgres) runs once more
 * in the round, next to the extra partner; that extra run only feeds the comparison.
 */
import type { LoadDriver, LoadRequest, LoadRunResult } from './load.js';
import type { Profile } from './options.js';
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

/** Two targets measured back to back in every round (see the file comment). */
export interface PairSpec {
  id: string;
  /** Target ids: the ratio is subject ÷ reference. */
  subjectId: string;
  referenceId: string;
}

export interface PairRound {
  subject: RoundRun;
  reference: RoundRun;
  /** subject req/s ÷ reference req/s in this round. */
  rpsRatio: number;
  /** subject p50 − reference p50 in this round, ms. */
  p50DeltaMs: number;
  /** subject CPU µs/req ÷ reference CPU µs/req in this round. */
  cpuRatio: number;
}

export interface PairLoadResult extends PairSpec {
  /** Median of the per-round values. */
  rpsRatio: number;
  p50DeltaMs: number;
  cpuRatio: number;
  /** max − min of the per-round req/s ratios: how much the pairing still moved. */
  rpsRatioRange: number;
  rounds: PairRound[];
}

export interface LoadCellResult {
  workload: Workload;
  connections: number;
  targets: TargetLoadResult[];
  pairs: PairLoadResult[];
}

const PAUSE_BETWEEN_RUNS_MS = 100;

/** One run in a round. `primary` runs feed the target's own numbers; extra runs only a pair. */
interface Slot {
  target: Target;
  primary: boolean;
}

/**
 * The units of a round, in order: each target alone, or a group of targets that must run
 * adjacent (a chain of pairs). `pairSlots` says which two runs each pair's ratio uses.
 */
function planRound(targets: readonly Target[], pairs: readonly PairSpec[]): { units: Slot[][]; pairSlots: Map<string, [Slot, Slot]> } {
  const byId = new Map(targets.map((t) => [t.id, t]));
  const groups: Slot[][] = [];
  const placed = new Map<string, { group: Slot[]; slot: Slot }>();
  const pairSlots = new Map<string, [Slot, Slot]>();
  const place = (group: Slot[], target: Target, atStart: boolean): Slot => {
    const slot = { target, primary: !placed.has(target.id) };
    if (atStart) group.unshift(slot);
    else group.push(slot);
    if (slot.primary) placed.set(target.id, { group, slot });
    return slot;
  };
  for (const pair of pairs) {
    const subject = byId.get(pair.subjectId);
    const reference = byId.get(pair.referenceId);
    if (!subject || !reference) throw new Error(`pair ${pair.id}: unknown target`);
    const s = placed.get(subject.id);
    const r = placed.get(reference.id);
    const atEnd = (p: { group: Slot[]; slot: Slot }) => (p.group[0] === p.slot ? 'start' : p.group[p.group.length - 1] === p.slot ? 'end' : undefined);
    if (s && r && s.group === r.group && Math.abs(s.group.indexOf(s.slot) - s.group.indexOf(r.slot)) === 1) {
      pairSlots.set(pair.id, [s.slot, r.slot]);
    } else if (s && !r && atEnd(s)) {
      pairSlots.set(pair.id, [s.slot, place(s.group, reference, atEnd(s) === 'start')]);
    } else if (r && !s && atEnd(r)) {
      pairSlots.set(pair.id, [place(r.group, subject, atEnd(r) === 'start'), r.slot]);
    } else {
      // Neither placed, or a placed one has no free side: a new group (a placed target runs once more).
      const group: Slot[] = [];
      groups.push(group);
      const subjectSlot = place(group, subject, false);
      pairSlots.set(pair.id, [subjectSlot, place(group, reference, false)]);
    }
  }
  const singles = targets.filter((t) => !placed.has(t.id)).map((target) => [{ target, primary: true }]);
  return { units: [...singles, ...groups], pairSlots };
}

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
    headers: { 'content-type': 'application/json', ...(workload === 'sse' ? { accept: 'text/event-stream' } : {}), ...headers },
    body: JSON.stringify(body),
  };
}

export async function runLoadCell(
  driver: LoadDriver,
  targets: readonly Target[],
  pairs: readonly PairSpec[],
  workload: Workload,
  connections: number,
  profile: Profile,
  progress: (line: string) => void,
): Promise<LoadCellResult> {
  const { units, pairSlots } = planRound(targets, pairs);
  const runs = new Map<Slot, RoundRun[]>(units.flat().map((slot) => [slot, []]));
  for (const target of targets) {
    progress(`${workload} ${connections}c warm-up ${target.label}`);
    await driver.run(target.url, requestFor(workload, target.headers), connections, profile.warmupSeconds);
    await sleep(PAUSE_BETWEEN_RUNS_MS);
  }
  for (let round = 0; round < profile.rounds; round++) {
    // Units rotate; inside a group the order flips every round, so neither side of a pair always runs first.
    const order = rotated(units, round).flatMap((unit) => (round % 2 === 1 ? [...unit].reverse() : unit));
    for (const slot of order) {
      const { target } = slot;
      const cpuBefore = await cpuTimeMs(target.pid);
      const result = await driver.run(target.url, requestFor(workload, target.headers), connections, profile.runSeconds);
      const cpuAfter = await cpuTimeMs(target.pid);
      const cpuUsPerReq = cpuBefore !== undefined && cpuAfter !== undefined && result.okResponses > 0 ? ((cpuAfter - cpuBefore) * 1000) / result.okResponses : Number.NaN;
      runs.get(slot)!.push({ ...result, cpuUsPerReq });
      const again = slot.primary ? '' : ' (again, paired)';
      const failures = result.errors + result.non2xx > 0 ? `, ${result.errors} errors, ${result.non2xx} non-2xx` : '';
      progress(`${workload} ${connections}c round ${round + 1}/${profile.rounds} ${target.label}${again}: ` +
        `${Math.round(result.rps)} req/s, p50 ${result.p50Ms.toFixed(3)} ms${failures}`);
      await sleep(PAUSE_BETWEEN_RUNS_MS);
    }
  }
  const primaryRuns = (target: Target) => runs.get(units.flat().find((slot) => slot.primary && slot.target.id === target.id)!)!;
  return {
    workload,
    connections,
    targets: targets.map((target) => {
      const rounds = primaryRuns(target);
      const rps = median(rounds.map((r) => r.rps));
      return {
        targetId: target.id,
        rps,
        p50Ms: median(rounds.map((r) => r.p50Ms)),
        p99Ms: median(rounds.map((r) => r.p99Ms)),
        cpuUsPerReq: median(rounds.map((r) => r.cpuUsPerReq)),
        rpsSpread: rounds.length > 1 ? (Math.max(...rounds.map((r) => r.rps)) - Math.min(...rounds.map((r) => r.rps))) / rps : 0,
        errors: rounds.reduce((sum, r) => sum + r.errors, 0),
        non2xx: rounds.reduce((sum, r) => sum + r.non2xx, 0),
        rounds,
      };
    }),
    pairs: pairs.map((pair) => {
      const [subjectSlot, referenceSlot] = pairSlots.get(pair.id)!;
      const subjectRuns = runs.get(subjectSlot)!;
      const referenceRuns = runs.get(referenceSlot)!;
      const rounds: PairRound[] = subjectRuns.map((subject, i) => {
        const reference = referenceRuns[i]!;
        return { subject, reference, rpsRatio: subject.rps / reference.rps, p50DeltaMs: subject.p50Ms - reference.p50Ms, cpuRatio: subject.cpuUsPerReq / reference.cpuUsPerReq };
      });
      const ratios = rounds.map((r) => r.rpsRatio).filter(Number.isFinite);
      return {
        ...pair,
        rpsRatio: median(rounds.map((r) => r.rpsRatio)),
        p50DeltaMs: median(rounds.map((r) => r.p50DeltaMs)),
        cpuRatio: median(rounds.map((r) => r.cpuRatio)),
        rpsRatioRange: ratios.length > 1 ? Math.max(...ratios) - Math.min(...ratios) : 0,
        rounds,
      };
    }),
  };
}

/** Unmeasured JSON and SSE load on every target, before any suite (V8 compiles the hot paths). */
export async function warmUpTargets(driver: LoadDriver, targets: readonly Target[], seconds: number, progress: (line: string) => void): Promise<void> {
  for (const target of targets) {
    progress(`JIT warm-up: ${target.label}`);
    for (const workload of ['json', 'sse'] as const) await driver.run(target.url, requestFor(workload, target.headers), 50, seconds);
  }
}
