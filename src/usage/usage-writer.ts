/**
 * Writes usage records off the request path: a call appends its record to an in-memory queue
 * (no I/O), and batches of at most `batchSize` are written in one transaction each, every
 * `flushIntervalMs` or as soon as a batch is full; batches that waited for a running write are
 * joined into the next one. A crash loses at most what arrived since the
 * last write. The queue is bounded: when the store is slow or down, new records are dropped and
 * COUNTED (`gatehouse_usage_records_dropped_total`) rather than grow without end; a batch that
 * failed goes back to the front of the queue and is retried on the next tick.
 */
import type { UsageRecord } from '../store/records.js';
import type { UsageStore } from '../store/store.js';

export interface UsageWriterOptions {
  flushIntervalMs?: number;
  batchSize?: number;
  /** Batches that waited while a write ran go out together, up to this many in one write. */
  maxBatchesPerWrite?: number;
  maxQueue?: number;
  onWritten?: (n: number) => void;
  onDropped?: (n: number) => void;
  onError?: (error: unknown) => void;
}

export class UsageWriter {
  readonly #store: Pick<UsageStore, 'append'>;
  readonly #batchSize: number;
  readonly #maxBatchesPerWrite: number;
  readonly #maxQueue: number;
  readonly #options: UsageWriterOptions;
  readonly #timer: NodeJS.Timeout;
  /** Batches ready to write, oldest first; each holds at most `batchSize` records. */
  #sealed: UsageRecord[][] = [];
  /** The batch being filled. */
  #open: UsageRecord[] = [];
  #queued = 0;
  #writing: Promise<void> | undefined;
  #kickScheduled = false;
  #closed = false;

  constructor(store: Pick<UsageStore, 'append'>, options: UsageWriterOptions = {}) {
    this.#store = store;
    this.#options = options;
    this.#batchSize = options.batchSize ?? 200;
    this.#maxBatchesPerWrite = options.maxBatchesPerWrite ?? 10;
    this.#maxQueue = options.maxQueue ?? 50_000;
    this.#timer = setInterval(() => {
      this.#sealOpen();
      this.#kick();
    }, options.flushIntervalMs ?? 250);
    this.#timer.unref();
  }

  get queued(): number {
    return this.#queued;
  }

  push(record: UsageRecord): void {
    if (this.#closed || this.#queued >= this.#maxQueue) {
      this.#options.onDropped?.(1);
      return;
    }
    this.#open.push(record);
    this.#queued++;
    if (this.#open.length >= this.#batchSize) {
      this.#sealOpen();
      if (!this.#kickScheduled) {
        // Never write from inside the caller's completion hook: the next turn of the loop.
        this.#kickScheduled = true;
        setImmediate(() => {
          this.#kickScheduled = false;
          this.#kick();
        });
      }
    }
  }

  /** Writes everything queued now; resolves when the queue is empty or a write failed. */
  async flush(): Promise<void> {
    this.#sealOpen();
    // A drain already running may be past its last look at the queue: let it end, then start
    // one (or join one started meanwhile) that sees everything sealed now.
    if (this.#writing) await this.#writing;
    this.#kick();
    await this.#writing;
  }

  /** Stops the timer and writes what is queued (once more on failure, then drops and counts). */
  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    clearInterval(this.#timer);
    this.#sealOpen();
    await this.#writing;
    await this.#drain();
    if (this.#queued > 0) await this.#drain();
    if (this.#queued > 0) {
      this.#options.onDropped?.(this.#queued);
      this.#sealed = [];
      this.#open = [];
      this.#queued = 0;
    }
  }

  #kick(): void {
    if (this.#writing || this.#sealed.length === 0) return;
    this.#writing = this.#drain().finally(() => {
      this.#writing = undefined;
    });
  }

  /**
   * Closes the batch being filled, so the next drain writes it. Only a full batch, the timer,
   * `flush()` and `close()` do this: a drain on its own writes whole batches, so under load each
   * transaction carries `batchSize` records rather than whatever arrived during the last one.
   */
  #sealOpen(): void {
    if (this.#open.length === 0) return;
    this.#sealed.push(this.#open);
    this.#open = [];
  }

  /**
   * The oldest sealed batches, joined: a write costs a round trip to the database whatever its
   * size, so batches that piled up behind a write go out in one.
   */
  #takeWrite(): UsageRecord[] | undefined {
    const first = this.#sealed.shift();
    if (!first) return undefined;
    let joined = first;
    for (let n = 1; n < this.#maxBatchesPerWrite && this.#sealed.length > 0; n++)
      joined = joined.concat(this.#sealed.shift()!);
    return joined;
  }

  async #drain(): Promise<void> {
    for (let batch = this.#takeWrite(); batch; batch = this.#takeWrite()) {
      const n = batch.length;
      this.#queued -= n;
      try {
        await this.#store.append(batch);
        this.#options.onWritten?.(n);
      } catch (error) {
        this.#options.onError?.(error);
        if (isPermanent(error)) {
          // Retrying a batch the database refuses for its content would block the queue for good.
          this.#options.onDropped?.(n);
          continue;
        }
        // Back to the front, if the bound allows (records pushed meanwhile count first: they
        // were accepted); otherwise dropped and counted.
        if (this.#queued + n <= this.#maxQueue) {
          this.#sealed.unshift(batch);
          this.#queued += n;
        } else {
          this.#options.onDropped?.(n);
        }
        return;
      }
      // Requests and streams get the loop between two batches (SQLite writes synchronously).
      if (this.#sealed.length > 0) await new Promise<void>((resolve) => setImmediate(resolve));
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
