/**
 * The `/v1` chain's last step: the call waits in the admission queue for its turn, then goes on
 * to be forwarded. Its slot is given back when the exchange ends, however it ended; a client
 * that leaves while waiting leaves the queue at once and never reaches llama-swap.
 *
 * It also gives the forwarder `requeue`: when llama-swap answers 429 (its own concurrency
 * limits), the call gives its slot back, waits as llama-swap asked (backing off, at most
 * `MAX_BACKOFF_MS`), and queues again for the time it has left, instead of passing the 429 on.
 */
import type { ProxyStep } from '../core/steps.js';
import type { ProxyContext } from '../core/context.js';
import type { Admission, QueuedCall, Scheduler } from './scheduler.js';
import { asksForStream, startKeepAlive } from './stream-keepalive.js';

/** The model llama-swap serves for a name (an alias's model); the name itself when unknown. */
export type ResolveModel = (name: string) => string | Promise<string>;

const FIRST_BACKOFF_MS = 250;
const MAX_BACKOFF_MS = 2000;

/** `keepAliveMs`: `GATEHOUSE_SSE_KEEPALIVE` (0 = off). */
export function queueAdmission(scheduler: Scheduler, resolveModel: ResolveModel, keepAliveMs = 0): ProxyStep {
  const enqueue = (ctx: ProxyContext, model: string | undefined): void | Promise<void> => {
    const caller = ctx.decided.caller;
    const call: QueuedCall = {
      id: ctx.request.requestId,
      model,
      key: caller?.keyId === undefined ? null : { id: caller.keyId, name: caller.keyName ?? '' },
      priority: caller?.priority ?? 0,
      answering: () => ctx.outcome.status !== 0,
    };
    const arrivedAt = scheduler.now();
    const onLeave = (leave: () => void): void => {
      ctx.onClientGone = leave;
    };
    let current: Admission | undefined;
    let busyAnswers = 0;
    let forwardedAt: number | undefined;
    if (keepAliveMs > 0 && asksForStream(ctx)) {
      const keepAlive = startKeepAlive(ctx, keepAliveMs, scheduler.clock, () => {
        const position = scheduler.positionOf(call);
        if (position !== undefined) return `gatehouse queued position=${position}`;
        const elapsedS = Math.round((scheduler.now() - (forwardedAt ?? scheduler.now())) / 1000);
        return `gatehouse loading model=${ctx.decided.model ?? 'unknown'} elapsed=${elapsedS}s`;
      });
      ctx.decided.stopKeepAlive = () => keepAlive.stop();
      ctx.onDone.push(() => keepAlive.stop());
    }

    const admitted = (admission: Admission, extraMs = 0): void => {
      current = admission;
      forwardedAt ??= scheduler.now();
      ctx.decided.queueMs = (ctx.decided.queueMs ?? 0) + admission.waitedMs + extraMs;
      ctx.onClientGone = undefined;
    };
    ctx.onDone.push(() => current?.release());
    ctx.decided.requeue = async (retryAfterMs) => {
      current?.release();
      current = undefined;
      busyAnswers++;
      const backoff = Math.min(MAX_BACKOFF_MS, Math.max(retryAfterMs ?? 0, FIRST_BACKOFF_MS * 2 ** (busyAnswers - 1)));
      const left = scheduler.queueTimeoutMs - (scheduler.now() - arrivedAt);
      if (left <= backoff) return false;
      await scheduler.pause(backoff, onLeave);
      const again = scheduler.admit(call, onLeave, left - backoff);
      admitted(again instanceof Promise ? await again : again, backoff);
      return true;
    };

    const first = scheduler.admit(call, onLeave);
    if (!(first instanceof Promise)) return admitted(first);
    return first.then((a) => admitted(a));
  };

  return function admissionQueue(ctx) {
    const name = ctx.decided.model;
    if (name === undefined) return enqueue(ctx, undefined);
    const model = resolveModel(name);
    return model instanceof Promise ? model.then((m) => enqueue(ctx, m)) : enqueue(ctx, model);
  };
}
