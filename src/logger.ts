import pino, { type Logger } from 'pino';
import { BatchedOutput } from './logging/batched-output.js';

/**
 * The process logger. Access-log lines name their fields explicitly and never include
 * headers; the redact list is a second fence for anything logged by accident.
 */
export function createLogger(level: string, destination?: pino.DestinationStream, tee?: pino.DestinationStream): Logger {
  const out = destination ?? bufferedStdout();
  return pino(
    {
      level,
      base: undefined,
      redact: {
        paths: [
          'req.headers.authorization', 'req.headers["x-api-key"]', 'req.headers["api-key"]', 'req.headers.cookie',
          'headers.authorization', 'headers["x-api-key"]', 'headers["api-key"]', 'headers.cookie',
          'password', 'secret', 'token', 'apiKey',
        ],
        censor: '[REDACTED]',
      },
    },
    // The tee (the dashboard's in-memory log) gets the same lines as stdout. Both take every
    // level the logger emits, so a plain fan-out does what pino.multistream's per-stream level
    // checks would, for less work on every access-log line.
    tee && level !== 'silent' ? fanOut(out, tee) : out,
  );
}

type Flushable = pino.DestinationStream & { flush?: (callback?: (error?: Error) => void) => void };

function fanOut(first: Flushable, second: pino.DestinationStream): Flushable {
  return {
    write(line: string) {
      first.write(line);
      second.write(line);
    },
    // logger.flush() at shutdown must still drain stdout's 4 KiB batch (the tee is in memory).
    flush(callback) {
      if (typeof first.flush === 'function') first.flush(callback);
      else callback?.();
    },
  };
}

/** stdout in batches of bytes: one syscall per ~50 access lines, nothing left on the heap per line. */
function bufferedStdout(): pino.DestinationStream {
  return new BatchedOutput({ fd: 1 });
}
