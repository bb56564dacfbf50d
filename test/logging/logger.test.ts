/**
 * The process logger: every line it emits, whatever its level, reaches both its destination
 * and the dashboard's log ring; secrets logged by accident are redacted in both. stdout is
 * flushed while lines arrive, and left alone on an idle gateway.
 */
import { once } from 'node:events';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pino from 'pino';
import { describe, expect, it, vi } from 'vitest';
import { createLogger, stdoutLines, STDOUT_WRITES, type ByteDestination } from '../../src/logger.js';
import { LineBuffer } from '../../src/logging/line-buffer.js';

describe('process logger', () => {
  it('sends debug and error lines alike to stdout and to the dashboard’s ring, in order', () => {
    const lines: string[] = [];
    const tee = new LineBuffer({ lines: 10 });
    const logger = createLogger('debug', { write: (line: string) => void lines.push(line) }, tee);
    logger.trace('below the level');
    logger.debug({ step: 1 }, 'debugging');
    logger.error({ step: 2 }, 'failed');
    const parsed = lines.map((line) => JSON.parse(line) as Record<string, unknown>);
    expect(parsed.map(({ level, msg, step }) => ({ level, msg, step }))).toEqual([
      { level: 20, msg: 'debugging', step: 1 },
      { level: 50, msg: 'failed', step: 2 },
    ]);
    expect(tee.history()).toEqual(lines.map((line) => line.trimEnd()));
  });

  it('redacts credentials and their headers in every destination', () => {
    const lines: string[] = [];
    const tee = new LineBuffer({ lines: 10 });
    const logger = createLogger('info', { write: (line: string) => void lines.push(line) }, tee);
    logger.info(
      { headers: { authorization: 'Bearer sk-secret', 'x-api-key': 'sk-secret' }, password: 'hunter2' },
      'oops',
    );
    for (const line of [...lines, ...tee.history()]) {
      expect(line).not.toContain('sk-secret');
      expect(line).not.toContain('hunter2');
      expect(line).toContain('[REDACTED]');
    }
  });
});

describe('stdout flushing', () => {
  /** A destination that records what the timer asks of it. */
  function recordingDestination() {
    const events: string[] = [];
    return {
      events,
      write: (bytes: Buffer) => (events.push(`write ${bytes.toString()}`), true),
      flush: () => void events.push('flush'),
    };
  }

  it('flushes while lines arrive and stops once the gateway has been quiet for a while', () => {
    vi.useFakeTimers();
    try {
      const destination = recordingDestination();
      const stdout = stdoutLines(destination, 100);
      vi.advanceTimersByTime(5000);
      expect(destination.events).toEqual([]);
      stdout.write('a');
      vi.advanceTimersByTime(100);
      stdout.write('b');
      vi.advanceTimersByTime(100);
      expect(destination.events).toEqual(['write a', 'flush', 'write b', 'flush']);
      vi.advanceTimersByTime(60_000);
      const flushes = destination.events.filter((event) => event === 'flush').length;
      // After the last line: a bounded number of flushes (one may meet a running write), then none.
      expect(flushes).toBe(11);
      stdout.stop();
    } finally {
      vi.useRealTimers();
    }
  });

  it('stops its timer when the destination is gone', () => {
    vi.useFakeTimers();
    try {
      let flushes = 0;
      const stdout = stdoutLines(
        {
          write: () => true,
          flush: () => {
            flushes++;
            throw new Error('SonicBoom destroyed');
          },
        },
        100,
      );
      stdout.write('a');
      vi.advanceTimersByTime(1000);
      stdout.write('b');
      vi.advanceTimersByTime(1000);
      expect(flushes).toBe(1);
    } finally {
      vi.useRealTimers();
    }
  });
});

describe('stdout on a quiet gateway', () => {
  it('writes a lone short line within one flush interval', async () => {
    vi.useFakeTimers({ toFake: ['setInterval', 'clearInterval'] });
    const dir = mkdtempSync(join(tmpdir(), 'gatehouse-log-'));
    const file = join(dir, 'out.log');
    try {
      const destination = pino.destination({ dest: file, ...STDOUT_WRITES });
      await once(destination, 'ready');
      const logger = createLogger('info', stdoutLines(destination as unknown as ByteDestination, 100));
      logger.info('a lone line, ünïcode ✓');
      expect(readFileSync(file, 'utf8')).toBe('');
      vi.advanceTimersByTime(100);
      await vi.waitFor(() => expect(readFileSync(file, 'utf8')).toContain('"msg":"a lone line, ünïcode ✓"'), {
        timeout: 25_000,
      });
      destination.end();
    } finally {
      vi.useRealTimers();
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
