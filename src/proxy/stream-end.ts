/**
 * Tells whether a streamed answer ended with its API's terminal frame, so a stream that
 * llama-swap closed cleanly but early (a crashed llama-server) is not taken for a whole answer.
 *
 * Terminal, as the last frame of the stream (dispatched by its blank line):
 * - chat and text completions: `data: [DONE]`;
 * - Anthropic `/v1/messages`: `event: message_stop`;
 * - OpenAI Responses `/v1/responses`: `event: response.completed`, `response.failed` or
 *   `response.incomplete` (all three end a response; the SDK reads failed/incomplete itself);
 * - on every path, an error the upstream already sent: `event: error`, or a data frame whose
 *   JSON starts with `{"error"` (llama-server's in-stream error): the client has its error.
 * Other paths are not watched. Comment frames (`: ping`) after the terminal frame are ignored.
 *
 * It reads the frames of the stream's one SSE parser (`core/sse-decoder.ts`, run by the
 * forwarder for the usage tap too), so nothing here scans bytes for frame boundaries.
 */
import type { SseFrameHandler, SseParser } from '../core/sse-decoder.js';

const TERMINAL_EVENTS = new Set([
  'message_stop',
  'response.completed',
  'response.failed',
  'response.incomplete',
  'error',
]);
const WATCHED_PATHS = new Set(['/v1/chat/completions', '/v1/completions', '/v1/messages', '/v1/responses']);
const DONE = Buffer.from('[DONE]');
const ERROR_OBJECT = Buffer.from('{"error"');

/** A watcher for a stream on `path`, or undefined when that path has no known terminal frame. */
export function watchStreamEnd(path: string): StreamEndWatcher | undefined {
  return WATCHED_PATHS.has(path) ? new StreamEndWatcher() : undefined;
}

export class StreamEndWatcher {
  /** The latest dispatched frame was a terminal one. */
  #terminal = false;

  /** Each frame of the stream, from its SSE parser. */
  readonly onFrame: SseFrameHandler = (event, bytes, start, end) => {
    this.#terminal =
      TERMINAL_EVENTS.has(event) ||
      startsWith(bytes, start, end, DONE, true) ||
      startsWith(bytes, start, end, ERROR_OBJECT, false);
  };

  /** A frame the parser dropped (a line over its limit) is the latest one, and not terminal. */
  readonly onOversized = (): void => {
    this.#terminal = false;
  };

  /** True when the stream `frames` parsed so far ends with a dispatched terminal frame. */
  endedWithTerminalFrame(frames: SseParser): boolean {
    return this.#terminal && frames.closingBreaks() === '';
  }
}

/** Whether `bytes[start, end)` begins with `prefix` (or is exactly it, with `exact`). */
function startsWith(bytes: Buffer, start: number, end: number, prefix: Buffer, exact: boolean): boolean {
  const length = end - start;
  if (exact ? length !== prefix.length : length < prefix.length) return false;
  return prefix.compare(bytes, start, start + prefix.length) === 0;
}
