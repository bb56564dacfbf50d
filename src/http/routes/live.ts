/** What every dashboard page reads alongside: the live stream and the gateway's own endpoints. */
import type { FastifyPluginAsync, FastifyRequest } from 'fastify';
import { createEndpointsHandler } from '../admin/endpoints-handlers.js';
import { createLiveStreamHandler } from '../admin/live-stream.js';
import type { AdminServices } from '../admin-services.js';

export const liveRoutes =
  ({ deps, admin, view, identifier, access }: AdminServices): FastifyPluginAsync =>
  async (app) => {
    const stillSignedIn = async (request: FastifyRequest) => (await identifier.identify(request)) !== undefined;
    app.get(
      '/api/live',
      access.readers,
      createLiveStreamHandler({ view, gatewayLog: admin.gatewayLog, queue: deps.queue, now: deps.now, stillSignedIn }),
    );
    app.get(
      '/api/endpoints',
      access.everyone,
      createEndpointsHandler({
        publicUrl: deps.settings.publicUrl,
        keys: deps.keys,
        ollamaPort: deps.settings.ollamaListen?.port,
        ollamaKeyless: deps.settings.ollamaKey !== undefined,
      }),
    );
  };
