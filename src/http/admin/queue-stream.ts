/**
 * `GET /api/queue/stream`: the admission queue as Server-Sent Events for tools outside the
 * dashboard: `event: queue` with a `QueueView` on connect and after changes (throttled), and a
 * `: ping` comment every 15 s so proxies keep the connection open.
 */
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { Scheduler } from '../../queue/scheduler.js';
import { watchQueue } from './queue-watch.js';

const PING_MS = 15_000;

export function createQueueStreamHandler(queue: Scheduler, now: () => number = Date.now) {
  return async function queueStream(_request: FastifyRequest, reply: FastifyReply): Promise<void> {
    reply.hijack();
    const res = reply.raw;
    res.writeHead(200, {
      'content-type': 'text/event-stream; charset=utf-8',
      'cache-control': 'no-cache',
      'x-accel-buffering': 'no',
      'x-content-type-options': 'nosniff',
    });
    res.flushHeaders();
    const unwatch = watchQueue(
      queue,
      (view) => {
        if (!res.destroyed) res.write(`event: queue\ndata: ${JSON.stringify(view)}\n\n`);
      },
      now,
    );
    const ping = setInterval(() => res.write(': ping\n\n'), PING_MS);
    res.once('close', () => {
      clearInterval(ping);
      unwatch();
    });
  };
}
