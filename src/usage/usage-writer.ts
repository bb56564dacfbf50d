/**
 * Writes usage records off the request path: calls append to an in-memory queue (O(1), no I/O)
 * and a background loop writes batches in one transaction each, every `flushIntervalMs` or as
 * soon as `batchSize` records wait. A crash loses at most what arrived since the last write
 * (about `flushIntervalMs`). The queue is bounded: when the store is slow or down it drops new
 * records and COUNTS them (`gatehouse_usage_records_dropped_total`) rather than grow without end;
 * a failed batch goes back to the front of the queue and is retried on the next tick.
 */
import { randomBytes } from 'node:crypto';
import type { UsageRecord, UsageStore } from '../store/store.js';

export interface UsageWriterOptions {
  flushIntervalMs?: number;
  batchSize?: number;
  maxQueue?: number;
  onWritten?: (n: number) => void;
  onDropped?: (n: number) => void;
  onError?: (error: unknown) => void;
}

export class UsageWriter {
  readonly #store: UsageStore;
  readonly #batchSize: number;
  readonly #maxQueue: number;
  readonly #options: UsageWriterOptions;
  readonly #timer: NodeJS.Timeout;
  #queue: UsageRecord[] = [];
  #writing: Promise<void> | undefined;
  #kickScheduled = false;
  #closed = false;

  constructor(store: UsageStore, options: UsageWriterOptions = {}) {
    this.#store = store;
    this.#options = options;
    this.#batchSize = options.batchSize ?? 500;
    this.#maxQueue = options.maxQueue ?? 50_000;
    this.#timer = setInterval(() => this.#kick(), options.flushIntervalMs ?? 500);
    this.#timer.unref();
  }

  get queued(): number {
    return this.#queue.length;
  }

  push(record: UsageRecord): void {
    if (this.#closed || this.#queue.length >= this.#maxQueue) {
      this.#options.onDropped?.(1);
      return;
    }
    this.#queue.push(record);
    if (this.#queue.length >= this.#batchSize && !this.#kickScheduled) {
      // Never write from inside the caller's completion hook: the next turn of the loop.
      this.#kickScheduled = true;
      setImmediate(() => {
        this.#kickScheduled = false;
        this.#kick();
      });
    }
  }

  /** Writes everything queued now; resolves when the queue is empty or a write failed. */
  flush(): Promise<void> {
    this.#kick();
    return this.#writing ?? Promise.resolve();
  }

  /** Stops the timer and writes what is queued (once more on failure, then drops and counts). */
  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    clearInterval(this.#timer);
    await this.#writing;
    await this.#drain();
    if (this.#queue.length > 0) await this.#drain();
    if (this.#queue.length > 0) {
      this.#options.onDropped?.(this.#queue.length);
      this.#queue = [];
    }
  }

  #kick(): void {
    if (this.#writing || this.#queue.length === 0) return;
    this.#writing = this.#drain().finally(() => {
      this.#writing = undefined;
    });
  }

  async #drain(): Promise<void> {
    while (this.#queue.length > 0) {
      const batch = this.#queue.length <= this.#batchSize ? this.#queue : this.#queue.slice(0, this.#batchSize);
      this.#queue = batch === this.#queue ? [] : this.#queue.slice(batch.length);
      try {
        await this.#store.append(batch);
        this.#options.onWritten?.(batch.length);
      } catch (error) {
        this.#options.onError?.(error);
        if (isPermanent(error)) {
          // Retrying a batch the database refuses for its content would block the queue for good.
          this.#options.onDropped?.(batch.length);
          continue;
        }
        // Back to the front, as far as the bound allows; the rest is dropped and counted.
        const room = Math.max(0, this.#maxQueue - this.#queue.length);
        const kept = batch.length <= room ? batch : batch.slice(0, room);
        if (kept.length < batch.length) this.#options.onDropped?.(batch.length - kept.length);
        this.#queue = kept.concat(this.#queue);
        return;
      }
    }
  }
}

/**
 * Whether a failed write would fail again whatever the wait: the data or the statement is at
 * fault (SQLite constraint/mismatch/too big; PostgreSQL classes 22 data exception, 23 integrity,
 * 42 syntax or undefined object). Anything else (busy, locked, I/O, no connection) is retried.
 */
export function isPermanent(error: unknown): boolean {
  const code = (error as { code?: unknown } | undefined)?.code;
  if (typeof code !== 'string') return false;
  if (/^SQLITE_(CONSTRAINT|MISMATCH|TOOBIG|RANGE)/.test(code)) return true;
  return /^(22|23|42)[0-9A-Z]{3}$/.test(code);
}

const PROCESS_TAG = randomBytes(4).toString('hex');
let sequence = 0;

/**
 * A unique, time-ordered record id: start time (base36, fixed width), a per-process random tag
 * (replicas sharing a database), and a counter. Ordered ids keep the primary-key index
 * append-mostly.
 */
export function newUsageId(at: number): string {
  sequence = (sequence + 1) % 0x7fffffff;
  return `${Math.max(0, Math.floor(at)).toString(36).padStart(9, '0')}-${PROCESS_TAG}-${sequence.toString(36).padStart(6, '0')}`;
}
