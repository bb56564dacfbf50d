/**
 * The last N lines of Gatehouse's own log, in memory, with live subscribers. Fed as a second
 * pino destination so the dashboard's Logs page can show the access log without a file.
 */
import { Writable } from 'node:stream';

export class LineBuffer extends Writable {
  readonly #capacity: number;
  #lines: string[] = [];
  #partial = '';
  readonly #listeners = new Set<(line: string) => void>();

  constructor(capacity = 1000) {
    super({ decodeStrings: false });
    this.#capacity = capacity;
  }

  override _write(chunk: Buffer | string, _encoding: BufferEncoding, callback: (error?: Error | null) => void): void {
    const text = this.#partial + (typeof chunk === 'string' ? chunk : chunk.toString('utf8'));
    const parts = text.split('\n');
    this.#partial = parts.pop() ?? '';
    for (const line of parts) {
      if (line === '') continue;
      this.#lines.push(line);
      for (const listener of this.#listeners) listener(line);
    }
    if (this.#lines.length > this.#capacity) this.#lines = this.#lines.slice(-this.#capacity);
    callback();
  }

  history(): readonly string[] {
    return this.#lines;
  }

  subscribe(listener: (line: string) => void): () => void {
    this.#listeners.add(listener);
    return () => this.#listeners.delete(listener);
  }
}
