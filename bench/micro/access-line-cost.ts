/**
 * What one access-log line costs the event loop, as the gateway writes it (pino, an asynchronous
 * destination, the dashboard's log ring beside it): CPU time and bytes allocated per line, for
 * the settings in `src/logger.ts` and for the same without the write cap (`maxWrite`), written to
 * /dev/null. A turn of the event loop every 20 lines lets writes finish while lines keep coming.
 * Run: `npm run build && node dist/bench/micro/access-line-cost.js` (bounded: 50,000 lines each).
 */
import { openSync } from 'node:fs';
import { Session } from 'node:inspector/promises';
import pino from 'pino';
import { createLogger, STDOUT_WRITES } from '../../src/logger.js';
import { LineBuffer } from '../../src/logging/line-buffer.js';

const WARMUP_LINES = 10_000;
const MEASURED_LINES = 50_000;
const LINES_PER_TURN = 20;

interface SampleNode {
  selfSize: number;
  children: SampleNode[];
}

interface WriteOptions {
  sync: boolean;
  minLength: number;
  maxWrite: number | undefined;
  maxLength: number;
}

const variants: Record<string, WriteOptions> = {
  'as configured': STDOUT_WRITES,
  'without the write cap': { ...STDOUT_WRITES, minLength: 2048, maxWrite: undefined },
};

const line = (i: number) => ({
  req_id: `c0a8f5e2-1f6b-4b1f-9a3c-${String(i).padStart(12, '0')}`,
  method: 'POST',
  path: '/v1/chat/completions',
  status: 200,
  model: 'bench-model',
  key: 'bench',
  ms: 1.23,
  bytes_in: 80,
  bytes_out: 312,
});

async function measure(options: WriteOptions, sample: boolean): Promise<number> {
  const fd = openSync('/dev/null', 'w');
  const destination = pino.destination({ ...options, dest: fd });
  const logger = createLogger('info', destination, new LineBuffer());
  const session = new Session();
  session.connect();
  try {
    for (let i = 0; i < WARMUP_LINES; i++) logger.info(line(i), 'request');
    if (sample)
      await session.post('HeapProfiler.startSampling', {
        samplingInterval: 256,
        includeObjectsCollectedByMajorGC: true,
        includeObjectsCollectedByMinorGC: true,
      });
    const cpu = process.cpuUsage();
    for (let i = 0; i < MEASURED_LINES; i++) {
      logger.info(line(i), 'request');
      if (i % LINES_PER_TURN === 0) await new Promise((resolve) => setImmediate(resolve));
    }
    const used = process.cpuUsage(cpu);
    if (!sample) return (used.user + used.system) / MEASURED_LINES;
    const { profile } = (await session.post('HeapProfiler.stopSampling')) as { profile: { head: SampleNode } };
    let bytes = 0;
    const walk = (node: SampleNode): void => {
      bytes += node.selfSize;
      node.children.forEach(walk);
    };
    walk(profile.head);
    return bytes / MEASURED_LINES;
  } finally {
    session.disconnect();
    // Lets the running write finish; the destination then closes the file.
    await new Promise<void>((resolve) => {
      destination.once('close', () => resolve());
      destination.end();
    });
  }
}

for (const [name, options] of Object.entries(variants)) {
  const cpuUs = await measure(options, false);
  const bytes = await measure(options, true);
  const cpu = `${cpuUs.toFixed(2).padStart(6)} µs CPU`;
  console.log(`${name.padEnd(24)} ${cpu}  ${bytes.toFixed(0).padStart(6)} bytes allocated per line`);
}
