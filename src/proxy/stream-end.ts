/**
 * Tells whether a streamed answer ended with its API's terminal frame, so a stream that
 * llama-swap closed cleanly but early (a crashed llama-server) is not taken for a whole answer.
 *
 * Terminal, as the last frame of the stream (followed by the blank line that dispatches it):
 * - chat and text completions: `data: [DONE]`;
 * - Anthropic `/v1/messages`: `event: message_stop`;
 * - OpenAI Responses `/v1/responses`: `event: response.completed`, `response.failed` or
 *   `response.incomplete` (all three end a response; the SDK reads failed/incomplete itself);
 * - on every path, an error the upstream already sent: `event: error`, or a data frame whose
 *   JSON starts with `{"error"` (llama-server's in-stream error): the client has its error.
 * Other paths are not watched. Comment frames (`: ping`) after the terminal frame are ignored.
 *
 * Cheap on purpose (it runs on every watched stream, with or without usage recording): it keeps
 * only the first bytes of the latest frame, found with one native search per chunk. It is not a
 * second SSE parser; `core/sse-decoder.ts` stays the one that reads frames.
 */

const LF = 0x0a;
const CR = 0x0d;
const COLON = 0x3a;
const BLANK_LINE = Buffer.from('\n\n');
/** Enough for the longest terminal line, `event: response.incomplete`, and an `id:` before it. */
const HEAD_BYTES = 64;
const TERMINAL_EVENTS = new Set([
  'message_stop',
  'response.completed',
  'response.failed',
  'response.incomplete',
  'error',
]);
const WATCHED_PATHS = new Set(['/v1/chat/completions', '/v1/completions', '/v1/messages', '/v1/responses']);

/** A watcher for a stream on `path`, or undefined when that path has no known terminal frame. */
export function watchStreamEnd(path: string): StreamEndWatcher | undefined {
  return WATCHED_PATHS.has(path) ? new StreamEndWatcher() : undefined;
}

export class StreamEndWatcher {
  /** The first bytes of the latest frame (a view of a received chunk, or a small copy). */
  #head: Buffer | undefined;
  /** The line breaks (CR / LF) at the very end of what was seen so far, as text, at most 4. */
  #breaks = '';
  /** The frame still open at the end of the last chunk is the head's (not a comment). */
  #headOpen = false;

  push(chunk: Buffer): void {
    const length = chunk.length;
    let end = contentEnd(chunk, length);
    if (end === 0) {
      this.#breaks = (this.#breaks + chunk.toString('latin1')).slice(-4);
      return;
    }
    const trailing = chunk.toString('latin1', Math.max(end, length - 4), length);
    const headWasOpen = this.#headOpen;
    // From the chunk's last frame backwards, passing over comment frames (keep-alive pings).
    for (let last = true; ; last = false) {
      let start = lastFrameStart(chunk, end);
      if (start === -1) {
        let lead = 0;
        while (isBreak(chunk[lead]!)) lead++;
        // The previous chunk's trailing breaks and this one's leading ones may make the blank line.
        if (this.#head === undefined || lineEndings(this.#breaks + chunk.toString('latin1', 0, lead)) >= 2)
          start = lead;
      }
      if (start === -1) {
        // The latest frame goes on in this chunk: its head, when still short, grows.
        const head = this.#head!;
        if (headWasOpen && head.length < HEAD_BYTES) {
          this.#head = Buffer.concat([
            head,
            Buffer.from(this.#breaks, 'latin1'),
            chunk.subarray(0, Math.min(end, HEAD_BYTES - head.length)),
          ]);
        }
        break;
      }
      if (chunk[start] !== COLON) {
        this.#head = chunk.subarray(start, Math.min(end, start + HEAD_BYTES));
        if (last) this.#headOpen = true;
        break;
      }
      if (last) this.#headOpen = false;
      end = contentEnd(chunk, start);
      // The comment opened this chunk: the frame before it came in an earlier one.
      if (end === 0) break;
    }
    this.#breaks = trailing;
  }

  /** True when the stream so far ends with a dispatched terminal frame. */
  endedWithTerminalFrame(): boolean {
    const head = this.#head;
    if (head === undefined || lineEndings(this.#breaks) < 2) return false;
    let pos = 0;
    while (pos < head.length) {
      let lineEnd = pos;
      while (lineEnd < head.length && !isBreak(head[lineEnd]!)) lineEnd++;
      if (isTerminalLine(head.toString('latin1', pos, lineEnd))) return true;
      pos = lineEnd + 1;
    }
    return false;
  }

  /** The line breaks to write before an appended event so that it stands as its own frame. */
  separator(): string {
    if (this.#head === undefined) return '';
    const endings = lineEndings(this.#breaks);
    return endings >= 2 ? '' : endings === 1 ? '\n' : '\n\n';
  }
}

function isTerminalLine(line: string): boolean {
  const colon = line.indexOf(':');
  if (colon === -1) return false;
  const field = line.slice(0, colon);
  const value = line.charCodeAt(colon + 1) === 0x20 ? line.slice(colon + 2) : line.slice(colon + 1);
  if (field === 'event') return TERMINAL_EVENTS.has(value);
  if (field === 'data') return value === '[DONE]' || value.startsWith('{"error"');
  return false;
}

/**
 * Where the last frame that begins inside `chunk[0, end)` begins (just after a blank line), or -1.
 * `chunk[end - 1]` is not a line break.
 */
function lastFrameStart(chunk: Buffer, end: number): number {
  if (chunk.indexOf(CR) === -1) {
    const at = chunk.lastIndexOf(BLANK_LINE, end - 1);
    return at === -1 ? -1 : at + 2;
  }
  // CR line endings (rare: llama.cpp and llama-swap write LF): walk back over break runs.
  let i = end - 1;
  while (i >= 0) {
    if (!isBreak(chunk[i]!)) {
      i--;
      continue;
    }
    const runEnd = i + 1;
    while (i >= 0 && isBreak(chunk[i]!)) i--;
    // A run at the chunk's start may continue the previous chunk's breaks: the caller decides.
    if (i >= 0 && lineEndings(chunk.toString('latin1', i + 1, runEnd)) >= 2) return runEnd;
  }
  return -1;
}

/** How many line endings a run of CR / LF holds (CRLF is one). */
function lineEndings(breaks: string): number {
  let n = 0;
  for (let i = 0; i < breaks.length; i++) {
    if (breaks.charCodeAt(i) === CR && breaks.charCodeAt(i + 1) === LF) i++;
    n++;
  }
  return n;
}

/** `chunk[0, end)` without the line breaks it ends with. */
function contentEnd(chunk: Buffer, end: number): number {
  while (end > 0 && isBreak(chunk[end - 1]!)) end--;
  return end;
}

function isBreak(byte: number): boolean {
  return byte === LF || byte === CR;
}
