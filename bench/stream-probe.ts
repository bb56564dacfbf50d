/**
 * The stream probe: opens streams to the upstream's timed-stream endpoint (directly or through
 * a proxy) and measures, per stream, the time to first byte (request start → response headers)
 * and, per event, receive time − the upstream's send time stamped into the event. Both clocks
 * are `performance.timeOrigin + performance.now()` of local processes, so a constant offset
 * between them cancels out in "via proxy − direct", the number the report is about.
 */
import { Agent, request } from 'node:http';
import { Samples } from './stats.js';

export interface ProbeTarget {
  url: string;
  headers: Readonly<Record<string, string>>;
}

export interface ProbeShape {
  streams: number;
  /** Measured waves of `streams` concurrent streams, one after the other. */
  waves: number;
  chunks: number;
  intervalMs: number;
}

export interface ProbeRound {
  ttfbMs: Float64Array;
  chunkMs: Float64Array;
  /** Streams that failed, timed out or missed events. */
  failed: number;
}

const BODY = JSON.stringify({ model: 'bench-model', stream: true, messages: [{ role: 'user', content: 'Count to twenty.' }] });
const epochNow = () => performance.timeOrigin + performance.now();

/**
 * One round: a fresh keep-alive agent (no socket limit), one unmeasured wave that opens the
 * connections, then the measured waves. The agent is destroyed at the end of the round.
 */
export async function probeRound(target: ProbeTarget, shape: ProbeShape): Promise<ProbeRound> {
  const agent = new Agent({ keepAlive: true, maxSockets: Infinity });
  const ttfb = new Samples();
  const chunk = new Samples();
  let failed = 0;
  try {
    for (let wave = 0; wave <= shape.waves; wave++) {
      const measured = wave > 0;
      const outcomes = await Promise.all(Array.from({ length: shape.streams }, () => openStream(target, shape, agent)));
      if (!measured) continue;
      for (const outcome of outcomes) {
        if (!outcome.ok) failed++;
        if (outcome.ttfbMs !== undefined) ttfb.push(outcome.ttfbMs);
        for (const ms of outcome.chunkMs) chunk.push(ms);
      }
    }
  } finally {
    agent.destroy();
  }
  return { ttfbMs: ttfb.values(), chunkMs: chunk.values(), failed };
}

interface StreamOutcome {
  ok: boolean;
  ttfbMs: number | undefined;
  chunkMs: number[];
}

function openStream(target: ProbeTarget, shape: ProbeShape, agent: Agent): Promise<StreamOutcome> {
  const path = `/v1/bench/timed-stream?chunks=${shape.chunks}&interval_ms=${shape.intervalMs}`;
  const deadlineMs = shape.chunks * shape.intervalMs + 10_000;
  return new Promise((resolve) => {
    const chunkMs: number[] = [];
    let ttfbMs: number | undefined;
    let done = false;
    const finish = (ok: boolean) => {
      if (done) return;
      done = true;
      clearTimeout(timer);
      resolve({ ok: ok && chunkMs.length === shape.chunks, ttfbMs, chunkMs });
    };
    const startedAt = performance.now();
    const req = request(
      `${target.url}${path}`,
      { method: 'POST', agent, headers: { ...target.headers, 'content-type': 'application/json', accept: 'text/event-stream' } },
      (res) => {
        ttfbMs = performance.now() - startedAt;
        if (res.statusCode !== 200) {
          res.resume();
          finish(false);
          return;
        }
        let pending = '';
        res.setEncoding('utf8');
        res.on('data', (text: string) => {
          const receivedAt = epochNow();
          pending += text;
          let newline: number;
          while ((newline = pending.indexOf('\n')) >= 0) {
            const line = pending.slice(0, newline);
            pending = pending.slice(newline + 1);
            const sentAt = /"sent_at":([\d.]+)/.exec(line)?.[1];
            if (sentAt !== undefined) chunkMs.push(receivedAt - Number(sentAt));
          }
        });
        res.on('end', () => finish(true));
        res.on('close', () => finish(false)); // after 'end' this is a no-op
        res.on('error', () => finish(false));
      },
    );
    const timer = setTimeout(() => {
      req.destroy();
      finish(false);
    }, deadlineMs);
    req.on('error', () => finish(false));
    req.end(BODY);
  });
}
