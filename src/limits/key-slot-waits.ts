/**
 * Calls waiting for one of their key's concurrency slots (`concurrent` limit), in arrival order:
 * the oldest is woken when a slot of its key is given back in this process, and each tries again
 * anyway every `RETRY_MS`, since a slot may be given back by another replica (limits in Redis).
 */
import type { QueueClock, QueuedCall } from '../queue/scheduler.js';

const RETRY_MS = 1000;

/** One call's place in its key's line, kept until it got a slot or gave up. */
export interface SlotTicket {
  /** Resolves at the next chance to try (a slot given back here, or `RETRY_MS`, at most `maxMs`). */
  next(maxMs: number): Promise<void>;
  /** Leaves the line (slot taken, or the call gave up); rejects a `next` in progress with `reason`. */
  leave(reason?: Error): void;
}

interface Entry {
  wake: (() => void) | undefined;
}

/** Where the waiting calls are shown (the admission queue's view). */
export interface WaitingShown {
  holdOutside(call: QueuedCall): () => void;
}

export class KeySlotWaits {
  readonly #clock: QueueClock;
  readonly #shown: WaitingShown | undefined;
  readonly #lines = new Map<string, Entry[]>();

  constructor(clock: QueueClock, shown?: WaitingShown) {
    this.#clock = clock;
    this.#shown = shown;
  }

  now(): number {
    return this.#clock.now();
  }

  /** Whether calls of this key already wait here: a newcomer lines up behind them. */
  has(keyId: string): boolean {
    return (this.#lines.get(keyId)?.length ?? 0) > 0;
  }

  /** Lines `call` up for a slot of `keyId`; it is shown with the queue until it leaves. */
  enter(keyId: string, call?: QueuedCall): SlotTicket {
    const unshow = call ? this.#shown?.holdOutside(call) : undefined;
    const line = this.#lines.get(keyId) ?? [];
    this.#lines.set(keyId, line);
    const entry: Entry = { wake: undefined };
    line.push(entry);
    let fail: ((reason: Error) => void) | undefined;
    return {
      next: (maxMs) =>
        new Promise<void>((resolve, reject) => {
          const timer = this.#clock.setTimeout(() => entry.wake?.(), Math.max(0, Math.min(maxMs, RETRY_MS)));
          entry.wake = () => {
            entry.wake = undefined;
            fail = undefined;
            this.#clock.clearTimeout(timer);
            resolve();
          };
          fail = (reason) => {
            entry.wake = undefined;
            this.#clock.clearTimeout(timer);
            reject(reason);
          };
        }),
      leave: (reason) => {
        unshow?.();
        if (reason) fail?.(reason);
        else entry.wake?.();
        const i = line.indexOf(entry);
        if (i >= 0) line.splice(i, 1);
        if (line.length === 0 && this.#lines.get(keyId) === line) this.#lines.delete(keyId);
      },
    };
  }

  /** A slot of `keyId` was given back: the oldest call in its line tries again now. */
  released(keyId: string): void {
    this.#lines
      .get(keyId)
      ?.find((entry) => entry.wake)
      ?.wake?.();
  }
}
