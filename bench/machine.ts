/**
 * How busy the machine was with work that is not the bench's: sampled once before anything
 * starts, and as "foreign" CPU over the whole run (machine CPU − the bench and its children).
 * Other work on a 2-core machine moves req/s a lot; this says when to distrust a run.
 */
import { cpuTimeMs, machineCpuMs, selfAndReapedChildrenCpuMs } from './proc.js';
import { sleep } from './stats.js';

/** Share (0-1) of the machine's CPU busy over `ms` while the bench itself is idle. */
export async function busyShareWhileIdle(ms = 1000): Promise<number | undefined> {
  const before = await machineCpuMs();
  await sleep(ms);
  const after = await machineCpuMs();
  if (!before || !after || after.totalMs <= before.totalMs) return undefined;
  return (after.busyMs - before.busyMs) / (after.totalMs - before.totalMs);
}

export interface ForeignCpuMeter {
  /** Share (0-1) of the machine's CPU used by other processes since the meter started. */
  read(childPids: readonly number[]): Promise<number | undefined>;
}

/** Start before the first child is spawned: every child's whole CPU time then counts as the bench's. */
export async function startForeignCpuMeter(): Promise<ForeignCpuMeter> {
  const machineStart = await machineCpuMs();
  const selfStart = await selfAndReapedChildrenCpuMs();
  return {
    async read(childPids) {
      const machine = await machineCpuMs();
      const self = await selfAndReapedChildrenCpuMs();
      if (!machineStart || !machine || selfStart === undefined || self === undefined) return undefined;
      let children = 0;
      for (const pid of childPids) children += (await cpuTimeMs(pid)) ?? 0;
      const total = machine.totalMs - machineStart.totalMs;
      if (total <= 0) return undefined;
      const foreign = machine.busyMs - machineStart.busyMs - (self - selfStart) - children;
      return Math.max(0, foreign / total);
    },
  };
}
