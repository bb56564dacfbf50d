/** The admission queue: calls in flight and waiting, once or as a stream of changes. */
import type { FastifyPluginAsync } from 'fastify';
import { createQueueHandler } from '../admin/queue-handlers.js';
import { createQueueStreamHandler } from '../admin/queue-stream.js';
import type { AdminServices } from '../admin-services.js';

export const queueRoutes =
  ({ deps, access }: AdminServices): FastifyPluginAsync =>
  async (app) => {
    app.get('/api/queue', access.readers, createQueueHandler(deps.queue, deps.now));
    app.get('/api/queue/stream', access.readers, createQueueStreamHandler(deps.queue, deps.now));
  };
