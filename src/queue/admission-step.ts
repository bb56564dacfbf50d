/**
 * The `/v1` chain's last step: the call waits in the admission queue for its turn, then goes on
 * to be forwarded. Its slot is given back when the exchange ends, however it ended; a client
 * that leaves while waiting leaves the queue at once and never reaches llama-swap.
 */
import type { ProxyStep } from '../core/steps.js';
import type { ProxyContext } from '../core/context.js';
import type { Admission, QueuedCall, Scheduler } from './scheduler.js';

/** The model llama-swap serves for a name (an alias's model); the name itself when unknown. */
export type ResolveModel = (name: string) => string | Promise<string>;

export function queueAdmission(scheduler: Scheduler, resolveModel: ResolveModel): ProxyStep {
  const admitted = (ctx: ProxyContext, admission: Admission): void => {
    ctx.decided.queueMs = admission.waitedMs;
    ctx.onClientGone = undefined;
    ctx.onDone.push(() => admission.release());
  };
  const enqueue = (ctx: ProxyContext, model: string | undefined): void | Promise<void> => {
    const caller = ctx.decided.caller;
    const call: QueuedCall = {
      id: ctx.request.requestId,
      model,
      key: caller?.keyId === undefined ? null : { id: caller.keyId, name: caller.keyName ?? '' },
      priority: caller?.priority ?? 0,
      answering: () => ctx.outcome.status !== 0,
    };
    const admission = scheduler.admit(call, (leave) => (ctx.onClientGone = leave));
    if (!(admission instanceof Promise)) return admitted(ctx, admission);
    return admission.then((a) => admitted(ctx, a));
  };

  return function admissionQueue(ctx) {
    const name = ctx.decided.model;
    if (name === undefined) return enqueue(ctx, undefined);
    const model = resolveModel(name);
    return model instanceof Promise ? model.then((m) => enqueue(ctx, m)) : enqueue(ctx, model);
  };
}
