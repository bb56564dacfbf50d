import pino, { type Logger } from 'pino';

/** Log bytes allowed to wait while stdout does not take them (a stalled pipe); later lines are dropped. */
const MAX_WAITING_BYTES = 8 * 1024 * 1024;
/** Lines are gathered up to this many bytes before a write, so a busy gateway writes once per many calls. */
const GATHER_BYTES = 8 * 1024;
/** One write takes at most this much. */
const WRITE_BYTES = 16 * 1024;
/** ...and written at least this often while lines arrive, so a quiet gateway's lines still show up at once. */
const FLUSH_EVERY_MS = 100;
/** Flushes after the last line: a flush while a write runs leaves the rest waiting for the next one. */
const FLUSHES_AFTER_LAST_LINE = 10;

/**
 * How stdout is written (pino.destination's options, without `dest`): asynchronously, lines
 * kept as bytes (sonic-boom's buffer mode, fed by `stdoutLines`). In its default string mode
 * sonic-boom measures the text waiting for the next write at every line, which copies it whole.
 */
export const STDOUT_WRITES = {
  sync: false,
  contentMode: 'buffer',
  minLength: GATHER_BYTES,
  maxWrite: WRITE_BYTES,
  maxLength: MAX_WAITING_BYTES,
} as const;

/** What `stdoutLines` uses of a destination in buffer mode (sonic-boom, as pino.destination makes it). */
export interface ByteDestination {
  write(bytes: Buffer): boolean;
  flush(done?: (error?: Error) => void): void;
}

/**
 * pino's lines into `destination` as bytes, flushed every `everyMs` while lines arrive and no
 * more soon after the last one (sonic-boom's own `periodicFlush` writes even when nothing
 * waits, which wakes an idle gateway ten times a second through the thread pool).
 */
export function stdoutLines(
  destination: ByteDestination,
  everyMs = FLUSH_EVERY_MS,
): pino.DestinationStream & { flush(done?: (error?: Error) => void): void; stop(): void } {
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
    write(line: string) {
      flushesLeft = FLUSHES_AFTER_LAST_LINE;
      return destination.write(Buffer.from(line));
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
 * 8 KiB, or 100 ms while lines arrive), which spares the thread-pool hand-off a write per line
 * costs; pino writes what still waits synchronously at process exit.
 * `tee` (the dashboard's log ring) gets every line stdout gets.
 */
export function createLogger(
  level: string,
  destination?: pino.DestinationStream,
  tee?: pino.DestinationStream,
): Logger {
  // In buffer mode sonic-boom's write takes bytes; its type declares strings only.
  const out = destination ?? stdoutLines(pino.destination({ dest: 1, ...STDOUT_WRITES }) as unknown as ByteDestination);
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
