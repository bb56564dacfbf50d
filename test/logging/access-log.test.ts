/**
 * The access log: one pino line per call with the given fields only, at info, reaching stdout
 * and the dashboard's ring, every string escaped as JSON.stringify would.
 */
import { describe, expect, it } from 'vitest';
import { createLogger } from '../../src/logger.js';
import { createAccessLog } from '../../src/logging/access-log.js';
import { LineBuffer } from '../../src/logging/line-buffer.js';

function capture(level = 'info') {
  const lines: string[] = [];
  const tee = new LineBuffer({ lines: 100 });
  const logger = createLogger(level, { write: (line: string) => void lines.push(line) }, tee);
  return { logger, lines, tee, parsed: () => lines.map((line) => JSON.parse(line) as Record<string, unknown>) };
}

describe('access log', () => {
  it('writes one JSON line per call with the fields given, at info, like the logger’s own lines', () => {
    const { logger, lines, parsed } = capture();
    const access = createAccessLog(logger);
    logger.info({ other: 1 }, 'hello');
    const before = Date.now();
    access({
      req_id: 'r-1',
      method: 'POST',
      path: '/v1/chat/completions',
      status: 200,
      model: 'qwen',
      key: 'laptop',
      ms: 1.25,
      bytes_in: 120,
      bytes_out: 900,
      stream: true,
    });
    const after = Date.now();
    expect(lines).toHaveLength(2);
    expect(lines[1]!.endsWith('}\n')).toBe(true);
    const [pinoLine, line] = parsed();
    expect(Object.keys(line!).slice(0, 2)).toEqual(Object.keys(pinoLine!).slice(0, 2)); // level, time first
    expect(line).toMatchObject({
      level: 30,
      req_id: 'r-1',
      method: 'POST',
      path: '/v1/chat/completions',
      status: 200,
      model: 'qwen',
      key: 'laptop',
      ms: 1.25,
      bytes_in: 120,
      bytes_out: 900,
      stream: true,
      msg: 'request',
    });
    // Stamped when written: between the moments just before and just after the call.
    expect(line!.time).toBeGreaterThanOrEqual(before);
    expect(line!.time).toBeLessThanOrEqual(after);
  });

  it('leaves out the fields a call does not have', () => {
    const { logger, parsed } = capture();
    createAccessLog(logger)({ req_id: 'r-2', method: 'GET', path: '/healthz', status: 200, ms: 0.1 });
    expect(Object.keys(parsed()[0]!).sort()).toEqual([
      'level',
      'method',
      'ms',
      'msg',
      'path',
      'req_id',
      'status',
      'time',
    ]);
  });

  it('escapes quotes, backslashes, control characters and lone surrogates in any string field', () => {
    const { logger, parsed } = capture();
    const nasty = [
      'a"b',
      'back\\slash',
      'tab\there',
      'nl\nline',
      '\u0000\u001f',
      'emoji 🚀',
      'lone \ud800 surrogate',
      'ünïcödé',
      '',
    ];
    for (const value of nasty)
      createAccessLog(logger)({
        req_id: 'r',
        method: 'POST',
        path: `/v1/${value}`,
        status: 400,
        model: value,
        key: value,
        ms: 1,
        error: value,
      });
    const lines = parsed();
    nasty.forEach((value, i) => {
      // JSON.parse of the line gives back what JSON.stringify would have written.
      const expected = JSON.parse(JSON.stringify(value)) as string;
      expect(lines[i]).toMatchObject({ path: `/v1/${expected}`, model: expected, key: expected, error: expected });
    });
  });

  it('writes nothing while the logger’s level is above info, and follows a level change', () => {
    const { logger, lines } = capture('warn');
    const access = createAccessLog(logger);
    access({ req_id: 'r', method: 'GET', path: '/', status: 200, ms: 1 });
    expect(lines).toHaveLength(0);
    logger.level = 'info';
    access({ req_id: 'r', method: 'GET', path: '/', status: 200, ms: 1 });
    expect(lines).toHaveLength(1);
  });

  it('reaches the dashboard’s log ring as well as stdout', () => {
    const { logger, tee } = capture();
    createAccessLog(logger)({ req_id: 'r-3', method: 'POST', path: '/v1/embeddings', status: 200, ms: 2 });
    expect(tee.history()).toHaveLength(1);
    expect(JSON.parse(tee.history()[0]!)).toMatchObject({ req_id: 'r-3', msg: 'request' });
  });
});
