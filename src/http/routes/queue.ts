/** The admission queue: calls in flight and waiting, once or as a stream of changes. */
import type { FastifyPluginAsync } from 'fastify';
import { ErrorBody } from '../../admin-api/common.js';
import { QueueView } from '../../admin-api/queue.js';
import { createQueueHandler } from '../admin/queue-handlers.js';
import { createQueueStreamHandler } from '../admin/queue-stream.js';
import type { AdminServices } from '../admin-services.js';

export const queueRoutes =
  ({ deps, access }: AdminServices): FastifyPluginAsync =>
  async (app) => {
    const schema = { response: { 200: QueueView, '4XX': ErrorBody } };
    app.get('/api/queue', { ...access.readers, schema }, createQueueHandler(deps.queue, deps.now));
    app.get('/api/queue/stream', access.readers, createQueueStreamHandler(deps.queue, deps.now));
  };
