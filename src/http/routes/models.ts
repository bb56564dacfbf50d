/**
 * Models: llama-swap's state, load and unload from the dashboard, its log streams, and the
 * llama-server compatible `/models*` routes API keys with the manage scope call.
 */
import type { FastifyPluginAsync } from 'fastify';
import { createLogStreamHandler } from '../admin/logs-stream.js';
import { createModelHandlers } from '../admin/models-handlers.js';
import { createManageModelHandlers } from '../manage-models.js';
import type { AdminServices } from '../admin-services.js';

export const modelsRoutes =
  ({ deps, admin, view, dashboard, auditLog, clientAddress, audited, access }: AdminServices): FastifyPluginAsync =>
  async (app) => {
    const models = createModelHandlers({ upstream: admin.llamaSwap, view, logger: deps.logger });
    app.get('/api/upstream', access.readers, models.upstreamStatus);
    // Members pick models for their keys and snippets: names and states only, no load/unload.
    app.get('/api/models', access.everyone, models.list);
    const manage = createManageModelHandlers({
      upstream: admin.llamaSwap,
      keys: deps.keys,
      dashboard,
      logger: deps.logger,
      changed: () => void view.refresh(),
      audit: (request, event) => auditLog.record({ ...event, client: clientAddress(request) }),
      now: deps.now,
    });
    app.get('/models', manage.list);
    app.post('/models/load', manage.load);
    app.post('/models/unload', manage.unload);
    app.post('/api/models/unload-all', access.admins, audited('model.unload_all', models.unloadAll));
    app.post('/api/models/:id/load', access.admins, audited('model.load', models.load));
    app.post('/api/models/:id/unload', access.admins, audited('model.unload', models.unload));
    app.get(
      '/api/logs/stream',
      access.readers,
      createLogStreamHandler({ upstream: admin.llamaSwap, view, gatewayLog: admin.gatewayLog }),
    );
  };
