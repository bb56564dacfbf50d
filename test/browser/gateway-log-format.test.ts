/** Gatehouse's pino lines on the Logs page: readable text, colours only where something failed. */
import { describe, expect, it } from 'vitest';
import { AnsiParser } from '../../web/src/lib/ansi.js';
import { formatGatewayLine } from '../../web/src/lib/gateway-log.js';
import { LogBuffer } from '../../web/src/lib/log-buffer.js';

const AT = Date.UTC(2031, 0, 1, 14, 3, 7, 42);
const utc = { timeZone: 'UTC' };
/** The text the view shows, colour codes removed by the view's own parser. */
const plain = (text: string) =>
  new AnsiParser()
    .parseLine(text)
    .map((segment) => segment.text)
    .join('');
const line = (fields: Record<string, unknown>) => JSON.stringify({ level: 30, time: AT, ...fields });

describe('formatting Gatehouse’s log lines', () => {
  it('shows an access line as time, status, method, path, duration, key and model', () => {
    const text = formatGatewayLine(
      line({
        req_id: 'r-1',
        method: 'POST',
        path: '/v1/chat/completions',
        status: 200,
        model: 'qwen',
        key: 'laptop',
        ms: 812.37,
        bytes_in: 120,
        bytes_out: 2048,
        stream: true,
        msg: 'request',
      }),
      utc,
    );
    expect(plain(text)).toBe(
      '14:03:07.042 200 POST /v1/chat/completions 812 ms key=laptop model=qwen bytes_in=120 bytes_out=2048 stream=true',
    );
  });

  it('shows an admin call without key or model, and a short one with a decimal', () => {
    const text = formatGatewayLine(
      line({ req_id: 'req-9', method: 'DELETE', path: '/api/keys/k1', status: 200, ms: 3.456, msg: 'request' }),
      utc,
    );
    expect(plain(text)).toBe('14:03:07.042 200 DELETE /api/keys/k1 3.5 ms');
  });

  it('colours failed calls: 4xx yellow, 5xx red, with the error class after', () => {
    const refused = formatGatewayLine(
      line({ method: 'GET', path: '/v1/models', status: 401, ms: 1, msg: 'request' }),
      utc,
    );
    expect(refused).toContain('\x1b[33m401\x1b[0m GET /v1/models');
    const failed = formatGatewayLine(
      line({
        method: 'POST',
        path: '/v1/completions',
        status: 504,
        ms: 30_000,
        error: 'upstream_timeout',
        msg: 'request',
      }),
      utc,
    );
    expect(failed).toContain('\x1b[31m504\x1b[0m');
    expect(plain(failed)).toBe('14:03:07.042 504 POST /v1/completions 30.0 s error=upstream_timeout');
  });

  it('shows other lines as time, level and message, then their fields', () => {
    expect(plain(formatGatewayLine(line({ auth: 'open', msg: 'API is OPEN: no API keys exist.' }), utc))).toBe(
      '14:03:07.042 INFO API is OPEN: no API keys exist. auth=open',
    );
    const warning = formatGatewayLine(line({ level: 40, host: '0.0.0.0', msg: 'listening widely' }), utc);
    expect(warning).toContain('\x1b[33mWARN\x1b[0m');
    const error = formatGatewayLine(
      line({
        level: 50,
        err: { type: 'Error', message: 'disk full', stack: 'Error: disk full\n at x' },
        msg: 'flush failed',
      }),
      utc,
    );
    expect(plain(error)).toBe('14:03:07.042 ERROR flush failed err="disk full"');
  });

  it('passes anything that is not a pino line through unchanged', () => {
    for (const text of [
      'llama-swap listening on :8080',
      '',
      '{"not":"pino"}',
      '{"level":30,"msg":"no time"}',
      '[1,2,3]',
      '{broken json',
      '{"level":"info","time":1,"msg":"level is a word"}',
    ])
      expect(formatGatewayLine(text, utc)).toBe(text);
  });

  it('formats each complete line as the log buffer takes it, and filters on the readable text', () => {
    const buffer = new LogBuffer(100, (l) => formatGatewayLine(l, utc));
    const access = line({ method: 'GET', path: '/v1/models', status: 200, ms: 2, key: 'ci', msg: 'request' });
    buffer.append(`${access.slice(0, 20)}`);
    buffer.append(`${access.slice(20)}\nplain text\n`);
    expect(buffer.snapshot().map((l) => l.text)).toEqual([
      '14:03:07.042 200 GET /v1/models 2.0 ms key=ci',
      'plain text',
    ]);
  });
});
