/**
 * `GET /api/queue`: the calls llama-swap is serving and the calls waiting their turn, in the order
 * they would go, then the calls waiting for their key's own slots. `scope` says whose calls these
 * are: this replica's (the queue lives in memory); `caps` whether the caps count every replica's.
 */
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { QueueView, QueuedCallView } from '../../admin-api/types.js';
import type { QueueEntry, Scheduler } from '../../queue/scheduler.js';

/** The queue as the admin API shows it; `now` turns the queue's ages into wall-clock times. */
export function queueView(queue: Scheduler, now: () => number = Date.now): QueueView {
  const at = now();
  const view = (entry: QueueEntry): QueuedCallView => ({
    id: entry.id,
    model: entry.model ?? null,
    key: entry.key,
    phase: entry.phase,
    since: new Date(at - entry.ageMs).toISOString(),
    position: entry.position,
    priority: entry.priority,
    ...(entry.waitingFor ? { waitingFor: entry.waitingFor } : {}),
  });
  const entries = queue.snapshot();
  return {
    scope: 'replica',
    caps: queue.capsScope,
    inflight: entries.filter((e) => e.phase !== 'queued').map(view),
    waiting: entries.filter((e) => e.phase === 'queued').map(view),
  };
}

export function createQueueHandler(queue: Scheduler, now: () => number = Date.now) {
  return async function queueSnapshot(_request: FastifyRequest, _reply: FastifyReply): Promise<QueueView> {
    return queueView(queue, now);
  };
}
