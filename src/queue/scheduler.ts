/**
 * The admission queue in front of llama-swap: a call is forwarded when it fits the caps (all
 * models together, per model), otherwise it waits. Who goes next: higher key priority; then,
 * among equal priority, a call for a model that is loaded right now before one that would make
 * llama-swap swap, unless the oldest waiting call has waited past the fairness window; then
 * arrival. A call waits at most the queue timeout, no more than `queueMax` wait at once, and no
 * more than `queueMaxPerKey` of one key, so one greedy key cannot fill the queue for everyone.
 */
import { shareHolder } from '../core/context.js';
import { GatewayError } from '../core/errors.js';
import { SHARED_RETRY_MS, type SharedCaps, type SharedRefusal, type SharedSlot } from './shared-caps.js';

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
  /**
   * Most calls of one key waiting at once (calls without a key are not counted); one more gets 503
   * `queue_full` at once. Undefined: half of `queueMax`, at least 1; 0: no share, only `queueMax`.
   */
  queueMaxPerKey?: number | undefined;
  clock?: QueueClock;
  /** The caps counted by every replica together (Redis); without it, by this process alone. */
  shared?: SharedCaps;
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
  /** `owner`: the person the key belongs to; their keys share one share of the waiting calls. */
  key: { id: string; name: string; owner?: string | undefined } | null;
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
  /** 1 = next; null once forwarded, or while it waits for its key's own slots. */
  position: number | null;
  /** What a queued call waits for: its turn here, or one of its key's `concurrent` slots. */
  waitingFor?: 'turn' | 'key';
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
  readonly #perKeyMax: number;
  readonly #clock: QueueClock;
  readonly #waiting: Waiter[] = [];
  readonly #running = new Set<Running>();
  readonly #perModel = new Map<string, number>();
  /** Calls waiting for their key's own slots before they reach this queue; shown with it. */
  readonly #outside = new Map<QueuedCall, number>();
  /** What llama-swap reports running; undefined until it has been told (then the last model admitted counts). */
  #loaded: ReadonlySet<string> | undefined;
  readonly #listeners = new Set<() => void>();
  #lastModel: string | undefined;
  /** A shared-count pass is running (one at a time); `#pumpAgain`: something changed meanwhile. */
  #claiming = false;
  #pumpAgain = false;
  #retryTimer: unknown;

  constructor(options: SchedulerOptions) {
    this.#options = options;
    this.#perKeyMax = options.queueMaxPerKey ?? Math.max(1, Math.floor(options.queueMax / 2));
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

  /** The models llama-swap runs now (its `/running`); until it is known, the last model admitted counts as loaded. */
  setLoaded(models: ReadonlySet<string>): void {
    this.#loaded = models;
    this.#changed();
    this.#pump();
  }

  /** Whether any cap is set (without one, no call ever waits). */
  get capped(): boolean {
    return this.#options.maxInflight > 0 || this.#options.maxInflightPerModel > 0;
  }

  /** Whose calls the caps count: every replica's (shared through Redis) or this one's. */
  get capsScope(): 'shared' | 'replica' {
    return this.#options.shared?.scope() ?? 'replica';
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
    if (this.#waiting.length === 0 && this.#fits(call) && !this.#sharesCaps()) return this.#start(call, 0);
    if (this.#waiting.length >= this.#options.queueMax)
      throw new GatewayError('queue_full', { headers: { 'retry-after': String(QUEUE_FULL_RETRY_S) } });
    if (this.#overShare(call.key))
      throw new GatewayError('queue_full', {
        message:
          `This API key already has ${this.#perKeyMax} calls waiting for the models ` +
          '(GATEHOUSE_QUEUE_MAX_PER_KEY); this one was not queued.',
        headers: { 'retry-after': String(QUEUE_FULL_RETRY_S) },
      });
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

  /**
   * Shows a call that waits for one of its key's `concurrent` slots (before it reaches this
   * queue) among the waiting calls; returns the function that takes it off.
   */
  holdOutside(call: QueuedCall): () => void {
    this.#outside.set(call, this.#clock.now());
    this.#changed();
    return () => {
      if (this.#outside.delete(call)) this.#changed();
    };
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
        call.answering?.() || (call.model !== undefined && this.#loaded?.has(call.model)) ? 'generating' : 'loading',
      ageMs: now - since,
      position: null,
    }));
    const waiting = this.#order().map((w, i): QueueEntry => ({
      ...w.call,
      phase: 'queued',
      ageMs: now - w.arrivedAt,
      position: i + 1,
      waitingFor: 'turn',
    }));
    const forKey = [...this.#outside].map(([call, since]): QueueEntry => ({
      ...call,
      phase: 'queued',
      ageMs: now - since,
      position: null,
      waitingFor: 'key',
    }));
    return [...forwarded, ...waiting, ...forKey];
  }

  #fits(call: QueuedCall): boolean {
    const { maxInflight, maxInflightPerModel } = this.#options;
    if (maxInflight > 0 && this.#running.size >= maxInflight) return false;
    if (maxInflightPerModel > 0 && call.model !== undefined)
      return (this.#perModel.get(call.model) ?? 0) < maxInflightPerModel;
    return true;
  }

  /**
   * Whether the key already has its share of the waiting calls: counted over all keys of its owner,
   * so a person cannot multiply their share by making more keys.
   */
  #overShare(key: QueuedCall['key']): boolean {
    if (key === null || this.#perKeyMax === 0) return false;
    const sharer = shareOf(key);
    let waiting = 0;
    for (const w of this.#waiting) {
      if (w.call.key !== null && shareOf(w.call.key) === sharer && ++waiting >= this.#perKeyMax) return true;
    }
    return false;
  }

  /** Whether a call must also take a slot in the replicas' shared count. */
  #sharesCaps(): boolean {
    return this.#options.shared !== undefined && this.capped;
  }

  #start(call: QueuedCall, waitedMs: number, slot?: SharedSlot): Admission {
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
        slot?.release();
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
    if (this.#sharesCaps()) return void this.#pumpShared(this.#options.shared!);
    while (this.#waiting.length > 0) {
      const next = this.#order().find((w) => this.#fits(w.call));
      if (!next) return;
      this.#remove(next);
      next.admit(this.#start(next.call, this.#clock.now() - next.arrivedAt));
    }
  }

  /**
   * Admits waiting calls, best first, while they fit here and take a slot in the shared count.
   * A call whose model's cap is full everywhere is passed over for calls of other models; when
   * the cap on all models is full, the pass ends and tries again in `SHARED_RETRY_MS`.
   */
  async #pumpShared(shared: SharedCaps): Promise<void> {
    if (this.#claiming) {
      this.#pumpAgain = true;
      return;
    }
    this.#claiming = true;
    try {
      do {
        this.#pumpAgain = false;
        const fullModels = new Set<string | undefined>();
        for (;;) {
          const next = this.#order().find((w) => this.#fits(w.call) && !fullModels.has(w.call.model));
          if (!next) break;
          const got = await shared.acquire(next.call.model).catch((): SharedRefusal => ({ blocked: 'all' }));
          if ('blocked' in got) {
            this.#retryLater();
            if (got.blocked === 'all') break;
            fullModels.add(next.call.model);
            continue;
          }
          if (!this.#remove(next)) {
            got.release();
            continue;
          }
          next.admit(this.#start(next.call, this.#clock.now() - next.arrivedAt, got));
        }
      } while (this.#pumpAgain);
    } finally {
      this.#claiming = false;
    }
  }

  #retryLater(): void {
    if (this.#retryTimer !== undefined) return;
    this.#retryTimer = this.#clock.setTimeout(() => {
      this.#retryTimer = undefined;
      if (this.#waiting.length > 0) this.#pump();
    }, SHARED_RETRY_MS);
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
    if (model === undefined) return false;
    return this.#loaded ? this.#loaded.has(model) : model === this.#lastModel;
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

function shareOf(key: NonNullable<QueuedCall['key']>): string {
  return shareHolder(key.id, key.owner);
}
