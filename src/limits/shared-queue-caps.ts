/**
 * The admission queue's caps (`GATEHOUSE_MAX_INFLIGHT`, `_PER_MODEL`) counted in the limit store
 * as concurrency slots of two reserved names, so with Redis every replica counts the same slots
 * with the same leases, breaker and per-replica fallback as a key's `concurrent` limit. The names
 * cannot be a key's id (those start with `key_`).
 */
import type { SharedCaps, SharedRefusal, SharedSlot } from '../queue/shared-caps.js';
import type { CountingScope, SlotCounter } from './limit-store.js';

const ALL_MODELS = 'queue:all';
const modelSlots = (model: string): string => `queue:model:${model}`;

/** `limits` is read at each call: the queue is built before the usage subsystem that owns the store. */
export function sharedQueueCaps(
  limitStore: () => SlotCounter & CountingScope,
  caps: { maxInflight: number; maxInflightPerModel: number },
): SharedCaps {
  const take = async (name: string, max: number): Promise<(() => void) | undefined> => {
    const limits = limitStore();
    const decision = await limits.acquire(name, { rpm: null, tpm: null, concurrent: max });
    if (!decision.allowed) return undefined;
    return () => void limits.release(name, decision.lease);
  };
  return {
    scope: () => limitStore().status().scope,
    async acquire(model): Promise<SharedSlot | SharedRefusal> {
      let releaseAll: (() => void) | undefined;
      if (caps.maxInflight > 0) {
        releaseAll = await take(ALL_MODELS, caps.maxInflight);
        if (!releaseAll) return { blocked: 'all' };
      }
      let releaseModel: (() => void) | undefined;
      if (caps.maxInflightPerModel > 0 && model !== undefined) {
        releaseModel = await take(modelSlots(model), caps.maxInflightPerModel);
        if (!releaseModel) {
          releaseAll?.();
          return { blocked: 'model' };
        }
      }
      return {
        release: () => {
          releaseAll?.();
          releaseModel?.();
        },
      };
    },
  };
}
