/**
 * Per-key limits: requests per minute, tokens per minute, requests in flight. The `keyLimits`
 * step decides before anything is forwarded (right after `clientAuth`, before the body is read),
 * and answers 429 with `Retry-After` in the caller's wire format.
 *
 * Algorithm (every kind): a SLIDING window of the last 60 s, kept as a log of timestamps.
 * - RPM: the calls accepted in (now - 60 s, now]. The call that would be the N+1st in any 60 s
 *   window is refused; `Retry-After` is when the oldest counted call leaves the window. Exact,
 *   with no burst at window edges (a fixed window allows 2N around a boundary). Refused calls
 *   do not count.
 * - TPM: tokens of calls that finished in the last 60 s, plus RESERVATIONS of calls in flight.
 *   `keyLimits` refuses while that sum is >= N, before the body is read. Once the body is read,
 *   `reserveTokens` (token-reservation.ts) reserves the call's estimate (prompt bytes / 4 +
 *   requested output), atomically with the check that it fits; when the call ends the
 *   reservation is settled: released, and the real count added. So parallel calls cannot all
 *   pass on an empty window; how far they can still go over is in README.md.
 * - Concurrency: calls in flight; the slot is released when the exchange closes (`ctx.onDone`),
 *   however it ended. A call over it waits for a slot (`key-slot-waits.ts`, up to the queue
 *   timeout, then 503 `queue_timeout`) instead of getting a 429; RPM and TPM stay quotas.
 *
 * The counting is the store's (`limit-store.ts`): `MemoryLimitStore` per process, or
 * `RedisLimitStore` shared by every replica.
 */
import { GatewayError } from '../core/errors.js';
import type { ProxyStep } from '../core/steps.js';
import type { KeyLimits } from '../store/records.js';
import type { ProxyContext } from '../core/context.js';
import type { KeySlotWaits } from './key-slot-waits.js';
import type { LimitDecision, LimitKind, SlotCounter } from './limit-store.js';
import { limitRefusal, refuseWithHeaders, type RateLimitHeaders } from './limit-refusal.js';

/**
 * `keyLimits`: refuses a call over its key's limits with 429 and `Retry-After` (whole seconds,
 * at least 1). Open mode and keys without limits pass untouched.
 */
export function keyLimits(
  store: SlotCounter,
  onLimited?: (keyName: string | undefined, limit: LimitKind) => void,
  slots?: { waits: KeySlotWaits; queueTimeoutMs: number },
  headers?: RateLimitHeaders,
): ProxyStep {
  return function keyLimitsStep(ctx) {
    const caller = ctx.decided.caller;
    const limits = caller?.limits;
    const keyId = caller?.keyId;
    if (!limits || keyId === undefined || (limits.rpm === null && limits.tpm === null && limits.concurrent === null))
      return;
    const admitted = (decision: LimitDecision & { allowed: true }): void => {
      if (!decision.slot) return;
      const lease = decision.lease;
      ctx.onDone.push(() => {
        void Promise.resolve(store.release(keyId, lease))
          .catch(() => {})
          .then(() => slots?.waits.released(keyId));
      });
    };
    const refuse = (decision: LimitDecision & { allowed: false }): never | Promise<never> => {
      onLimited?.(caller.keyName, decision.limit);
      return refuseWithHeaders(ctx, limitRefusal(decision), decision.limit === 'concurrent' ? undefined : headers);
    };
    const refused = (error: unknown): Promise<never> | never => {
      if (isRefusal(error)) return refuse(error.decision);
      throw error;
    };
    const apply = (decision: LimitDecision): void | Promise<void> => {
      if (decision.allowed) return admitted(decision);
      if (decision.limit !== 'concurrent' || !slots) return refuse(decision);
      return waitForSlot(ctx, keyId, limits, slots, store).then(admitted, refused);
    };
    if (limits.concurrent !== null && slots?.waits.has(keyId))
      return waitForSlot(ctx, keyId, limits, slots, store).then(admitted, refused);
    const decision = store.acquire(keyId, limits);
    if (decision instanceof Promise) return decision.then(apply);
    return apply(decision);
  };
}

/** Another of the key's limits (RPM, TPM) refused the call while it waited for a slot. */
class Refusal extends Error {
  constructor(readonly decision: LimitDecision & { allowed: false }) {
    super('refused');
  }
}
function isRefusal(error: unknown): error is Refusal {
  return error instanceof Refusal;
}

/**
 * A key's `concurrent` limit makes a call wait, not fail: it waits for a slot of its key (given
 * back here, or by another replica), up to the queue timeout, then 503 `queue_timeout`. The time
 * counts as queue time (`x-gatehouse-queue-ms`). A client that leaves stops waiting.
 */
async function waitForSlot(
  ctx: ProxyContext,
  keyId: string,
  limits: KeyLimits,
  slots: { waits: KeySlotWaits; queueTimeoutMs: number },
  store: SlotCounter,
): Promise<LimitDecision & { allowed: true }> {
  const { waits, queueTimeoutMs } = slots;
  const start = waits.now();
  const caller = ctx.decided.caller;
  const ticket = waits.enter(keyId, {
    id: ctx.request.requestId,
    model: undefined,
    key: { id: keyId, name: caller?.keyName ?? '' },
    priority: caller?.priority ?? 0,
  });
  ctx.onClientGone = () =>
    ticket.leave(new GatewayError('service_unavailable', { message: 'The client left while the call waited.' }));
  try {
    for (;;) {
      const left = queueTimeoutMs - (waits.now() - start);
      if (left <= 0)
        throw new GatewayError('queue_timeout', {
          message:
            `The call waited ${Math.round(queueTimeoutMs / 1000)} s for one of its key's ${limits.concurrent} ` +
            'slots (GATEHOUSE_QUEUE_TIMEOUT) and was not sent to the model.',
          headers: { 'retry-after': '10' },
        });
      await ticket.next(left);
      const decision = await store.acquire(keyId, limits);
      if (decision.allowed) return decision;
      if (decision.limit !== 'concurrent') throw new Refusal(decision);
    }
  } finally {
    ticket.leave();
    ctx.onClientGone = undefined;
    ctx.decided.queueMs = (ctx.decided.queueMs ?? 0) + (waits.now() - start);
  }
}
