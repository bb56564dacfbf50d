/**
 * The paced-stream client: opens streams to the upstream's timed-stream endpoint (directly or
 * through a proxy) and reads, per stream, the time to the first delta and the gaps between
 * consecutive deltas as they arrive at the client.
 */
import { Agent, request } from 'node:http';

export interface PacedTarget {
  url: string;
  headers: Readonly<Record<string, string>>;
}

export interface PacedShape {
  /** Deltas per stream. */
  deltas: number;
  /** The upstream's pause between deltas. */
  intervalMs: number;
}

export interface StreamOutcome {
  /** 200, every delta and [DONE] received, before the deadline. */
  complete: boolean;
  /** Request start → first delta received. */
  ttfbMs: number | undefined;
  /** Receive time of each delta − the previous one's. */
  gapsMs: number[];
}

export interface WaveResult {
  streams: number;
  gapsMs: Float64Array;
  /** Streams that did not complete, or had a gap of `stallGapMs` or more. */
  stalls: number;
}

const BODY = JSON.stringify({
  model: 'bench-model',
  stream: true,
  messages: [{ role: 'user', content: 'Count to sixty-four.' }],
});
/** Connections are opened this many at a time: one burst of 1,000 SYNs overflows the listen backlog. */
const CONNECT_BATCH = 100;
/** A stream gets this long beyond its paced length before it counts as stalled. */
const DEADLINE_SLACK_MS = 10_000;

/** One stream; the first delta leaves the upstream with its headers (first_ms=0). */
function openStream(target: PacedTarget, shape: PacedShape, agent: Agent): Promise<StreamOutcome> {
  const path = `/v1/bench/timed-stream?chunks=${shape.deltas}&interval_ms=${shape.intervalMs}&first_ms=0`;
  return new Promise((resolve) => {
    const gapsMs: number[] = [];
    let ttfbMs: number | undefined;
    let lastAt: number | undefined;
    let deltas = 0;
    let sawDone = false;
    let settled = false;
    const finish = (ok: boolean) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      resolve({ complete: ok && sawDone && deltas === shape.deltas, ttfbMs, gapsMs });
    };
    const startedAt = performance.now();
    const req = request(
      `${target.url}${path}`,
      {
        method: 'POST',
        agent,
        headers: { ...target.headers, 'content-type': 'application/json', accept: 'text/event-stream' },
      },
      (res) => {
        if (res.statusCode !== 200) {
          res.resume();
          finish(false);
          return;
        }
        let pending = '';
        res.setEncoding('utf8');
        res.on('data', (text: string) => {
          const now = performance.now();
          pending += text;
          let end: number;
          while ((end = pending.indexOf('\n\n')) >= 0) {
            const event = pending.slice(0, end);
            pending = pending.slice(end + 2);
            if (event.startsWith('data: [DONE]')) {
              sawDone = true;
              continue;
            }
            deltas++;
            if (lastAt === undefined) ttfbMs = now - startedAt;
            else gapsMs.push(now - lastAt);
            lastAt = now;
          }
        });
        res.on('end', () => finish(true));
        res.on('close', () => finish(false)); // after 'end' this is a no-op
        res.on('error', () => finish(false));
      },
    );
    const timer = setTimeout(
      () => {
        req.destroy();
        finish(false);
      },
      shape.deltas * shape.intervalMs + DEADLINE_SLACK_MS,
    );
    req.on('error', () => finish(false));
    req.end(BODY);
  });
}

/**
 * N concurrent paced streams on a fresh keep-alive agent: first N one-delta streams open the
 * connections (in batches), then the measured wave starts its N streams spread evenly over one
 * interval, so deltas arrive at a steady rate rather than in bursts of N.
 */
export async function runWave(
  target: PacedTarget,
  shape: PacedShape,
  streams: number,
  stallGapMs: number,
): Promise<WaveResult> {
  const agent = new Agent({ keepAlive: true, maxSockets: Infinity, maxFreeSockets: Infinity });
  try {
    for (let opened = 0; opened < streams; opened += CONNECT_BATCH) {
      const size = Math.min(CONNECT_BATCH, streams - opened);
      await Promise.all(
        Array.from({ length: size }, () => openStream(target, { deltas: 1, intervalMs: shape.intervalMs }, agent)),
      );
    }
    const slots = Math.max(1, Math.floor(shape.intervalMs));
    const outcomes = await Promise.all(
      Array.from(
        { length: streams },
        (_, i) =>
          new Promise<StreamOutcome>((resolve) =>
            setTimeout(() => resolve(openStream(target, shape, agent)), i % slots),
          ),
      ),
    );
    let gapCount = 0;
    for (const o of outcomes) gapCount += o.gapsMs.length;
    const gapsMs = new Float64Array(gapCount);
    let at = 0;
    let stalls = 0;
    for (const o of outcomes) {
      gapsMs.set(o.gapsMs, at);
      at += o.gapsMs.length;
      if (!o.complete || o.gapsMs.some((gap) => gap >= stallGapMs)) stalls++;
    }
    return { streams, gapsMs, stalls };
  } finally {
    agent.destroy();
  }
}

/** Time to first delta of `count` one-delta streams, one after another on one keep-alive connection. */
export async function sequentialTtfb(
  target: PacedTarget,
  shape: PacedShape,
  count: number,
): Promise<{ ttfbMs: number[]; failed: number }> {
  const agent = new Agent({ keepAlive: true, maxSockets: 1 });
  const ttfbMs: number[] = [];
  let failed = 0;
  try {
    for (let i = 0; i < count; i++) {
      const outcome = await openStream(target, { deltas: 1, intervalMs: shape.intervalMs }, agent);
      if (outcome.complete && outcome.ttfbMs !== undefined) ttfbMs.push(outcome.ttfbMs);
      else failed++;
    }
  } finally {
    agent.destroy();
  }
  return { ttfbMs, failed };
}
