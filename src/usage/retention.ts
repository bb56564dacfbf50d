/**
 * Deletes usage older than the retention (`GATEHOUSE_USAGE_RETENTION`, default 30 days): hourly,
 * in small batches with a pause between them, so no single transaction holds the database (and,
 * with SQLite, the event loop) for long. Minute rollups are kept 2 days (they serve the 1h and 24h
 * summaries); hour rollups as long as the request log.
 */
import type { UsageStore } from '../store/store.js';

const MINUTE_ROLLUP_RETENTION_MS = 2 * 86_400_000;

export interface RetentionOptions {
  retentionMs: number;
  intervalMs?: number;
  /** Delay of the first pass after start (a gateway restarted often still prunes). */
  firstRunMs?: number;
  /** Rows deleted per transaction. */
  batchSize?: number;
  /** Wall clock. Default `Date.now`. */
  now?: () => number;
  onError?: (error: unknown) => void;
}

export class UsageRetention {
  readonly #store: UsageStore;
  readonly #options: RetentionOptions;
  readonly #timer: NodeJS.Timeout;
  readonly #first: NodeJS.Timeout;
  #running: Promise<number> | undefined;
  #closed = false;

  constructor(store: UsageStore, options: RetentionOptions) {
    this.#store = store;
    this.#options = options;
    const run = () => {
      this.prune().catch((error: unknown) => options.onError?.(error));
    };
    this.#timer = setInterval(run, options.intervalMs ?? 3_600_000);
    this.#timer.unref();
    this.#first = setTimeout(run, options.firstRunMs ?? 60_000);
    this.#first.unref();
  }

  /** Runs one pass now (or joins the one running); resolves with the rows deleted. */
  prune(): Promise<number> {
    this.#running ??= this.#pass().finally(() => {
      this.#running = undefined;
    });
    return this.#running;
  }

  async #pass(): Promise<number> {
    const now = (this.#options.now ?? Date.now)();
    const requestsBefore = now - this.#options.retentionMs;
    const cutoffs = { requestsBefore, minutesBefore: now - MINUTE_ROLLUP_RETENTION_MS, hoursBefore: requestsBefore };
    const batch = this.#options.batchSize ?? 1000;
    let total = 0;
    while (!this.#closed) {
      const deleted = await this.#store.prune(cutoffs, batch);
      total += deleted;
      if (deleted < batch) break;
      // Let the proxy breathe between batches.
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
    return total;
  }

  async close(): Promise<void> {
    this.#closed = true;
    clearInterval(this.#timer);
    clearTimeout(this.#first);
    await this.#running?.catch(() => {});
  }
}
