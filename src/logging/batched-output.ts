/**
 * stdout for the logger, in batches: each line is copied into a byte buffer as it comes, and
 * the buffer goes out with one write once 16 KiB have gathered or 250 ms have passed.
 *
 * Why not pino.destination({ sync: false, minLength }) (sonic-boom): it gathers lines by
 * string concatenation and measures the growing string's UTF-8 length on every line, which
 * flattens it each time: ~2.5 KB of garbage per access-log line, measured with V8's sampling
 * heap profiler, at one line per proxied call. Copied into a buffer, a line leaves nothing on
 * the heap once pino is done with it.
 *
 * Writes run on libuv's thread pool (`fs.write`), one at a time; lines keep coming into a
 * second buffer meanwhile. If stdout stops taking data (a stalled pipe), the waiting bytes are
 * bounded (`maxBufferedBytes`): further lines are dropped and counted, and a line saying how
 * many is written once output moves again. At process exit whatever waits is written
 * synchronously.
 */
import { write as fsWrite, writeSync } from 'node:fs';

export interface BatchedOutputOptions {
  fd?: number;
  /** A batch is written once this many bytes wait. */
  flushBytes?: number;
  /** ...or this long after the last write, whichever comes first. */
  intervalMs?: number;
  /** Bytes allowed to wait while a write is slow; more lines are dropped (and counted). */
  maxBufferedBytes?: number;
}

type Done = (error?: Error) => void;

const RETRY_MS = 10;

export class BatchedOutput {
  readonly #fd: number;
  readonly #flushBytes: number;
  readonly #maxBufferedBytes: number;
  readonly #timer: NodeJS.Timeout;
  #buf: Buffer;
  #used = 0;
  /** The last written buffer, reused for the next batch. */
  #spare: Buffer | undefined;
  #writing = false;
  #dropped = 0;
  #closed = false;
  #waiters: Done[] = [];

  constructor(options: BatchedOutputOptions = {}) {
    this.#fd = options.fd ?? 1;
    this.#flushBytes = options.flushBytes ?? 16 * 1024;
    this.#maxBufferedBytes = options.maxBufferedBytes ?? 8 * 1024 * 1024;
    this.#buf = Buffer.allocUnsafeSlow(this.#flushBytes * 2);
    this.#timer = setInterval(() => this.#startWrite(), options.intervalMs ?? 250);
    this.#timer.unref();
    process.once('exit', this.flushSync);
  }

  /** pino's destination interface: one call per log line. */
  write(line: string): boolean {
    if (this.#closed) return false;
    const worst = line.length * 3;
    if (this.#used + worst > this.#buf.length && !this.#makeRoom(worst)) {
      this.#dropped++;
      return false;
    }
    this.#used += this.#buf.write(line, this.#used);
    if (this.#used >= this.#flushBytes) this.#startWrite();
    return true;
  }

  /** Writes what waits; calls back once everything written so far is out (pino's logger.flush). */
  flush(done?: Done): void {
    if (!this.#writing && this.#used === 0) {
      if (done) process.nextTick(done);
      return;
    }
    if (done) this.#waiters.push(done);
    this.#startWrite();
  }

  /** Writes what waits now, blocking (process exit). A batch already handed to the thread pool is its own. */
  readonly flushSync = (): void => {
    let offset = 0;
    for (let attempts = 0; offset < this.#used && attempts < 100; attempts++) {
      try {
        offset += writeSync(this.#fd, this.#buf, offset, this.#used - offset);
      } catch (error) {
        if ((error as NodeJS.ErrnoException).code !== 'EAGAIN') break;
      }
    }
    this.#used = 0;
  };

  /** Stops the timer and the exit hook, after writing what waits. */
  close(done?: Done): void {
    this.#closed = true;
    clearInterval(this.#timer);
    process.off('exit', this.flushSync);
    this.flush(done);
  }

  /** Room for `bytes` more: hand the full buffer to a write, or grow while one is running. */
  #makeRoom(bytes: number): boolean {
    this.#startWrite();
    if (this.#used + bytes <= this.#buf.length) return true;
    if (this.#used + bytes > this.#maxBufferedBytes) return false;
    let size = this.#buf.length * 2;
    while (size < this.#used + bytes) size *= 2;
    const grown = Buffer.allocUnsafeSlow(size);
    this.#buf.copy(grown, 0, 0, this.#used);
    this.#buf = grown;
    return true;
  }

  #startWrite(): void {
    if (this.#writing) return;
    if (this.#dropped > 0 && this.#used + 200 <= this.#buf.length) {
      const notice = `{"level":40,"time":${Date.now()},"dropped_lines":${this.#dropped},"msg":"stdout did not keep up: log lines were dropped"}\n`;
      this.#dropped = 0;
      this.#used += this.#buf.write(notice, this.#used);
    }
    if (this.#used === 0) return;
    const out = this.#buf;
    const length = this.#used;
    this.#buf = this.#spare && this.#spare.length >= this.#flushBytes * 2 ? this.#spare : Buffer.allocUnsafeSlow(this.#flushBytes * 2);
    this.#spare = undefined;
    this.#used = 0;
    this.#writing = true;
    this.#writeFrom(out, 0, length);
  }

  #writeFrom(out: Buffer, offset: number, length: number): void {
    fsWrite(this.#fd, out, offset, length - offset, null, (error, written) => {
      if (error) {
        if (error.code === 'EAGAIN') {
          setTimeout(() => this.#writeFrom(out, offset, length), RETRY_MS).unref();
          return;
        }
        // stdout is gone (EPIPE, closed): nothing more can be written; keep running.
        this.#finishWrite(out, error);
        return;
      }
      if (offset + written < length) {
        this.#writeFrom(out, offset + written, length);
        return;
      }
      this.#finishWrite(out, undefined);
    });
  }

  #finishWrite(out: Buffer, error: Error | undefined): void {
    this.#writing = false;
    if (out.length === this.#flushBytes * 2) this.#spare = out;
    if (this.#used > 0 && (this.#used >= this.#flushBytes || this.#waiters.length > 0)) {
      this.#startWrite();
      return;
    }
    const waiters = this.#waiters;
    this.#waiters = [];
    for (const done of waiters) done(error);
  }
}
