/**
 * Model management for clients, compatible with llama.cpp's router mode (docs/llama-server.md,
 * "Model management for clients"), whatever the upstream:
 *
 *   GET  /models          {"data":[{id, object, owned_by, created, aliases, status:{value}}], "object":"list"}
 *   POST /models/load     {"model": id}  → {"success": true} once the upstream has taken the load
 *   POST /models/unload   {"model": id}  → {"success": true} once the model stopped
 *
 * `status.value` is `unloaded`, `loading` or `loaded`, as llama-server says it. Only keys with
 * the `manage` scope (auth/manage-scope.ts); a key restricted to some models sees and manages
 * only those. Errors are OpenAI-shaped; llama-server's own words where it has them ("model is
 * not found", "model is already running", "model is not running").
 * `GET /models` is also the dashboard's Models page: a browser asking for HTML without an API key
 * gets the page. A load or unload by an authorized caller leaves an audit entry, whatever its answer.
 */
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { Logger } from 'pino';
import type { AuditAction, AuditTarget } from '../admin-api/types.js';
import { apiKeyActor } from '../audit/actor.js';
import { isAuditWriteFailure, type AuditEvent } from '../audit/audit-log.js';
import type { KeyUseRecorder } from '../auth/client-auth-steps.js';
import type { KeyVerifier } from '../auth/key-index.js';
import { authorizeManage, type ManageCaller } from '../auth/manage-scope.js';
import { allowanceCovers, allowanceText, catalogFromList } from '../auth/model-access.js';
import { GatewayError, isGatewayError } from '../core/errors.js';
import { entryAliases } from '../management-client/model-entry.js';
import { modelIdProblem } from '../management-client/model-id.js';
import type { ModelEntry, RunningModel } from '../management-client/types.js';
import type { Upstream } from '../management-client/upstream.js';
import { acceptsHtml, type Dashboard } from './dashboard.js';
import { startLoad, upstreamActionError } from './model-actions.js';

type Handler = (request: FastifyRequest, reply: FastifyReply) => Promise<unknown>;

export interface ManageModelsDeps {
  upstream: Upstream;
  keys: KeyVerifier & KeyUseRecorder;
  dashboard: Dashboard;
  logger: Logger;
  /** Told after a load or unload, so dashboards read the list again. */
  changed: () => void;
  /** Writes an audit entry for this request (the route adds the client's address). */
  audit: (request: FastifyRequest, event: Omit<AuditEvent, 'client'>) => Promise<void>;
  now?: () => number;
}

/** llama-server's `status.value` for a llama-swap process state. */
const ROUTER_STATUS: Record<RunningModel['state'], 'loading' | 'loaded' | 'unloaded'> = {
  starting: 'loading',
  ready: 'loaded',
  // Still holding its memory until it has stopped.
  stopping: 'loaded',
  stopped: 'unloaded',
  shutdown: 'unloaded',
};

interface Known {
  models: ModelEntry[];
  states: Map<string, RunningModel['state']>;
}

export function createManageModelHandlers(deps: ManageModelsDeps): { list: Handler; load: Handler; unload: Handler } {
  const { upstream, keys, logger } = deps;
  const now = deps.now ?? Date.now;

  async function known(): Promise<Known> {
    try {
      const [models, running] = await Promise.all([upstream.models(), upstream.running()]);
      return { models: models.filter(isLocalModel), states: new Map(running.map((r) => [r.model, r.state])) };
    } catch (error) {
      throw upstreamActionError(error);
    }
  }

  /** The model a load/unload names, checked against the key's list, resolved to its ID. */
  async function target(
    caller: ManageCaller,
    request: FastifyRequest,
    named: (id: string) => void,
  ): Promise<{ id: string; state: RunningModel['state'] }> {
    const name = modelField(request.body);
    named(name);
    const { models, states } = await known();
    const catalog = catalogFromList(models);
    if (!allowanceCovers(caller.models, name, catalog)) {
      throw new GatewayError('model_not_allowed', {
        message: `This API key may not manage the model "${name}". ${allowanceText(caller.models)}.`,
        param: 'model',
      });
    }
    const id = catalog.resolve(name);
    if (id === undefined) throw new GatewayError('not_found', { message: 'model is not found', param: 'model' });
    // Listed, but it would name another route in the upstream's path (a `..` segment).
    const problem = modelIdProblem(id);
    if (problem !== undefined) throw new GatewayError('bad_request', { message: problem, param: 'model' });
    named(id);
    return { id, state: states.get(id) ?? 'stopped' };
  }

  /**
   * Runs a load or unload for a caller the key check let through, and leaves its audit entry:
   * the model asked for (its ID once resolved), success or the error code. A request without a
   * valid key is refused before this and leaves none, as an admin route's guard does.
   */
  async function audited(
    request: FastifyRequest,
    action: AuditAction,
    work: (caller: ManageCaller, named: (id: string) => void) => Promise<void>,
  ): Promise<{ success: true }> {
    const caller = authorizeManage(request.headers, keys, now());
    let target: AuditTarget | null = null;
    const named = (id: string) => {
      target = { kind: 'model', id, name: null, version: null };
    };
    const entry = (outcome: 'success' | 'failure', reason: string | null) => ({
      actor: apiKeyActor(caller.key),
      action,
      target,
      outcome,
      reason,
    });
    try {
      await work(caller, named);
    } catch (error) {
      if (!isAuditWriteFailure(error))
        await deps.audit(request, entry('failure', isGatewayError(error) ? error.code : 'internal_error'));
      throw error;
    }
    await deps.audit(request, entry('success', null));
    return { success: true };
  }

  return {
    async list(request, reply) {
      if (isPageLoad(request)) return deps.dashboard.sendIndex(reply);
      const caller = authorizeManage(request.headers, keys, now());
      const { models, states } = await known();
      const catalog = catalogFromList(models);
      const data = models
        .filter((m) => allowanceCovers(caller.models, m.id, catalog))
        .map((m) => ({
          id: m.id,
          aliases: entryAliases(m),
          object: 'model',
          owned_by: m.owned_by,
          created: m.created,
          status: { value: ROUTER_STATUS[states.get(m.id) ?? 'stopped'] },
          ...(m.architecture ? { architecture: m.architecture } : {}),
        }));
      return { data, object: 'list' };
    },

    load: (request) =>
      audited(request, 'model.load', async (caller, named) => {
        const { id, state } = await target(caller, request, named);
        if (state !== 'stopped' && state !== 'shutdown')
          throw new GatewayError('bad_request', { message: 'model is already running', param: 'model' });
        await startLoad(upstream, id, logger, deps.changed);
        deps.changed();
      }),

    unload: (request) =>
      audited(request, 'model.unload', async (caller, named) => {
        const { id, state } = await target(caller, request, named);
        if (state === 'stopped' || state === 'shutdown')
          throw new GatewayError('bad_request', { message: 'model is not running', param: 'model' });
        const result = await upstream.unload(id).catch((error: unknown) => {
          throw upstreamActionError(error);
        });
        if (!result.unloaded) throw new GatewayError('conflict', { message: result.message });
        deps.changed();
      }),
  };
}

/** A model the upstream runs itself: not an alias entry, a peer's, a selector or a profile. */
function isLocalModel(m: ModelEntry): boolean {
  return (m.meta?.llamaswap?.type ?? 'model') === 'model';
}

function modelField(body: unknown): string {
  const model = typeof body === 'object' && body !== null ? (body as { model?: unknown }).model : undefined;
  if (typeof model !== 'string' || model.trim() === '')
    throw new GatewayError('bad_request', { message: 'model name is missing from the request', param: 'model' });
  return model;
}

/** A browser opening the dashboard's /models page: wants HTML and carries no API key. */
function isPageLoad(request: FastifyRequest): boolean {
  const h = request.headers;
  return acceptsHtml(request) && h.authorization === undefined && h['x-api-key'] === undefined;
}
