import pino, { type Logger } from 'pino';

/** Log bytes allowed to wait while stdout does not take them (a stalled pipe); later lines are dropped. */
const MAX_WAITING_BYTES = 8 * 1024 * 1024;

/**
 * The process logger. Access-log lines name their fields explicitly and never include
 * headers; the redact list is a second fence for anything logged by accident.
 *
 * stdout is pino's asynchronous destination: lines that arrive while a write is in flight go
 * out together in the next one, and pino writes what still waits synchronously at process exit.
 * `tee` (the dashboard's log ring) gets every line stdout gets.
 */
export function createLogger(
  level: string,
  destination?: pino.DestinationStream,
  tee?: pino.DestinationStream,
): Logger {
  const out = destination ?? pino.destination({ dest: 1, sync: false, maxLength: MAX_WAITING_BYTES });
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
