/**
 * What one access-log line costs, as the gateway writes it (pino, an asynchronous destination, the
 * dashboard's log ring beside it): CPU time (all threads, so the thread pool's writes count),
 * bytes allocated and thread-pool writes, per line, for the settings in `src/logger.ts` (lines as
 * bytes, 8 KiB gathered) and for sonic-boom's string mode with 1 KiB writes, written to /dev/null.
 * A turn of the event loop every 2 lines, as a busy gateway logs, lets writes finish while lines keep coming.
 * Run: `npm run build && node dist/bench/micro/access-line-cost.js` (bounded: 50,000 lines each).
 */
import { openSync } from 'node:fs';
import { Session } from 'node:inspector/promises';
import pino from 'pino';
import { createLogger, STDOUT_WRITES, stdoutLines, type ByteDestination } from '../../src/logger.js';
import { LineBuffer } from '../../src/logging/line-buffer.js';

const WARMUP_LINES = 10_000;
const MEASURED_LINES = 50_000;
const LINES_PER_TURN = 2;

interface SampleNode {
  selfSize: number;
  children: SampleNode[];
}

interface Variant {
  /** The sonic-boom under test, and what pino writes its lines to. */
  open(fd: number): { boom: ReturnType<typeof pino.destination>; stream: pino.DestinationStream };
}

const variants: Record<string, Variant> = {
  'as configured (bytes)': {
    open(fd) {
      const boom = pino.destination({ ...STDOUT_WRITES, dest: fd });
      return { boom, stream: stdoutLines(boom as unknown as ByteDestination) };
    },
  },
  'strings, 1 KiB writes': {
    open(fd) {
      const boom = pino.destination({ dest: fd, sync: false, minLength: 512, maxWrite: 1024 });
      return { boom, stream: boom };
    },
  },
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

interface Cost {
  cpuUs: number;
  bytes: number;
  writes: number;
}

async function measure(variant: Variant, sample: boolean): Promise<Cost> {
  const { boom, stream } = variant.open(openSync('/dev/null', 'w'));
  const logger = createLogger('info', stream, new LineBuffer());
  const session = new Session();
  session.connect();
  let writes = 0;
  try {
    for (let i = 0; i < WARMUP_LINES; i++) logger.info(line(i), 'request');
    if (sample)
      await session.post('HeapProfiler.startSampling', {
        samplingInterval: 256,
        includeObjectsCollectedByMajorGC: true,
        includeObjectsCollectedByMinorGC: true,
      });
    boom.on('write', () => writes++);
    const cpu = process.cpuUsage();
    for (let i = 0; i < MEASURED_LINES; i++) {
      logger.info(line(i), 'request');
      if (i % LINES_PER_TURN === 0) await new Promise((resolve) => setImmediate(resolve));
    }
    const used = process.cpuUsage(cpu);
    let bytes = 0;
    if (sample) {
      const { profile } = (await session.post('HeapProfiler.stopSampling')) as { profile: { head: SampleNode } };
      const walk = (node: SampleNode): void => {
        bytes += node.selfSize;
        node.children.forEach(walk);
      };
      walk(profile.head);
    }
    return {
      cpuUs: (used.user + used.system) / MEASURED_LINES,
      bytes: bytes / MEASURED_LINES,
      writes: (writes * 1000) / MEASURED_LINES,
    };
  } finally {
    session.disconnect();
    (stream as { stop?: () => void }).stop?.();
    // Lets the running write finish; the destination then closes the file.
    await new Promise<void>((resolve) => {
      boom.once('close', () => resolve());
      boom.end();
    });
  }
}

for (const [name, variant] of Object.entries(variants)) {
  const { cpuUs, writes } = await measure(variant, false);
  const { bytes } = await measure(variant, true);
  const cpu = `${cpuUs.toFixed(2).padStart(6)} µs CPU`;
  const allocated = `${bytes.toFixed(0).padStart(6)} bytes allocated`;
  console.log(`${name.padEnd(24)} ${cpu}  ${allocated}  ${writes.toFixed(0).padStart(4)} writes per 1,000 lines`);
}
