/**
 * Admin API for llama-swap's models: the merged list (what exists from `/v1/models`, what
 * runs from `/running`), load, unload, unload all. An unreachable llama-swap is reported as
 * such (`reachable: false`), never as an empty list.
 */
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { Logger } from 'pino';
import type { Model, ModelList, ModelState, ModelStateChange, UpstreamInfo } from '../../admin-api/types.js';
import type { LlamaSwapClient } from '../../upstream/llama-swap-client.js';
import { UpstreamError } from '../../upstream/errors.js';
import type { ModelEntry, RunningModel } from '../../upstream/types.js';
import { declaredCapabilities, declaredContextLength } from './model-capabilities.js';
import { GatewayError } from '../../core/errors.js';

type Handler = (request: FastifyRequest, reply: FastifyReply) => Promise<unknown>;

export function createModelHandlers(deps: { upstream: LlamaSwapClient; logger: Logger }): {
  upstreamStatus: Handler;
  list: Handler;
  load: Handler;
  unload: Handler;
  unloadAll: Handler;
} {
  const { upstream, logger } = deps;
  const idParam = (request: FastifyRequest) => {
    const id = (request.params as { id?: string }).id;
    if (!id) throw new GatewayError('bad_request', { message: 'A model id is required.' });
    return id;
  };

  return {
    async upstreamStatus() {
      const health = await upstream.health();
      const version = health.ok ? await upstream.version().catch(() => null) : null;
      return {
        reachable: health.ok,
        url: upstream.baseUrl.origin,
        version,
        error: health.ok ? null : (health.error ?? `llama-swap answered ${health.status}`),
      } satisfies UpstreamInfo;
    },

    async list() {
      try {
        const [models, running] = await Promise.all([upstream.models(), upstream.running()]);
        return { reachable: true, error: null, models: mergeModels(models, running) } satisfies ModelList;
      } catch (error) {
        return { reachable: false, error: describeUpstreamError(error), models: [] } satisfies ModelList;
      }
    },

    async load(request, reply) {
      const id = idParam(request);
      // llama-swap's load blocks until the model is healthy (minutes for big models); the page
      // follows the state by polling, so answer once llama-swap has taken the request.
      const loading = upstream.load(id).catch((error: unknown) => {
        logger.warn({ model: id, err: describeUpstreamError(error) }, 'model load failed');
        throw error;
      });
      const early = await Promise.race([
        loading.then(() => 'ready' as const),
        new Promise<'starting'>((r) => setTimeout(() => r('starting'), 300)),
      ]).catch((error: unknown) => {
        throw toGatewayError(error);
      });
      loading.catch(() => undefined);
      reply.code(202);
      return { state: early } satisfies ModelStateChange;
    },

    async unload(request) {
      const id = idParam(request);
      const result = await upstream.unload(id).catch((error: unknown) => {
        throw toGatewayError(error);
      });
      if (!result.unloaded) throw new GatewayError('conflict', { message: result.message });
      return { state: 'stopped' } satisfies ModelStateChange;
    },

    async unloadAll() {
      await upstream.unloadAll().catch((error: unknown) => {
        throw toGatewayError(error);
      });
      return {};
    },
  };
}

function mergeModels(models: ModelEntry[], running: RunningModel[]): Model[] {
  const states = new Map(running.map((r) => [r.model, r]));
  const out: Model[] = [];
  const seen = new Set<string>();
  for (const m of models) {
    const meta = m.meta?.llamaswap ?? {};
    const type = meta.type ?? 'model';
    if (type === 'selector' || type === 'profile') continue;
    const realId = type === 'alias' && typeof meta.modelID === 'string' ? meta.modelID : m.id;
    const run = type === 'peer' ? undefined : states.get(realId);
    seen.add(m.id);
    out.push({
      id: m.id,
      name: m.name ?? null,
      description: m.description ?? null,
      kind: type === 'peer' ? 'peer' : type === 'alias' ? 'alias' : 'model',
      aliases: Array.isArray(meta.aliases) ? meta.aliases : [],
      peerId: typeof meta.peerID === 'string' ? meta.peerID : null,
      unlisted: false,
      state: run ? normaliseState(run.state) : 'stopped',
      ttl: run ? run.ttl : null,
      capabilities: declaredCapabilities(m),
      contextLength: declaredContextLength(m),
    });
  }
  // Unlisted models are hidden from /v1/models but show up in /running while they run.
  for (const r of running) {
    if (seen.has(r.model)) continue;
    out.push({
      id: r.model,
      name: r.name || null,
      description: r.description || null,
      kind: 'model',
      aliases: [],
      peerId: null,
      unlisted: true,
      state: normaliseState(r.state),
      ttl: r.ttl,
      capabilities: null,
      contextLength: null,
    });
  }
  return out.sort((a, b) => (a.kind === 'peer' ? 1 : 0) - (b.kind === 'peer' ? 1 : 0) || a.id.localeCompare(b.id));
}

function normaliseState(state: string): ModelState {
  return state === 'starting' || state === 'ready' || state === 'stopping' ? state : 'stopped';
}

function describeUpstreamError(error: unknown): string {
  if (error instanceof UpstreamError) {
    if (error.kind === 'unreachable') return `llama-swap could not be reached: ${error.message}`;
    if (error.kind === 'timeout') return 'llama-swap did not answer in time.';
    return `llama-swap answered ${error.status}: ${error.upstreamMessage ?? error.message}`;
  }
  return error instanceof Error ? error.message : String(error);
}

function toGatewayError(error: unknown): GatewayError {
  if (error instanceof UpstreamError) {
    if (error.kind === 'http' && error.status === 404)
      return new GatewayError('not_found', {
        message: error.upstreamMessage ?? 'llama-swap does not know this model.',
      });
    if (error.kind === 'timeout')
      return new GatewayError('upstream_timeout', { message: 'llama-swap did not answer in time.' });
    if (error.kind === 'unreachable')
      return new GatewayError('upstream_unreachable', { message: describeUpstreamError(error) });
    return new GatewayError('upstream_error', { status: error.status ?? 502, message: describeUpstreamError(error) });
  }
  return new GatewayError('internal_error', { cause: error });
}
