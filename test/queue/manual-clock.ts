/** A queue clock that moves only when the test says so; due timers run in order. */
import type { QueueClock } from '../../src/queue/scheduler.js';

export class ManualClock implements QueueClock {
  #now = 0;
  #timers: { at: number; run: () => void }[] = [];

  now(): number {
    return this.#now;
  }

  setTimeout(run: () => void, ms: number): unknown {
    const timer = { at: this.#now + ms, run };
    this.#timers.push(timer);
    return timer;
  }

  clearTimeout(handle: unknown): void {
    this.#timers = this.#timers.filter((t) => t !== handle);
  }

  advance(ms: number): void {
    const until = this.#now + ms;
    for (;;) {
      const due = this.#timers.filter((t) => t.at <= until).sort((a, b) => a.at - b.at)[0];
      if (!due) break;
      this.#timers = this.#timers.filter((t) => t !== due);
      this.#now = due.at;
      due.run();
    }
    this.#now = until;
  }
}
