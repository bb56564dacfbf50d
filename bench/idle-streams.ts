/**
 * Memory under many idle streams: opens N streams through a proxy to the upstream's
 * idle-stream endpoint (headers and one event, then silence), waits until every one has its
 * first event, and reads the proxy's resident set size: 1 s later, and (with `settle`) again
 * 20 s later, after V8 has collected the garbage of opening them (its memory reducer runs once
 * a process goes quiet). Then closes them all.
 */
import { Agent, request, type ClientRequest } from 'node:http';
import { memoryOf } from './proc.js';
import { sleep } from './stats.js';

export interface IdleStreamsResult {
  requested: number;
  /** Streams that delivered their first event and were held open when RSS was read. */
  open: number;
  rssBeforeBytes: number | undefined;
  /** 1 s after the last stream opened. */
  rssWithStreamsBytes: number | undefined;
  /** The anonymous part of that RSS (without the node binary and native modules mapped from disk). */
  anonWithStreamsBytes: number | undefined;
  /** SETTLE_WAIT_MS later, the streams still open (V8 has collected by then); undefined when not asked for. */
  rssSettledBytes: number | undefined;
  /** When the settled value was read, ms after the 1-s reading. */
  settledAfterMs: number | undefined;
  rssAfterCloseBytes: number | undefined;
}

/** Opened in batches: one burst of 1,000 SYNs would overflow the listen backlog (511) and stall on SYN retries. */
const BATCH = 100;
const OPEN_TIMEOUT_MS = 30_000;
/** The upstream ends an idle stream by itself after this, should the bench fail to close it. */
const HOLD_MS = 120_000;
const SETTLE_MS = 1000;
/**
 * How long the streams are held before the settled reading: V8's memory reducer collects in steps some seconds
 * apart.
 */
const SETTLE_WAIT_MS = 20_000;

export async function measureIdleStreams(
  target: { url: string; pid: number; headers: Readonly<Record<string, string>> },
  count: number,
  options: { settle?: boolean } = {},
): Promise<IdleStreamsResult> {
  // No socket limit (the default Agent has none either, but be explicit), no keep-alive reuse.
  const agent = new Agent({ keepAlive: false, maxSockets: Infinity });
  const requests: ClientRequest[] = [];
  const rssBeforeBytes = (await memoryOf(target.pid))?.rssBytes;
  let open = 0;
  try {
    const deadline = Date.now() + OPEN_TIMEOUT_MS;
    for (let started = 0; started < count && Date.now() < deadline; started += BATCH) {
      const size = Math.min(BATCH, count - started);
      const opened = await Promise.all(
        Array.from({ length: size }, () => openIdleStream(target, agent, requests, deadline - Date.now())),
      );
      open += opened.filter(Boolean).length;
    }
    await sleep(SETTLE_MS);
    const withStreams = await memoryOf(target.pid);
    const settled = options.settle && withStreams ? await settledRss(target.pid) : undefined;
    closeAll(requests, agent);
    await sleep(SETTLE_MS);
    const rssAfterCloseBytes = (await memoryOf(target.pid))?.rssBytes;
    return {
      requested: count,
      open,
      rssBeforeBytes,
      rssWithStreamsBytes: withStreams?.rssBytes,
      anonWithStreamsBytes: withStreams?.anonBytes,
      rssSettledBytes: settled?.rssBytes,
      settledAfterMs: settled?.afterMs,
      rssAfterCloseBytes,
    };
  } finally {
    closeAll(requests, agent);
  }
}

/** RSS after SETTLE_WAIT_MS more with the streams open. */
async function settledRss(pid: number): Promise<{ rssBytes: number; afterMs: number } | undefined> {
  const startedAt = Date.now();
  await sleep(SETTLE_WAIT_MS);
  const rss = (await memoryOf(pid))?.rssBytes;
  return rss === undefined ? undefined : { rssBytes: rss, afterMs: Date.now() - startedAt };
}

function closeAll(requests: ClientRequest[], agent: Agent): void {
  for (const req of requests) req.destroy();
  requests.length = 0;
  agent.destroy();
}

/** Resolves true once the stream's first event arrived (the stream stays open), false on failure. */
function openIdleStream(
  target: { url: string; headers: Readonly<Record<string, string>> },
  agent: Agent,
  requests: ClientRequest[],
  timeoutMs: number,
): Promise<boolean> {
  return new Promise((resolve) => {
    let settled = false;
    const settle = (ok: boolean) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      resolve(ok);
    };
    const req = request(
      `${target.url}/v1/bench/idle-stream?hold_ms=${HOLD_MS}`,
      {
        method: 'POST',
        agent,
        headers: { ...target.headers, 'content-type': 'application/json', accept: 'text/event-stream' },
      },
      (res) => {
        if (res.statusCode !== 200) {
          res.resume();
          settle(false);
          return;
        }
        res.once('data', () => settle(true));
        res.on('error', () => settle(false));
        res.on('close', () => settle(false));
      },
    );
    requests.push(req);
    const timer = setTimeout(() => settle(false), Math.max(0, timeoutMs));
    req.on('error', () => settle(false));
    req.end(JSON.stringify({ model: 'bench-model', stream: true, messages: [{ role: 'user', content: 'Wait.' }] }));
  });
}
