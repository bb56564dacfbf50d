/**
 * Follows the admission queue for a stream: the view at once, then after changes at most once per
 * interval. A change inside the interval is sent when it ends, so the last state always arrives.
 */
import type { QueueView } from '../../admin-api/types.js';
import type { Scheduler } from '../../queue/scheduler.js';
import { queueView } from './queue-handlers.js';

/** Four views a second at most: a busy queue changes on every call, a page needs far fewer. */
const QUEUE_SEND_INTERVAL_MS = 250;
/**
 * A forwarded call turns from loading to generating when llama-swap's answer begins, which the
 * queue is not told of: while a call loads, its phase is looked at again this often.
 */
const LOADING_RECHECK_MS = 1000;

const phases = (view: QueueView) => view.inflight.map((c) => `${c.id}:${c.phase}`).join(',');

/** Sends the view now and after each change (throttled); returns the function that stops following. */
export function watchQueue(
  queue: Scheduler,
  send: (view: QueueView) => void,
  now: () => number = Date.now,
  intervalMs = QUEUE_SEND_INTERVAL_MS,
): () => void {
  let lastSent = 0;
  let sentPhases = '';
  let trailing: NodeJS.Timeout | undefined;
  let recheck: NodeJS.Timeout | undefined;
  const sendNow = () => {
    trailing = undefined;
    lastSent = performance.now();
    const view = queueView(queue, now);
    sentPhases = phases(view);
    send(view);
    clearTimeout(recheck);
    recheck = view.inflight.some((c) => c.phase === 'loading')
      ? setTimeout(recheckPhases, LOADING_RECHECK_MS)
      : undefined;
  };
  const changed = () => {
    if (trailing) return;
    const wait = lastSent + intervalMs - performance.now();
    if (wait <= 0) sendNow();
    else trailing = setTimeout(sendNow, wait);
  };
  const recheckPhases = () => {
    if (phases(queueView(queue, now)) !== sentPhases) changed();
    else recheck = setTimeout(recheckPhases, LOADING_RECHECK_MS);
  };
  const unsubscribe = queue.onChange(changed);
  sendNow();
  return () => {
    unsubscribe();
    clearTimeout(trailing);
    clearTimeout(recheck);
  };
}
