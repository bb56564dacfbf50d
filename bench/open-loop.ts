/**
 * The open-loop generator: one keep-alive connection that sends a call on a fixed schedule
 * (every 1/rate s) whether or not the previous answer has come, and measures each call's latency
 * from its scheduled send time. A call due while the one before is still in flight waits for the
 * connection, and that wait counts (no coordinated omission). Bounded: `calls` calls, and the run
 * gives up `calls / rate + slack` seconds after it began. Hand-written: decision record 0008.
 */
import { Agent, request } from 'node:http';
import type { LoadRequest, LoadRunResult } from './load.js';
import { percentile, Samples } from './stats.js';

/** A run ends this long after its last scheduled send, answered or not. */
const DRAIN_SLACK_MS = 10_000;
/** One call's own bound: a call not answered within it counts as an error. */
const CALL_TIMEOUT_MS = 5_000;

export interface OpenLoopRun {
  /** Calls per second the schedule asks for. */
  rate: number;
  calls: number;
}

/** Runs `calls` calls at `rate` per second on one connection; rps is the answered 2xx calls over the scheduled span. */
export function runOpenLoop(baseUrl: string, call: LoadRequest, { rate, calls }: OpenLoopRun): Promise<LoadRunResult> {
  const agent = new Agent({ keepAlive: true, maxSockets: 1 });
  const url = new URL(call.path, baseUrl);
  const body = Buffer.from(call.body);
  const headers = { ...call.headers, 'content-length': String(body.length) };
  const intervalMs = 1000 / rate;
  const latencies = new Samples(calls);
  let ok = 0;
  let non2xx = 0;
  let errors = 0;
  let settled = 0;

  return new Promise<LoadRunResult>((resolve) => {
    const startedAt = performance.now();
    let timer: NodeJS.Timeout | undefined;
    let sent = 0;
    let finished = false;
    const finish = () => {
      if (finished) return;
      finished = true;
      clearTimeout(timer);
      clearTimeout(giveUp);
      agent.destroy();
      const spanS = (Math.max(1, sent) * intervalMs) / 1000;
      const values = latencies.values();
      resolve({
        rps: ok / spanS,
        p50Ms: percentile(values, 50),
        p99Ms: percentile(values, 99),
        okResponses: ok,
        errors: errors + (sent - settled),
        non2xx,
      });
    };
    const giveUp = setTimeout(finish, calls * intervalMs + DRAIN_SLACK_MS);

    const send = (scheduledAt: number) => {
      let done = false;
      const settle = (status: number | undefined) => {
        if (done) return;
        done = true;
        settled++;
        if (status === undefined) errors++;
        else if (status >= 200 && status < 300) {
          ok++;
          latencies.push(performance.now() - scheduledAt);
        } else non2xx++;
        if (settled === calls) finish();
      };
      const req = request(url, { method: call.method, headers, agent, timeout: CALL_TIMEOUT_MS }, (res) => {
        res.resume();
        res.on('end', () => settle(res.statusCode));
        res.on('error', () => settle(undefined));
      });
      req.on('timeout', () => req.destroy(new Error('timeout')));
      req.on('error', () => settle(undefined));
      req.end(body);
    };

    // Each timer is set against the absolute schedule, so late timers do not drift the rate.
    const tick = () => {
      const now = performance.now();
      while (sent < calls && startedAt + sent * intervalMs <= now) send(startedAt + sent++ * intervalMs);
      if (sent < calls) timer = setTimeout(tick, Math.max(0, startedAt + sent * intervalMs - performance.now()));
    };
    tick();
  });
}
