/**
 * The one Server-Sent Events parser of the code base (house style: one SSE parser, not one per
 * consumer). Byte-level and incremental: partial lines are kept across chunks, `\n`, `\r\n` and
 * `\r` all end a line (a CRLF split between two chunks too), `field:value` with or without the
 * space, comments, multi-line `data`.
 *
 * Two faces of the same parser:
 * - `SseParser` hands each frame over as bytes. The usage tap runs it on every streamed response
 *   (the hot path), so nothing is decoded or copied unless a frame spans chunks: `data` is a view
 *   into the received chunk, and the consumer decides with a byte search whether a frame is worth
 *   parsing at all.
 * - `SseDecoder` decodes frames to strings, for the admin side (llama-swap's `/api/events`).
 */

const LF = 0x0a;
const CR = 0x0d;
const COLON = 0x3a;
const SPACE = 0x20;
const EMPTY = Buffer.alloc(0);
const LF_BUFFER = Buffer.from('\n');

export interface SseFrame {
  /** The `event:` field; `''` when the frame had none (the spec's type is then "message"). */
  readonly event: string;
  /** The frame's `data:` lines joined with `\n`, as bytes. Valid until the consumer returns. */
  readonly data: Buffer;
}

export interface SseParserOptions {
  /**
   * Longest line kept. A longer line is dropped while it streams in (memory stays bounded), and
   * the frame it belonged to is not dispatched rather than dispatched incomplete.
   */
  maxLineBytes?: number;
}

export class SseParser {
  readonly #onFrame: (frame: SseFrame) => void;
  readonly #maxLineBytes: number;
  /** Pieces of the line not yet ended. */
  #parts: Buffer[] = [];
  #partBytes = 0;
  /** The unfinished line went over the limit: skip until it ends. */
  #overflow = false;
  /** The previous chunk ended with CR, so a leading LF here belongs to it. */
  #skipLF = false;
  #event = '';
  readonly #data: Buffer[] = [];
  /** The current frame lost a line to the limit. */
  #broken = false;

  constructor(onFrame: (frame: SseFrame) => void, options: SseParserOptions = {}) {
    this.#onFrame = onFrame;
    this.#maxLineBytes = options.maxLineBytes ?? 16 * 1024 * 1024;
  }

  push(chunk: Uint8Array): void {
    const buf = Buffer.isBuffer(chunk) ? chunk : Buffer.from(chunk.buffer, chunk.byteOffset, chunk.byteLength);
    const length = buf.length;
    if (length === 0) return;
    let pos = 0;
    if (this.#skipLF) {
      this.#skipLF = false;
      if (buf[0] === LF) pos = 1;
    }
    // Streams from llama.cpp and friends never use CR: then one native search per line suffices.
    const withCR = buf.indexOf(CR, pos) !== -1;
    while (pos < length) {
      const end = withCR ? lineEnd(buf, pos) : buf.indexOf(LF, pos);
      if (end === -1) {
        this.#keep(buf.subarray(pos));
        return;
      }
      if (this.#parts.length === 0 && !this.#overflow) {
        // The common case, a line within this chunk: read in place, no view of it is made.
        if (end - pos > this.#maxLineBytes) this.#broken = true;
        else this.#line(buf, pos, end);
      } else {
        const line = this.#take(buf.subarray(pos, end));
        if (line === undefined) this.#broken = true;
        else this.#line(line, 0, line.length);
      }
      if (buf[end] === CR) {
        if (end + 1 === length) this.#skipLF = true;
        pos = buf[end + 1] === LF ? end + 2 : end + 1;
      } else {
        pos = end + 1;
      }
    }
  }

  #keep(piece: Buffer): void {
    if (this.#overflow) return;
    this.#partBytes += piece.length;
    if (this.#partBytes > this.#maxLineBytes) {
      this.#overflow = true;
      this.#parts = [];
      this.#partBytes = 0;
      return;
    }
    this.#parts.push(piece);
  }

  /** The whole line ending with `tail`, or undefined when it was over the limit. */
  #take(tail: Buffer): Buffer | undefined {
    if (this.#overflow) {
      this.#overflow = false;
      return undefined;
    }
    const total = this.#partBytes + tail.length;
    this.#parts.push(tail);
    const line = Buffer.concat(this.#parts, total);
    this.#parts = [];
    this.#partBytes = 0;
    return total > this.#maxLineBytes ? undefined : line;
  }

  /** The line `buf[start, end)`, without its line ending. */
  #line(buf: Buffer, start: number, end: number): void {
    if (start === end) {
      this.#dispatch();
      return;
    }
    if (buf[start] === COLON) return; // a comment (keep-alive pings)
    const colon = buf.indexOf(COLON, start);
    const fieldEnd = colon === -1 || colon > end ? end : colon;
    let valueStart = fieldEnd === end ? end : fieldEnd + 1;
    if (valueStart < end && buf[valueStart] === SPACE) valueStart++;
    if (isField(buf, start, fieldEnd, 'data')) this.#data.push(buf.subarray(valueStart, end));
    else if (isField(buf, start, fieldEnd, 'event')) this.#event = buf.toString('utf8', valueStart, end);
    // `id` and `retry` mean nothing to a proxy; unknown fields are ignored, as the spec says.
  }

  #dispatch(): void {
    const data = this.#data;
    const event = this.#event;
    const broken = this.#broken;
    this.#event = '';
    this.#broken = false;
    if (data.length === 0 || broken) {
      data.length = 0;
      return;
    }
    // The lines are joined (a copy) or the one line passed on, so the array is reused.
    const joined = data.length === 1 ? data[0]! : joinLines(data);
    data.length = 0;
    this.#onFrame({ event, data: joined });
  }
}

export interface SseMessage {
  /** The event type; `message` when the frame named none. */
  event: string;
  data: string;
}

/** `SseParser` with string frames, for consumers that want text (the admin side). */
export class SseDecoder {
  #out: SseMessage[] = [];
  readonly #parser: SseParser;

  constructor(options: SseParserOptions = {}) {
    this.#parser = new SseParser((frame) => this.#out.push({ event: frame.event || 'message', data: frame.data.toString('utf8') }), options);
  }

  /** Feeds bytes or already-decoded text; returns the frames completed by it. */
  push(chunk: string | Uint8Array): SseMessage[] {
    this.#parser.push(typeof chunk === 'string' ? Buffer.from(chunk, 'utf8') : chunk);
    const out = this.#out;
    this.#out = [];
    return out;
  }
}

function lineEnd(buf: Buffer, from: number): number {
  for (let i = from; i < buf.length; i++) {
    const byte = buf[i];
    if (byte === LF || byte === CR) return i;
  }
  return -1;
}

function isField(buf: Buffer, start: number, end: number, name: string): boolean {
  if (end - start !== name.length) return false;
  for (let i = 0; i < name.length; i++) if (buf[start + i] !== name.charCodeAt(i)) return false;
  return true;
}

function joinLines(lines: Buffer[]): Buffer {
  const parts: Buffer[] = [];
  for (let i = 0; i < lines.length; i++) {
    if (i > 0) parts.push(LF_BUFFER);
    parts.push(lines[i]!);
  }
  return Buffer.concat(parts);
}
