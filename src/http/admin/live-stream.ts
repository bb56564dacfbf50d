/**
 * `GET /api/live`: everything the dashboard follows, on one Server-Sent Events stream, so a
 * browser holds one connection however many pages and tabs it shows (HTTP/1.1 allows six per
 * host). Named events (`LiveEventMap` in src/admin-api/types.ts): llama-swap's status, the model
 * list, the proxy, upstream and Gatehouse logs with their history on connect, gaps with their
 * reason, and the admission queue (throttled). llama-swap's side comes from the shared live view;
 * a new kind of event is one more name in the map.
 */
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { LiveEventMap, LiveEventName } from '../../admin-api/types.js';
import type { UpstreamView } from '../../live/upstream-view.js';
import type { LineBuffer } from '../../logging/line-buffer.js';
import type { Scheduler } from '../../queue/scheduler.js';
import { watchQueue } from './queue-watch.js';

const PING_MS = 15_000;
/** A stream outlives the request that opened it: the session is checked again this often. */
const SESSION_RECHECK_MS = 10_000;

export interface LiveStreamDeps {
  view: UpstreamView;
  gatewayLog: LineBuffer;
  /** The admission queue, sent as `queue` events. */
  queue: Scheduler;
  now?: () => number;
  /** Whether the caller may still follow (a sign-out or password change ends the stream). */
  stillSignedIn: (request: FastifyRequest) => Promise<boolean>;
}

export function createLiveStreamHandler(deps: LiveStreamDeps) {
  return async function liveStream(request: FastifyRequest, reply: FastifyReply): Promise<void> {
    reply.hijack();
    const res = reply.raw;
    res.writeHead(200, {
      'content-type': 'text/event-stream; charset=utf-8',
      'cache-control': 'no-cache',
      'x-accel-buffering': 'no',
      'x-content-type-options': 'nosniff',
    });
    res.flushHeaders();
    const send = <K extends LiveEventName>(event: K, data: LiveEventMap[K]) => {
      if (!res.destroyed) res.write(`event: ${event}\ndata: ${JSON.stringify(data)}\n\n`);
    };
    // The first page to open wakes the view: its snapshot waits until llama-swap was asked once.
    await deps.view.current();
    if (res.destroyed) return;

    // The snapshot and the subscriptions are taken in one turn, so no change falls between them.
    const unwatch = deps.view.watch((event) => send(event.name, event.data));
    const unsubscribe = deps.gatewayLog.subscribe((line) => send('log', { source: 'gateway', text: `${line}\n` }));
    const { upstream, models, logs } = deps.view.snapshot();
    send('upstream', upstream);
    if (models) send('models', models);
    send('history', { source: 'proxy', text: logs.proxy });
    send('history', { source: 'upstream', text: logs.upstream });
    const gatewayHistory = deps.gatewayLog.history();
    send('history', { source: 'gateway', text: gatewayHistory.length > 0 ? `${gatewayHistory.join('\n')}\n` : '' });
    const unwatchQueue = watchQueue(deps.queue, (view) => send('queue', view), deps.now);

    const ping = setInterval(() => res.write(': ping\n\n'), PING_MS);
    const recheck = setInterval(() => {
      void deps.stillSignedIn(request).then(
        (ok) => ok || res.end(),
        () => undefined,
      );
    }, SESSION_RECHECK_MS);
    res.once('close', () => {
      clearInterval(ping);
      clearInterval(recheck);
      unwatch();
      unsubscribe();
      unwatchQueue();
    });
  };
}
