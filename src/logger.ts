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
/** ...and written at least this often while lines arrive, so a quiet gateway's lines still show up at once. */
const FLUSH_EVERY_MS = 100;
/** Flushes after the last line: a flush while a write runs leaves the rest waiting for the next one. */
const FLUSHES_AFTER_LAST_LINE = 10;

/** How stdout is written (pino.destination's options, without `dest`). */
export const STDOUT_WRITES = {
  sync: false,
  minLength: GATHER_BYTES,
  maxWrite: WRITE_BYTES,
  maxLength: MAX_WAITING_BYTES,
} as const;

/** What the flush timer uses of a destination (sonic-boom, as pino.destination makes it). */
export interface FlushableDestination {
  write(line: string): boolean;
  flush(done?: (error?: Error) => void): void;
}

/**
 * Flushes `destination` every `everyMs` while lines arrive, and stops soon after the last one.
 * sonic-boom's own `periodicFlush` writes an empty string when nothing waits, which wakes an
 * idle gateway ten times a second through the thread pool.
 */
export function flushWhileWriting(
  destination: FlushableDestination,
  everyMs = FLUSH_EVERY_MS,
): FlushableDestination & { stop(): void } {
  let flushesLeft = 0;
  const timer = setInterval(() => {
    if (flushesLeft === 0) return;
    flushesLeft--;
    try {
      destination.flush();
    } catch {
      // Destroyed at process exit, after pino wrote what waited.
      clearInterval(timer);
    }
  }, everyMs);
  timer.unref();
  return {
    write(line) {
      flushesLeft = FLUSHES_AFTER_LAST_LINE;
      return destination.write(line);
    },
    flush: (done) => destination.flush(done),
    stop: () => clearInterval(timer),
  };
}

/**
 * The process logger. Access-log lines name their fields explicitly and never include
 * headers; the redact list is a second fence for anything logged by accident.
 *
 * stdout is pino's asynchronous destination: lines are gathered and written together (every
 * 512 bytes, or 100 ms while lines arrive), which spares the thread-pool hand-off a write per line
 * costs; pino writes what still waits synchronously at process exit.
 * `tee` (the dashboard's log ring) gets every line stdout gets.
 */
export function createLogger(
  level: string,
  destination?: pino.DestinationStream,
  tee?: pino.DestinationStream,
): Logger {
  const out = destination ?? flushWhileWriting(pino.destination({ dest: 1, ...STDOUT_WRITES }));
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
