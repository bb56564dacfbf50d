/**
 * Tells the admission queue which models llama-swap runs now, so calls for them go before calls
 * that would make it swap. The view is followed only while calls wait (it lingers a while after),
 * so a gateway whose queue never fills adds no subscription to llama-swap.
 */
import type { Model } from '../admin-api/types.js';
import type { Scheduler } from '../queue/scheduler.js';
import type { UpstreamView } from './upstream-view.js';

/** Models that are up or coming up: a call for one of them causes no swap. */
function loadedModels(models: readonly Model[]): Set<string> {
  return new Set(models.filter((m) => m.state === 'ready' || m.state === 'starting').map((m) => m.id));
}

/** Starts feeding; returns the function that stops it. */
export function feedLoadedModels(queue: Scheduler, view: UpstreamView): () => void {
  let unwatch: (() => void) | undefined;
  const follow = (): void => {
    if (queue.waitingCount > 0 && !unwatch) {
      unwatch = view.watch((event) => {
        if (event.name === 'models' && event.data.reachable) queue.setLoaded(loadedModels(event.data.models));
      });
      const known = view.snapshot().models;
      if (known?.reachable) queue.setLoaded(loadedModels(known.models));
    } else if (queue.waitingCount === 0 && unwatch) {
      unwatch();
      unwatch = undefined;
    }
  };
  const stopFollowing = queue.onChange(follow);
  return () => {
    stopFollowing();
    unwatch?.();
    unwatch = undefined;
  };
}
