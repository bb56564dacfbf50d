/**
 * The `/v1` chain's last step: the call waits in the admission queue for its turn, then goes on
 * to be forwarded. Its slot is given back when the exchange ends, however it ended; a client
 * that leaves while waiting leaves the queue at once and never reaches llama-swap.
 *
 * The call's place (`ctx.decided.queue`) lets the forwarder `requeue` it: when llama-swap answers
 * 429 (its own concurrency limits), the call gives its slot back, waits as llama-swap asked
 * (backing off, at most `MAX_BACKOFF_MS`), and queues again for the time it has left, instead of
 * passing the 429 on.
 */
import type { ProxyStep } from '../core/steps.js';
import type { ProxyContext, QueuePlace } from '../core/context.js';
import type { Admission, QueuedCall, Scheduler } from './scheduler.js';
import { asksForStream, startKeepAlive, type KeepAlive } from './stream-keepalive.js';

/** The model llama-swap serves for a name (an alias's model); the name itself when unknown. */
export type ResolveModel = (name: string) => string | Promise<string>;

const FIRST_BACKOFF_MS = 250;
const MAX_BACKOFF_MS = 2000;

/** `keepAliveMs`: `GATEHOUSE_SSE_KEEPALIVE` (0 = off). */
export function queueAdmission(scheduler: Scheduler, resolveModel: ResolveModel, keepAliveMs = 0): ProxyStep {
  const enqueue = (ctx: ProxyContext, model: string | undefined): void | Promise<void> => {
    const place = new Place(scheduler, ctx, model);
    ctx.decided.queue = place;
    ctx.onDone.push(releaseSlot);
    if (keepAliveMs > 0 && asksForStream(ctx)) place.keepAlive(keepAliveMs);
    return place.enter();
  };

  return function admissionQueue(ctx) {
    const name = ctx.decided.model;
    if (name === undefined) return enqueue(ctx, undefined);
    const model = resolveModel(name);
    return model instanceof Promise ? model.then((m) => enqueue(ctx, m)) : enqueue(ctx, model);
  };
}

/** Gives the call's slot back when its exchange has ended (one function for every call). */
function releaseSlot(ctx: ProxyContext): void {
  (ctx.decided.queue as Place | undefined)?.release();
}

/** One call's place in the queue: its slot while forwarded, its 429 retries, its keep-alive comments. */
class Place implements QueuePlace {
  readonly #scheduler: Scheduler;
  readonly #ctx: ProxyContext;
  readonly #call: QueuedCall;
  readonly #arrivedAt: number;
  #admission: Admission | undefined;
  #busyAnswers = 0;
  #forwardedAt: number | undefined;
  #keepAlive: KeepAlive | undefined;

  constructor(scheduler: Scheduler, ctx: ProxyContext, model: string | undefined) {
    this.#scheduler = scheduler;
    this.#ctx = ctx;
    const caller = ctx.decided.caller;
    this.#call = {
      id: ctx.request.requestId,
      model,
      key: caller?.keyId === undefined ? null : { id: caller.keyId, name: caller.keyName ?? '', owner: caller.ownerId },
      priority: caller?.priority ?? 0,
      answering: () => ctx.outcome.status !== 0,
    };
    this.#arrivedAt = scheduler.now();
  }

  /** Waits for the call's turn: at once when it fits, else in line for at most `timeoutMs`. */
  enter(timeoutMs?: number, extraMs = 0): void | Promise<void> {
    const admission = this.#scheduler.admit(this.#call, this.#onLeave, timeoutMs);
    if (!(admission instanceof Promise)) return this.#admitted(admission, extraMs);
    return admission.then((a) => this.#admitted(a, extraMs));
  }

  async requeue(retryAfterMs: number | undefined): Promise<boolean> {
    const scheduler = this.#scheduler;
    this.release();
    this.#busyAnswers++;
    const backoff = Math.min(
      MAX_BACKOFF_MS,
      Math.max(retryAfterMs ?? 0, FIRST_BACKOFF_MS * 2 ** (this.#busyAnswers - 1)),
    );
    const left = scheduler.queueTimeoutMs - (scheduler.now() - this.#arrivedAt);
    if (left <= backoff) return false;
    await scheduler.pause(backoff, this.#onLeave);
    await this.enter(left - backoff, backoff);
    return true;
  }

  release(): void {
    this.#admission?.release();
    this.#admission = undefined;
  }

  keepAlive(intervalMs: number): void {
    const scheduler = this.#scheduler;
    this.#keepAlive = startKeepAlive(this.#ctx, intervalMs, scheduler.clock, () => {
      const position = scheduler.positionOf(this.#call);
      if (position !== undefined) return `gatehouse queued position=${position}`;
      const elapsedS = Math.round((scheduler.now() - (this.#forwardedAt ?? scheduler.now())) / 1000);
      return `gatehouse loading model=${this.#ctx.decided.model ?? 'unknown'} elapsed=${elapsedS}s`;
    });
    this.#ctx.onDone.push(stopKeepAlive);
  }

  stopKeepAlive(): void {
    this.#keepAlive?.stop();
  }

  /** While the call waits, the client leaving takes it out of line. */
  readonly #onLeave = (leave: () => void): void => {
    this.#ctx.onClientGone = leave;
  };

  #admitted(admission: Admission, extraMs: number): void {
    const { decided } = this.#ctx;
    this.#admission = admission;
    this.#forwardedAt ??= this.#scheduler.now();
    decided.queueMs = (decided.queueMs ?? 0) + admission.waitedMs + extraMs;
    this.#ctx.onClientGone = undefined;
  }
}

function stopKeepAlive(ctx: ProxyContext): void {
  ctx.decided.queue?.stopKeepAlive();
}
