/**
 * Follows the admission queue for a stream: the view at once, then after changes at most once per
 * interval. A change inside the interval is sent when it ends, so the last state always arrives.
 */
import type { QueueView } from '../../admin-api/types.js';
import type { Scheduler } from '../../queue/scheduler.js';
import { queueView } from './queue-handlers.js';

/** Four views a second at most: a busy queue changes on every call, a page needs far fewer. */
const QUEUE_SEND_INTERVAL_MS = 250;

/** Sends the view now and after each change (throttled); returns the function that stops following. */
export function watchQueue(
  queue: Scheduler,
  send: (view: QueueView) => void,
  now: () => number = Date.now,
  intervalMs = QUEUE_SEND_INTERVAL_MS,
): () => void {
  let lastSent = 0;
  let trailing: NodeJS.Timeout | undefined;
  const sendNow = () => {
    trailing = undefined;
    lastSent = performance.now();
    send(queueView(queue, now));
  };
  const changed = () => {
    if (trailing) return;
    const wait = lastSent + intervalMs - performance.now();
    if (wait <= 0) sendNow();
    else trailing = setTimeout(sendNow, wait);
  };
  const unsubscribe = queue.onChange(changed);
  sendNow();
  return () => {
    unsubscribe();
    clearTimeout(trailing);
  };
}
