/**
 * Deletes audit entries older than `GATEHOUSE_AUDIT_RETENTION` (default 365 days): daily, in
 * small batches, so no single transaction holds the database (and, with SQLite, the event
 * loop) for long.
 */
import type { AuditStore } from '../store/store.js';

export interface AuditRetentionOptions {
  retentionMs: number;
  intervalMs?: number;
  /** Delay of the first pass after start (a gateway restarted often still prunes). */
  firstRunMs?: number;
  /** Entries deleted per transaction. */
  batchSize?: number;
  /** Wall clock. Default `Date.now`. */
  now?: () => number;
  onError?: (error: unknown) => void;
}

export class AuditRetention {
  readonly #store: AuditStore;
  readonly #options: AuditRetentionOptions;
  readonly #timers: NodeJS.Timeout[];
  #running: Promise<number> | undefined;
  #closed = false;

  constructor(store: AuditStore, options: AuditRetentionOptions) {
    this.#store = store;
    this.#options = options;
    const run = () => void this.prune().catch((error: unknown) => options.onError?.(error));
    this.#timers = [setInterval(run, options.intervalMs ?? 86_400_000), setTimeout(run, options.firstRunMs ?? 60_000)];
    for (const timer of this.#timers) timer.unref();
  }

  /** Runs one pass now (or joins the one running); resolves with the entries deleted. */
  prune(): Promise<number> {
    this.#running ??= this.#pass().finally(() => {
      this.#running = undefined;
    });
    return this.#running;
  }

  async #pass(): Promise<number> {
    const before = (this.#options.now ?? Date.now)() - this.#options.retentionMs;
    const batch = this.#options.batchSize ?? 1000;
    let total = 0;
    for (let deleted = batch; deleted === batch && !this.#closed; total += deleted) {
      deleted = await this.#store.prune(before, batch);
    }
    return total;
  }

  async close(): Promise<void> {
    this.#closed = true;
    for (const timer of this.#timers) clearTimeout(timer);
    await this.#running?.catch(() => {});
  }
}
