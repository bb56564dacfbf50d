/**
 * The admission queue in front of llama-swap: a call is forwarded when it fits the caps (all
 * models together, per model), otherwise it waits. Who goes next: higher key priority; then,
 * among equal priority, a call for a model that is loaded right now before one that would make
 * llama-swap swap, unless the oldest waiting call has waited past the fairness window; then
 * arrival. A call waits at most the queue timeout, and no more than `queueMax` wait at once.
 */
import { GatewayError } from '../core/errors.js';

export interface SchedulerOptions {
  /** Calls forwarded at once, all models together; 0 = no cap. */
  maxInflight: number;
  /** Calls forwarded at once per model (aliases count as their model); 0 = no cap. */
  maxInflightPerModel: number;
  /** How long a call may be passed over for calls to the loaded model. */
  swapFairnessMs: number;
  /** Longest wait; then 503 `queue_timeout`. */
  queueTimeoutMs: number;
  /** Most calls waiting at once; one more gets 503 `queue_full` at once. */
  queueMax: number;
  clock?: QueueClock;
}

/** Time for the queue; tests give a clock they move by hand. */
export interface QueueClock {
  now(): number;
  setTimeout(run: () => void, ms: number): unknown;
  clearTimeout(handle: unknown): void;
}

export const systemClock: QueueClock = {
  now: () => performance.now(),
  setTimeout: (run, ms) => setTimeout(run, ms).unref(),
  clearTimeout: (handle) => clearTimeout(handle as NodeJS.Timeout),
};

/** What the queue needs to know of a call. */
export interface QueuedCall {
  id: string;
  /** The model llama-swap will serve (an alias resolved to its model); undefined when the call names none. */
  model: string | undefined;
  key: { id: string; name: string } | null;
  /** -10..10; higher goes first. */
  priority: number;
  /** Whether llama-swap's answer has begun (the model is up); for the queue's view only. */
  answering?: () => boolean;
}

/** Waiting here; forwarded while llama-swap loads its model; forwarded with the model up or answering. */
export type CallPhase = 'queued' | 'loading' | 'generating';

/** A call the queue holds, as `/api/queue` shows it. */
export interface QueueEntry extends QueuedCall {
  phase: CallPhase;
  /** How long ago it arrived (waiting) or was forwarded, ms. */
  ageMs: number;
  /** 1 = next; null once forwarded. */
  position: number | null;
}

/** A call let through: release it once its exchange has ended, however it ended. */
export interface Admission {
  readonly waitedMs: number;
  release(): void;
}

interface Waiter {
  call: QueuedCall;
  arrivedAt: number;
  admit: (admission: Admission) => void;
  refuse: (error: GatewayError) => void;
  timer: unknown;
}

interface Running {
  call: QueuedCall;
  since: number;
}

/** `Retry-After` for a full queue: the queue drains at the speed of the model, so come back a bit later. */
const QUEUE_FULL_RETRY_S = 10;

export class Scheduler {
  readonly #options: SchedulerOptions;
  readonly #clock: QueueClock;
  readonly #waiting: Waiter[] = [];
  readonly #running = new Set<Running>();
  readonly #perModel = new Map<string, number>();
  #loaded: ReadonlySet<string> = new Set();
  readonly #listeners = new Set<() => void>();
  #lastModel: string | undefined;

  constructor(options: SchedulerOptions) {
    this.#options = options;
    this.#clock = options.clock ?? systemClock;
  }

  get waitingCount(): number {
    return this.#waiting.length;
  }

  /** Calls `listener` whenever a call starts waiting, is let through, leaves or ends; returns the remover. */
  onChange(listener: () => void): () => void {
    this.#listeners.add(listener);
    return () => this.#listeners.delete(listener);
  }

  /** The models llama-swap runs now (its `/running`); the last model admitted counts too. */
  setLoaded(models: ReadonlySet<string>): void {
    this.#loaded = models;
    this.#pump();
  }

  /** Longest wait in the queue, ms. */
  get queueTimeoutMs(): number {
    return this.#options.queueTimeoutMs;
  }

  /** The queue clock's time, ms. */
  now(): number {
    return this.#clock.now();
  }

  /**
   * Lets the call through now (a plain value, no promise, when it fits and nobody waits), or
   * queues it for at most `timeoutMs` (default: the queue timeout). `onLeave` receives the
   * function that takes it out of the queue if its client goes away while it waits.
   */
  admit(
    call: QueuedCall,
    onLeave?: (leave: () => void) => void,
    timeoutMs = this.#options.queueTimeoutMs,
  ): Admission | Promise<Admission> {
    if (this.#waiting.length === 0 && this.#fits(call)) return this.#start(call, 0);
    if (this.#waiting.length >= this.#options.queueMax)
      throw new GatewayError('queue_full', { headers: { 'retry-after': String(QUEUE_FULL_RETRY_S) } });
    return new Promise<Admission>((admit, refuse) => {
      const waiter: Waiter = { call, arrivedAt: this.#clock.now(), admit, refuse, timer: undefined };
      waiter.timer = this.#clock.setTimeout(() => this.#timeout(waiter), timeoutMs);
      this.#waiting.push(waiter);
      onLeave?.(() => this.#leave(waiter));
      this.#changed();
      this.#pump();
    });
  }

  /** Resolves after `ms` on the queue clock; `onLeave` receives the function that ends it early (rejected). */
  pause(ms: number, onLeave?: (leave: () => void) => void): Promise<void> {
    return new Promise<void>((resolve, reject) => {
      const timer = this.#clock.setTimeout(resolve, ms);
      onLeave?.(() => {
        this.#clock.clearTimeout(timer);
        reject(new GatewayError('service_unavailable', { message: 'The client left while the call waited.' }));
      });
    });
  }

  /** The place of a waiting call (1 = next), or undefined when it does not wait. */
  positionOf(call: QueuedCall): number | undefined {
    const i = this.#order().findIndex((w) => w.call === call);
    return i < 0 ? undefined : i + 1;
  }

  /** The queue's clock, for timers that belong with it. */
  get clock(): QueueClock {
    return this.#clock;
  }

  /** Forwarded calls, then waiting calls in the order they would go. */
  snapshot(): QueueEntry[] {
    const now = this.#clock.now();
    const forwarded = [...this.#running].map(({ call, since }): QueueEntry => ({
      ...call,
      phase:
        call.answering?.() || (call.model !== undefined && this.#loaded.has(call.model)) ? 'generating' : 'loading',
      ageMs: now - since,
      position: null,
    }));
    const waiting = this.#order().map((w, i): QueueEntry => ({
      ...w.call,
      phase: 'queued',
      ageMs: now - w.arrivedAt,
      position: i + 1,
    }));
    return [...forwarded, ...waiting];
  }

  #fits(call: QueuedCall): boolean {
    const { maxInflight, maxInflightPerModel } = this.#options;
    if (maxInflight > 0 && this.#running.size >= maxInflight) return false;
    if (maxInflightPerModel > 0 && call.model !== undefined)
      return (this.#perModel.get(call.model) ?? 0) < maxInflightPerModel;
    return true;
  }

  #start(call: QueuedCall, waitedMs: number): Admission {
    const entry: Running = { call, since: this.#clock.now() };
    this.#running.add(entry);
    this.#changed();
    if (call.model !== undefined) {
      this.#perModel.set(call.model, (this.#perModel.get(call.model) ?? 0) + 1);
      this.#lastModel = call.model;
    }
    let released = false;
    return {
      waitedMs,
      release: () => {
        if (released) return;
        released = true;
        this.#running.delete(entry);
        if (call.model !== undefined) {
          const left = (this.#perModel.get(call.model) ?? 1) - 1;
          if (left > 0) this.#perModel.set(call.model, left);
          else this.#perModel.delete(call.model);
        }
        this.#changed();
        this.#pump();
      },
    };
  }

  /** Admits waiting calls, best first, while they fit. */
  #pump(): void {
    while (this.#waiting.length > 0) {
      const next = this.#order().find((w) => this.#fits(w.call));
      if (!next) return;
      this.#remove(next);
      next.admit(this.#start(next.call, this.#clock.now() - next.arrivedAt));
    }
  }

  /** The waiting calls in the order they would be let through. */
  #order(): Waiter[] {
    const now = this.#clock.now();
    const { swapFairnessMs } = this.#options;
    return [...this.#waiting].sort((a, b) => {
      if (a.call.priority !== b.call.priority) return b.call.priority - a.call.priority;
      const aOverdue = now - a.arrivedAt > swapFairnessMs;
      const bOverdue = now - b.arrivedAt > swapFairnessMs;
      if (aOverdue !== bOverdue) return aOverdue ? -1 : 1;
      if (!aOverdue) {
        const aLoaded = this.#isLoaded(a.call.model);
        const bLoaded = this.#isLoaded(b.call.model);
        if (aLoaded !== bLoaded) return aLoaded ? -1 : 1;
      }
      return a.arrivedAt - b.arrivedAt;
    });
  }

  #isLoaded(model: string | undefined): boolean {
    return model !== undefined && (this.#loaded.has(model) || model === this.#lastModel);
  }

  #timeout(waiter: Waiter): void {
    if (!this.#remove(waiter)) return;
    const waitedS = Math.round((this.#clock.now() - waiter.arrivedAt) / 1000);
    waiter.refuse(
      new GatewayError('queue_timeout', {
        message: `The call waited ${waitedS} s for its turn (GATEHOUSE_QUEUE_TIMEOUT) and was not sent to the model.`,
        headers: { 'retry-after': String(QUEUE_FULL_RETRY_S) },
      }),
    );
  }

  #leave(waiter: Waiter): void {
    if (!this.#remove(waiter)) return;
    waiter.refuse(new GatewayError('service_unavailable', { message: 'The client left while the call waited.' }));
    this.#pump();
  }

  #remove(waiter: Waiter): boolean {
    const i = this.#waiting.indexOf(waiter);
    if (i < 0) return false;
    this.#waiting.splice(i, 1);
    this.#clock.clearTimeout(waiter.timer);
    this.#changed();
    return true;
  }

  #changed(): void {
    if (this.#listeners.size === 0) return;
    for (const listener of this.#listeners) listener();
  }
}
