/**
 * The one Server-Sent Events parser of the code base (house style: one SSE parser, not one per
 * consumer). Byte-level and incremental: partial lines are kept across chunks, `\n`, `\r\n` and
 * `\r` all end a line (a CRLF split between two chunks too), `field:value` with or without the
 * space, comments, multi-line `data`.
 *
 * Two faces of the same parser:
 * - `SseParser` hands each frame over as bytes. The forwarder runs one on every streamed response
 *   (the hot path, `proxy/stream-frames.ts`) for both the usage tap and the end-of-stream check,
 *   so nothing is decoded, copied or even wrapped unless a frame spans chunks or lines: a one-line
 *   frame is passed as the received chunk and the range of its data, and the consumer makes a
 *   view only of what it keeps (no frame object, no view per frame).
 * - `SseDecoder` decodes frames to strings, for the admin side (llama-swap's `/api/events`).
 */

const LF = 0x0a;
const CR = 0x0d;
const COLON = 0x3a;
const SPACE = 0x20;
const LF_BUFFER = Buffer.from('\n');

/**
 * Called once per frame. `event` is the `event:` field, `''` when the frame had none (the spec's
 * type is then "message"); the frame's `data:` lines, joined with `\n`, are `bytes[start, end)`.
 * `bytes` is a received chunk (or a copy, for data that spanned chunks or lines): it is never
 * reused, so a consumer may keep a view of the range.
 */
export type SseFrameHandler = (event: string, bytes: Buffer, start: number, end: number) => void;

export interface SseParserOptions {
  /**
   * Longest line kept. A longer line is dropped while it streams in (memory stays bounded), and
   * the frame it belonged to is not dispatched rather than dispatched incomplete.
   */
  maxLineBytes?: number;
  /** Called when a frame is dropped for a line over `maxLineBytes`. */
  onOversized?: () => void;
}

export class SseParser {
  readonly #onFrame: SseFrameHandler;
  readonly #maxLineBytes: number;
  readonly #onOversized: (() => void) | undefined;
  /** Pieces of the line not yet ended. */
  #parts: Buffer[] = [];
  #partBytes = 0;
  /** The unfinished line went over the limit: skip until it ends. */
  #overflow = false;
  /** The previous chunk ended with CR, so a leading LF here belongs to it. */
  #skipLF = false;
  #event = '';
  /** The current frame's first data line, as a range (most frames have one line: no view is made). */
  #firstBytes: Buffer | undefined;
  #firstStart = 0;
  #firstEnd = 0;
  /** Its further data lines, as views; empty for one-line frames. */
  readonly #more: Buffer[] = [];
  /** The current frame lost a line to the limit. */
  #broken = false;
  /** A line (of any kind, comments too) ended since the last blank line. */
  #inFrame = false;

  constructor(onFrame: SseFrameHandler, options: SseParserOptions = {}) {
    this.#onFrame = onFrame;
    this.#maxLineBytes = options.maxLineBytes ?? 16 * 1024 * 1024;
    this.#onOversized = options.onOversized;
  }

  /**
   * The line breaks that close what was pushed so far, so that a frame written after it stands
   * on its own: '' at a frame boundary (or before any byte), '\n' after a line of an open frame,
   * '\n\n' inside a line.
   */
  closingBreaks(): string {
    if (this.#parts.length > 0 || this.#overflow) return '\n\n';
    return this.#inFrame ? '\n' : '';
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
        if (end - pos > this.#maxLineBytes) this.#lineTooLong();
        else this.#line(buf, pos, end);
      } else {
        const line = this.#take(buf.subarray(pos, end));
        if (line === undefined) this.#lineTooLong();
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

  /** A line over the limit ended: its frame is dropped at the blank line. */
  #lineTooLong(): void {
    this.#broken = true;
    this.#inFrame = true;
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
      this.#inFrame = false;
      this.#dispatch();
      return;
    }
    this.#inFrame = true;
    if (buf[start] === COLON) return; // a comment (keep-alive pings)
    const colon = buf.indexOf(COLON, start);
    const fieldEnd = colon === -1 || colon > end ? end : colon;
    let valueStart = fieldEnd === end ? end : fieldEnd + 1;
    if (valueStart < end && buf[valueStart] === SPACE) valueStart++;
    if (isField(buf, start, fieldEnd, 'data')) this.#dataLine(buf, valueStart, end);
    else if (isField(buf, start, fieldEnd, 'event')) this.#event = buf.toString('utf8', valueStart, end);
    // `id` and `retry` mean nothing to a proxy; unknown fields are ignored, as the spec says.
  }

  #dataLine(buf: Buffer, start: number, end: number): void {
    if (this.#firstBytes === undefined) {
      this.#firstBytes = buf;
      this.#firstStart = start;
      this.#firstEnd = end;
    } else {
      this.#more.push(buf.subarray(start, end));
    }
  }

  #dispatch(): void {
    const first = this.#firstBytes;
    const event = this.#event;
    const broken = this.#broken;
    this.#event = '';
    this.#broken = false;
    this.#firstBytes = undefined;
    if (first === undefined || broken) {
      this.#more.length = 0;
      if (broken) this.#onOversized?.();
      return;
    }
    if (this.#more.length === 0) {
      this.#onFrame(event, first, this.#firstStart, this.#firstEnd);
      return;
    }
    // Several data lines: joined with LF into one copy.
    const joined = joinLines(first.subarray(this.#firstStart, this.#firstEnd), this.#more);
    this.#more.length = 0;
    this.#onFrame(event, joined, 0, joined.length);
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
    this.#parser = new SseParser(
      (event, bytes, start, end) =>
        this.#out.push({ event: event || 'message', data: bytes.toString('utf8', start, end) }),
      options,
    );
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

function joinLines(first: Buffer, more: readonly Buffer[]): Buffer {
  const parts: Buffer[] = [first];
  for (const line of more) parts.push(LF_BUFFER, line);
  return Buffer.concat(parts);
}
