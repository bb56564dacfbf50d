/**
 * The last N lines of Gatehouse's own log, in memory, with live subscribers: the second stream
 * of the logger's `pino.multistream`, so the dashboard's Logs page shows the access log
 * without a file. Lines are kept as UTF-8 bytes in one ring, so a busy gateway's turnover
 * leaves no long-lived strings for the garbage collector; `history()` decodes them.
 */
export interface LineBufferOptions {
  /** Lines kept (default 1000). */
  lines?: number;
  /** Bytes of the ring (default 1 MiB): when lines are long, fewer than `lines` are kept. */
  bytes?: number;
}

/** A longer line is kept cut to this many characters (a stack trace, a dumped object). */
const MAX_KEPT_LINE_CHARS = 16 * 1024;
const CUT_MARK = ' …[cut]';

export class LineBuffer {
  readonly #capacity: number;
  readonly #ring: Buffer;
  /** Absolute byte position (as if the ring never wrapped) where line `i % capacity` starts. */
  readonly #starts: Float64Array;
  readonly #lengths: Uint32Array;
  /** Lines added since the start. */
  #count = 0;
  /** Absolute byte position where the next line goes. */
  #head = 0;
  #partial = '';
  readonly #listeners = new Set<(line: string) => void>();

  constructor(options: LineBufferOptions | number = {}) {
    const { lines = 1000, bytes = 1024 * 1024 } = typeof options === 'number' ? { lines: options } : options;
    this.#capacity = lines;
    this.#ring = Buffer.alloc(Math.max(bytes, 4 * 3 * (MAX_KEPT_LINE_CHARS + CUT_MARK.length)));
    this.#starts = new Float64Array(lines);
    this.#lengths = new Uint32Array(lines);
  }

  /** pino calls this with one or more whole lines ("...\n"); a line split over calls is joined. */
  write(chunk: string | Buffer): boolean {
    let text = typeof chunk === 'string' ? chunk : chunk.toString('utf8');
    if (this.#partial !== '') {
      text = this.#partial + text;
      this.#partial = '';
    }
    let start = 0;
    for (let end = text.indexOf('\n'); end !== -1; end = text.indexOf('\n', start)) {
      if (end > start) this.#add(text.slice(start, end));
      start = end + 1;
    }
    if (start < text.length) this.#partial = text.slice(start);
    return true;
  }

  /** The kept lines, oldest first. */
  history(): string[] {
    const lines: string[] = [];
    const oldestByte = this.#head - this.#ring.length;
    for (let i = Math.max(0, this.#count - this.#capacity); i < this.#count; i++) {
      const slot = i % this.#capacity;
      const start = this.#starts[slot]!;
      // Overwritten by newer bytes since (long lines use the ring up faster than `capacity` lines).
      if (start < oldestByte) continue;
      const at = start % this.#ring.length;
      lines.push(this.#ring.toString('utf8', at, at + this.#lengths[slot]!));
    }
    return lines;
  }

  subscribe(listener: (line: string) => void): () => void {
    this.#listeners.add(listener);
    return () => this.#listeners.delete(listener);
  }

  #add(whole: string): void {
    const line = whole.length > MAX_KEPT_LINE_CHARS ? whole.slice(0, MAX_KEPT_LINE_CHARS) + CUT_MARK : whole;
    const ring = this.#ring;
    // A line never wraps around the ring's end: when it might not fit, it starts over at 0.
    let at = this.#head % ring.length;
    if (at + line.length * 3 > ring.length) {
      this.#head += ring.length - at;
      at = 0;
    }
    const written = ring.write(line, at);
    const slot = this.#count % this.#capacity;
    this.#starts[slot] = this.#head;
    this.#lengths[slot] = written;
    this.#head += written;
    this.#count++;
    for (const listener of this.#listeners) listener(whole);
  }
}
