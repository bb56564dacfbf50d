/**
 * Admin API for llama-swap's models: the list and llama-swap's status, answered from the shared
 * live view (so polling dashboards add no request to llama-swap), and load, unload, unload all,
 * after which the view reads the list again. An unreachable llama-swap is reported as such
 * (`reachable: false`), never as an empty list. Load and unloads are audited (`audited.ts`).
 */
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { Logger } from 'pino';
import type { ModelList, ModelStateChange, UpstreamInfo } from '../../admin-api/types.js';
import type { UpstreamView } from '../../live/upstream-view.js';
import type { Upstream } from '../../management-client/upstream.js';
import { GatewayError } from '../../core/errors.js';
import { modelIdProblem } from '../../management-client/model-id.js';
import { startLoad, upstreamActionError } from '../model-actions.js';
import type { AuditedHandler, AuditScope } from './audited.js';

type Handler = (request: FastifyRequest, reply: FastifyReply) => Promise<unknown>;

export function createModelHandlers(deps: { upstream: Upstream; view: UpstreamView; logger: Logger }): {
  upstreamStatus: Handler;
  list: Handler;
  load: AuditedHandler;
  unload: AuditedHandler;
  unloadAll: AuditedHandler;
} {
  const { upstream, view, logger } = deps;
  const idParam = (request: FastifyRequest, audit: AuditScope) => {
    const id = (request.params as { id?: string }).id ?? '';
    const problem = modelIdProblem(id);
    if (problem !== undefined)
      throw new GatewayError('bad_request', {
        message: 'This is not a model id llama-swap can be asked about.',
        details: [{ path: '/id', message: problem }],
      });
    audit.target = { kind: 'model', id, name: null, version: null };
    return id;
  };

  return {
    async upstreamStatus() {
      const { reachable, url, kind, version, error } = (await view.current()).upstream;
      return { reachable, url, kind, version, error } satisfies UpstreamInfo;
    },

    async list() {
      const { models, upstream: status } = await view.current();
      return (models ?? {
        reachable: false,
        error: status.error ?? 'llama-swap did not answer in time.',
        models: [],
      }) satisfies ModelList;
    },

    async load(request, reply, audit) {
      const id = idParam(request, audit);
      // llama-swap's load blocks until the model is healthy (minutes for big models); the page
      // follows the state live, so answer once the upstream has taken the request.
      const early = await startLoad(upstream, id, logger, () => void view.refresh());
      await view.refresh();
      reply.code(202);
      return { state: early } satisfies ModelStateChange;
    },

    async unload(request, _reply, audit) {
      const id = idParam(request, audit);
      const result = await upstream.unload(id).catch((error: unknown) => {
        throw upstreamActionError(error);
      });
      if (!result.unloaded) throw new GatewayError('conflict', { message: result.message });
      await view.refresh();
      return { state: 'stopped' } satisfies ModelStateChange;
    },

    async unloadAll() {
      await upstream.unloadAll().catch((error: unknown) => {
        throw upstreamActionError(error);
      });
      await view.refresh();
      return {};
    },
  };
}
