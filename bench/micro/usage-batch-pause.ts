/**
 * What the SQLite usage write thread buys: how long the event loop stops for each batch of
 * usage records, written on the loop's own connection versus handed to the write thread.
 * Run: `npm run build && node dist/bench/micro/usage-batch-pause.js` (bounded: 50 batches each).
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { monitorEventLoopDelay, performance } from 'node:perf_hooks';
import BetterSqlite3 from 'better-sqlite3';
import { openSqliteStore, sqliteFileIn } from '../../src/store/sqlite.js';
import { sqliteUsageBatchWriter } from '../../src/store/sqlite-usage-batch.js';
import type { UsageRecord } from '../../src/store/store.js';
import { newUsageId } from '../../src/store/usage-id.js';

const BATCHES = 50;
const BATCH_SIZE = 200;

function record(at: number, n: number): UsageRecord {
  return {
    id: newUsageId(at),
    at,
    requestId: `req-${n}`,
    keyId: 'key_micro',
    keyName: 'micro',
    model: n % 2 ? 'qwen' : 'llama',
    method: 'POST',
    endpoint: '/v1/chat/completions',
    status: 200,
    streamed: false,
    inputTokens: 20,
    outputTokens: 8,
    cachedTokens: null,
    tokensSource: 'usage',
    ttfbMs: 0.8,
    ttftMs: null,
    durationMs: 1.2,
    bytesIn: 150,
    bytesOut: 600,
    clientAborted: false,
    errorClass: null,
    queueMs: null,
    gpuMs: null,
    requestBody: null,
    responseBody: null,
  };
}

async function measure(label: string, append: (records: UsageRecord[]) => Promise<void>): Promise<void> {
  const delay = monitorEventLoopDelay({ resolution: 1 });
  let onLoop = 0;
  delay.enable();
  for (let b = 0; b < BATCHES; b++) {
    const records = Array.from({ length: BATCH_SIZE }, (_, i) => record(Date.now(), b * BATCH_SIZE + i));
    const start = performance.now();
    const written = append(records);
    onLoop += performance.now() - start;
    await written;
    await new Promise((resolve) => setImmediate(resolve));
  }
  delay.disable();
  const perBatch = onLoop / BATCHES;
  const perRecordUs = (perBatch * 1000) / BATCH_SIZE;
  const columns = [
    label.padEnd(28),
    `${perBatch.toFixed(3).padStart(8)} ms`,
    `${perRecordUs.toFixed(2).padStart(7)} µs`,
    `${(delay.max / 1e6).toFixed(2).padStart(8)} ms`,
  ];
  console.log(columns.join('  '));
}

const dir = mkdtempSync(join(tmpdir(), 'gatehouse-micro-'));
try {
  const store = await openSqliteStore({ dataDir: dir });
  const raw = new BetterSqlite3(sqliteFileIn(dir));
  raw.pragma('busy_timeout = 5000');
  const inline = sqliteUsageBatchWriter(raw);
  console.log(`${BATCHES} batches of ${BATCH_SIZE} usage records on SQLite`);
  console.log(
    `${'written'.padEnd(28)} ${'loop/batch'.padStart(11)}  ${'µs/record'.padStart(9)}  ${'max pause'.padStart(9)}`,
  );
  // Warm both paths (statement preparation, JIT, the thread's start) before measuring.
  inline([record(Date.now(), -1)]);
  await store.usage.append([record(Date.now(), -2)]);
  await measure('on the event loop', (records) => {
    inline(records);
    return Promise.resolve();
  });
  await measure('by the write thread', (records) => store.usage.append(records));
  raw.close();
  await store.close();
} finally {
  rmSync(dir, { recursive: true, force: true });
}
