/**
 * The process logger: every line it emits, whatever its level, reaches both its destination
 * and the dashboard's log ring; secrets logged by accident are redacted in both.
 */
import { describe, expect, it } from 'vitest';
import { createLogger } from '../../src/logger.js';
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
