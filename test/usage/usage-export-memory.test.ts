/**
 * A 100k-call export through HTTP from a real SQLite file, read by a slow client: the server
 * reads the store only as fast as the client takes bytes, and its memory stays bounded. An
 * export that loaded the log (or built the file) first fails both checks.
 */
import { request } from 'node:http';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { SQLITE_FILE_NAME } from '../../src/store/sqlite.js';
import type { UsageListQuery } from '../../src/store/store.js';
import type { UsageListRow } from '../../src/store/records.js';
import { REQUEST_COLUMNS, requestValues } from '../../src/store/usage-rows.js';
import { DEMO_CONFIG, startSimulator, type Simulator } from '../fakes/llama-swap/index.js';
import type { TestGateway } from '../helpers/gateway.js';
import { usageRecord } from '../store/usage-contract.js';
import { startUsageGateway } from './usage-helpers.js';

const CALLS = 100_000;
/** Long enough that the whole log (~55 MiB of CSV) dwarfs what loopback sockets can buffer. */
const MODEL_PADDING = 'x'.repeat(360);
const T0 = Date.UTC(2030, 0, 1);
const ADMIN_TOKEN = 'usage-tests-admin-token';
const MIB = 1024 * 1024;

setFlagsFromString('--expose-gc');
const gc = runInNewContext('gc') as () => void;

/** What the process holds after a full collection: JS heap plus Buffers (sockets' queues). */
function retainedBytes(): number {
  gc();
  const { heapUsed, arrayBuffers } = process.memoryUsage();
  return heapUsed + arrayBuffers;
}

let sim: Simulator;
let gateway: TestGateway;

beforeAll(async () => {
  sim = await startSimulator({ config: DEMO_CONFIG });
  gateway = await startUsageGateway(sim.url, {}, { now: () => T0 + CALLS * 1000 });
  // Written straight into the gateway's SQLite file, in one transaction: seconds, not minutes.
  const db = new Database(join(gateway.dataDir, SQLITE_FILE_NAME));
  const columns = REQUEST_COLUMNS.map((c) => c.name);
  const insert = db.prepare(
    `insert into usage_requests (${columns.join(', ')}) values (${columns.map(() => '?').join(', ')})`,
  );
  db.transaction(() => {
    for (let i = 0; i < CALLS; i++) {
      const record = usageRecord({
        at: T0 + i * 1000,
        keyName: `key ${i % 7}`,
        model: `model-${i % 5}-${MODEL_PADDING}`,
      });
      insert.run(requestValues(record));
    }
  })();
  db.close();
}, 120_000);

afterAll(async () => {
  await gateway?.close();
  await sim?.close();
});

it('streams 100k calls to a slow reader page by page, never far ahead of it, in bounded memory', async () => {
  // Every store page the export reads, and where the reader was when it had been read.
  const usage = gateway.store!.usage;
  const list = usage.list.bind(usage);
  let rowsRead = 0;
  let recordsReceived = 0;
  let pages = 0;
  let mostAhead = 0;
  let baseline = 0;
  let mostRetained = 0;
  usage.list = async (query: UsageListQuery): Promise<UsageListRow[]> => {
    const page = await list(query);
    pages++;
    rowsRead += page.length;
    mostAhead = Math.max(mostAhead, rowsRead - recordsReceived);
    // Sampled after the first page and every tenth: a loader holding the whole log is caught either way.
    if (pages % 10 === 1) mostRetained = Math.max(mostRetained, retainedBytes() - baseline);
    return page;
  };

  baseline = retainedBytes();
  const { chunks, lastLine } = await new Promise<{ chunks: number; lastLine: string }>((resolve, reject) => {
    const url = new URL('/api/usage/export?format=csv&group=call', gateway.url);
    const req = request(url, { headers: { authorization: `Bearer ${ADMIN_TOKEN}` }, agent: false }, (res) => {
      expect(res.statusCode).toBe(200);
      let chunks = 0;
      let tail = '';
      res.on('data', (chunk: Buffer) => {
        chunks++;
        const text = tail + chunk.toString('latin1');
        const lines = text.split('\r\n');
        tail = lines.pop()!;
        recordsReceived += lines.length;
        // A slow reader: nothing more is taken until the server has had its turns.
        res.pause();
        setImmediate(() => setImmediate(() => res.resume()));
      });
      res.on('end', () => resolve({ chunks, lastLine: tail }));
      res.on('error', reject);
    });
    req.on('error', reject);
    req.end();
  });

  usage.list = list;
  // The header line plus one line per call, each ended by CRLF.
  expect(recordsReceived).toBe(CALLS + 1);
  expect(lastLine).toBe('');
  // Never more read from the store than socket buffers and one page can hold, far below the
  // whole log (an export that reads everything first is CALLS ahead when its reading ends).
  expect(mostAhead).toBeLessThan(CALLS / 4);
  // What the export holds at any time is a page and the streams' buffers: a few MiB, where the
  // whole log as rows or text is tens.
  expect(mostRetained).toBeLessThan(16 * MIB);
  expect(pages).toBeGreaterThanOrEqual(CALLS / 1000);
  // Many chunks, each gathering many rows.
  expect(chunks).toBeGreaterThan(100);
  expect(chunks).toBeLessThan(CALLS / 10);
}, 120_000);

it('stops reading the store when the client leaves mid-export', async () => {
  const usage = gateway.store!.usage;
  const list = usage.list.bind(usage);
  let pages = 0;
  usage.list = (query: UsageListQuery) => {
    pages++;
    return list(query);
  };
  try {
    await new Promise<void>((resolve, reject) => {
      const url = new URL('/api/usage/export?format=json', gateway.url);
      const req = request(url, { headers: { authorization: `Bearer ${ADMIN_TOKEN}` }, agent: false }, (res) => {
        res.once('data', () => {
          req.destroy();
          resolve();
        });
      });
      req.on('error', (error) => {
        if (!req.destroyed) reject(error);
      });
      req.end();
    });
    // The server has seen the connection close once no request is left in flight.
    while (gateway.app.inFlight() > 0) await new Promise((r) => setImmediate(r));
    const atClose = pages;
    // A full round trip later, nothing has read on in the background.
    expect((await fetch(`${gateway.url}/healthz`)).status).toBe(200);
    expect(pages).toBe(atClose);
    expect(atClose).toBeLessThan(CALLS / 1000 / 2);
  } finally {
    usage.list = list;
  }
});
