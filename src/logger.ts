import pino, { type Logger } from 'pino';

/** Log bytes allowed to wait while stdout does not take them (a stalled pipe); later lines are dropped. */
const MAX_WAITING_BYTES = 8 * 1024 * 1024;
/** Lines are gathered up to this many bytes before a write, so a busy gateway writes once per several calls. */
const GATHER_BYTES = 512;
/**
 * One write takes at most this much. sonic-boom measures the text waiting for the next write at
 * every line, which copies it whole: a small cap keeps that copy small while a write is running.
 */
const WRITE_BYTES = 1024;
/** ...and written at least this often, so a quiet gateway's lines still show up at once to a human. */
const FLUSH_EVERY_MS = 100;

/** How stdout is written (pino.destination's options, without `dest`). */
export const STDOUT_WRITES = {
  sync: false,
  minLength: GATHER_BYTES,
  maxWrite: WRITE_BYTES,
  periodicFlush: FLUSH_EVERY_MS,
  maxLength: MAX_WAITING_BYTES,
} as const;

/**
 * The process logger. Access-log lines name their fields explicitly and never include
 * headers; the redact list is a second fence for anything logged by accident.
 *
 * stdout is pino's asynchronous destination: lines are gathered and written together (every
 * 512 bytes or 100 ms), which spares the thread-pool hand-off a write per line costs; pino writes
 * what still waits synchronously at process exit.
 * `tee` (the dashboard's log ring) gets every line stdout gets.
 */
export function createLogger(
  level: string,
  destination?: pino.DestinationStream,
  tee?: pino.DestinationStream,
): Logger {
  const out = destination ?? pino.destination({ dest: 1, ...STDOUT_WRITES });
  const streams = tee
    ? pino.multistream([
        { level: 'trace', stream: out },
        { level: 'trace', stream: tee },
      ])
    : out;
  return pino(
    {
      level,
      base: undefined,
      redact: {
        paths: [
          'req.headers.authorization',
          'req.headers["x-api-key"]',
          'req.headers["api-key"]',
          'req.headers.cookie',
          'headers.authorization',
          'headers["x-api-key"]',
          'headers["api-key"]',
          'headers.cookie',
          'password',
          'secret',
          'token',
          'apiKey',
        ],
        censor: '[REDACTED]',
      },
    },
    streams,
  );
}
