/**
 * The streaming suite: for each concurrency (1 and 100 streams), `streamRounds` rounds in which
 * every target is probed once (order rotated); per target, the median over rounds of each
 * round's p50/p99 time to first byte and per-event latency.
 */
import type { Profile } from './options.js';
import { probeRound, type ProbeShape } from './stream-probe.js';
import { median, percentile } from './stats.js';
import { rotated, type Target } from './targets.js';

export interface TargetStreamResult {
  targetId: string;
  ttfbP50Ms: number;
  ttfbP99Ms: number;
  chunkP50Ms: number;
  chunkP99Ms: number;
  failed: number;
  events: number;
}

export interface StreamCellResult {
  shape: ProbeShape;
  rounds: number;
  targets: TargetStreamResult[];
}

export async function runStreamCell(
  targets: readonly Target[],
  shape: ProbeShape,
  profile: Profile,
  progress: (line: string) => void,
): Promise<StreamCellResult> {
  type Round = { ttfbP50: number; ttfbP99: number; chunkP50: number; chunkP99: number; failed: number; events: number };
  const rounds = new Map<string, Round[]>(targets.map((t) => [t.id, []]));
  for (let round = 0; round < profile.streamRounds; round++) {
    for (const target of rotated(targets, round)) {
      const r = await probeRound({ url: target.url, headers: target.headers }, shape);
      rounds.get(target.id)!.push({
        ttfbP50: percentile(r.ttfbMs, 50),
        ttfbP99: percentile(r.ttfbMs, 99),
        chunkP50: percentile(r.chunkMs, 50),
        chunkP99: percentile(r.chunkMs, 99),
        failed: r.failed,
        events: r.chunkMs.length,
      });
      progress(`streams ${shape.streams}x round ${round + 1}/${profile.streamRounds} ${target.label}: first byte ` +
          `p50 ${percentile(r.ttfbMs, 50).toFixed(3)} ms, event p50 ${percentile(r.chunkMs, 50).toFixed(3)} ` +
          `ms${r.failed ? `, ${r.failed} failed` : ''}`);
    }
  }
  return {
    shape,
    rounds: profile.streamRounds,
    targets: targets.map((target) => {
      const rs = rounds.get(target.id)!;
      return {
        targetId: target.id,
        ttfbP50Ms: median(rs.map((r) => r.ttfbP50)),
        ttfbP99Ms: median(rs.map((r) => r.ttfbP99)),
        chunkP50Ms: median(rs.map((r) => r.chunkP50)),
        chunkP99Ms: median(rs.map((r) => r.chunkP99)),
        failed: rs.reduce((sum, r) => sum + r.failed, 0),
        events: rs.reduce((sum, r) => sum + r.events, 0),
      };
    }),
  };
}
