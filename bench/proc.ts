/** Reads a process's memory and CPU time from /proc (Linux only; other systems get undefined). */
import { readFile } from 'node:fs/promises';

/** USER_HZ is 100 on every Linux the bench targets. */
const CLOCK_TICKS_PER_SECOND = 100;

export interface Memory {
  /** Resident set size. */
  rssBytes: number;
  /** Its anonymous part (heap, stacks): what the process allocated, without mapped code and files. */
  anonBytes: number | undefined;
}

/** Resident memory of a process, from /proc/PID/status (Linux); undefined elsewhere. */
export async function memoryOf(pid: number): Promise<Memory | undefined> {
  try {
    const status = await readFile(`/proc/${pid}/status`, 'utf8');
    const kb = (name: string) => {
      const match = new RegExp(`^${name}:\\s+(\\d+)\\s+kB`, 'm').exec(status);
      return match ? Number(match[1]) * 1024 : undefined;
    };
    const rssBytes = kb('VmRSS');
    return rssBytes === undefined ? undefined : { rssBytes, anonBytes: kb('RssAnon') };
  } catch {
    return undefined;
  }
}

/** CPU time (user + system) a process has used so far, in ms, from /proc/PID/stat; undefined elsewhere. */
export async function cpuTimeMs(pid: number): Promise<number | undefined> {
  try {
    const stat = await readFile(`/proc/${pid}/stat`, 'utf8');
    // Fields after the parenthesised command name; utime and stime are fields 14 and 15 (clock ticks).
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    const ticks = Number(fields[11]) + Number(fields[12]);
    return Number.isFinite(ticks) ? ticks * (1000 / CLOCK_TICKS_PER_SECOND) : undefined;
  } catch {
    return undefined;
  }
}

/** Busy and total CPU time of the whole machine so far, in ms (all CPUs summed), from /proc/stat. */
export async function machineCpuMs(): Promise<{ busyMs: number; totalMs: number } | undefined> {
  try {
    const stat = await readFile('/proc/stat', 'utf8');
    const fields = (/^cpu\s+(.*)$/m.exec(stat)?.[1] ?? '').trim().split(/\s+/).map(Number);
    const [user = 0, nice = 0, system = 0, idle = 0, iowait = 0, irq = 0, softirq = 0, steal = 0] = fields;
    // Interrupt time is left out of "busy": on loopback it is mostly the bench's own packets,
    // which no process is charged for. Steal (the hypervisor running someone else) stays in.
    const busy = user + nice + system + steal;
    const tick = 1000 / CLOCK_TICKS_PER_SECOND;
    return { busyMs: busy * tick, totalMs: (busy + idle + iowait + irq + softirq) * tick };
  } catch {
    return undefined;
  }
}

/** CPU time of this process plus its exited (reaped) children, e.g. finished wrk runs, in ms. */
export async function selfAndReapedChildrenCpuMs(): Promise<number | undefined> {
  try {
    const stat = await readFile('/proc/self/stat', 'utf8');
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    // utime, stime, cutime, cstime: fields 14-17.
    const ticks = [11, 12, 13, 14].reduce((sum, i) => sum + Number(fields[i]), 0);
    return Number.isFinite(ticks) ? ticks * (1000 / CLOCK_TICKS_PER_SECOND) : undefined;
  } catch {
    return undefined;
  }
}
