/**
 * The last N lines of Gatehouse's own log, in memory, with live subscribers. Fed as a second
 * pino destination so the dashboard's Logs page can show the access log without a file.
 *
 * A plain object with `write()`, not a `Writable`: it gets one call per log line (one per
 * request with the access log), and the stream machinery around each call (buffering state,
 * a callback on the next tick) cost more than the copy itself. Old lines are dropped in bulk
 * once twice the capacity has built up, so a line costs O(1), not a copy of the whole buffer.
 */
export class LineBuffer {
  readonly #capacity: number;
  #lines: string[] = [];
  #partial = '';
  readonly #listeners = new Set<(line: string) => void>();

  constructor(capacity = 1000) {
    this.#capacity = capacity;
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

  history(): readonly string[] {
    const lines = this.#lines;
    return lines.length > this.#capacity ? lines.slice(-this.#capacity) : lines;
  }

  subscribe(listener: (line: string) => void): () => void {
    this.#listeners.add(listener);
    return () => this.#listeners.delete(listener);
  }

  #add(line: string): void {
    this.#lines.push(line);
    if (this.#lines.length >= 2 * this.#capacity) this.#lines = this.#lines.slice(-this.#capacity);
    for (const listener of this.#listeners) listener(line);
  }
}
