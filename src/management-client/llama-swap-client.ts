/**
 * Typed client for llama-swap's own API (health, version, running, models, load/unload, log
 * and event streams), over the shared transport (`transport.ts`; docs/llama-swap.md, "Errors",
 * "Authentication"). Inference traffic does not go through here; `proxy/` forwards it.
 */
import { UpstreamError } from './errors.js';
import { eventStream, textStream } from './log-stream.js';
import { encodeModelPath } from './model-id.js';
import { createTransport, type CallOptions, type Transport } from './transport.js';
import type { ModelEntry, RunningModel, VersionInfo } from './types.js';
import type { Upstream } from './upstream.js';

export interface LlamaSwapClientOptions {
  /** llama-swap's base URL; a path prefix (reverse proxy) is kept. */
  baseUrl: URL;
  apiKey?: string;
  /** Per-call deadline for ordinary calls (default 10 s). Unload and load have longer floors. */
  timeoutMs?: number;
}

export interface LlamaSwapClient extends Upstream {
  readonly kind: 'llama-swap';
}

/** Unloads block while processes stop (per-model `unloadTimeout`, default 10 s). */
const UNLOAD_TIMEOUT_FLOOR_MS = 30_000;
/** A load blocks until the health check passes (`healthCheckTimeout`, default 120 s). */
const LOAD_TIMEOUT_FLOOR_MS = 130_000;

export function createLlamaSwapClient(options: LlamaSwapClientOptions): LlamaSwapClient {
  const http = createTransport({ ...options, who: 'llama-swap' });

  return {
    baseUrl: options.baseUrl,
    kind: 'llama-swap',

    async health(opts = {}) {
      try {
        const res = await http.exchange({ method: 'GET', path: '/health', what: 'health check' }, opts);
        if (res.status === 200) return { ok: true, status: res.status };
        return { ok: false, status: res.status, error: http.httpError(res, 'health check').message };
      } catch (err) {
        if (err instanceof UpstreamError) return { ok: false, error: err.message };
        throw err;
      }
    },

    async version(opts = {}) {
      const res = await http.exchange({ method: 'GET', path: '/api/version', what: 'version' }, opts);
      if (res.status === 404) {
        const err = http.httpError(res, 'version');
        if (err.routeMissing) return null;
        throw err;
      }
      if (res.status !== 200) throw http.httpError(res, 'version');
      return http.parseJson<VersionInfo>(res, 'version');
    },

    async running(opts = {}) {
      const body = await http.getJson<{ running?: RunningModel[] }>('/running', 'running', opts);
      return Array.isArray(body.running) ? body.running : [];
    },

    async models(opts = {}) {
      const body = await http.getJson<{ data?: ModelEntry[] }>('/v1/models', 'model list', opts);
      return Array.isArray(body.data) ? body.data : [];
    },

    async activeProfilePins(opts = {}) {
      const res = await http.exchange({ method: 'GET', path: '/api/profiles', what: 'profile list' }, opts);
      if (res.status === 404) return {};
      if (res.status < 200 || res.status >= 300) throw http.httpError(res, 'profile list');
      const body = http.parseJson<{ active?: unknown; profiles?: Array<{ id?: unknown; pins?: unknown }> }>(
        res,
        'profile list',
      );
      const active = Array.isArray(body.profiles)
        ? body.profiles.find((p) => typeof body.active === 'string' && p.id === body.active)
        : undefined;
      const pins: Record<string, string> = {};
      if (active && typeof active.pins === 'object' && active.pins !== null) {
        for (const [name, target] of Object.entries(active.pins)) if (typeof target === 'string') pins[name] = target;
      }
      return pins;
    },

    async unload(modelId, opts = {}) {
      const what = `unload of ${modelId}`;
      const res = await http.exchange(
        {
          method: 'POST',
          path: `/api/models/unload/${encodeModelPath(modelId)}`,
          what,
          floorMs: UNLOAD_TIMEOUT_FLOOR_MS,
        },
        opts,
      );
      if (res.status === 200) return { unloaded: true, via: 'api' };
      const err = http.httpError(res, what);
      if (err.routeMissing) {
        return {
          unloaded: false,
          unsupported: true,
          message:
            'This llama-swap version cannot unload a single model (no POST /api/models/unload/{model}); ' +
            'only unloading all models is supported. Upgrade llama-swap.',
        };
      }
      throw err;
    },

    async unloadAll(opts = {}) {
      const what = 'unload all';
      const floorMs = UNLOAD_TIMEOUT_FLOOR_MS;
      const res = await http.exchange({ method: 'POST', path: '/api/models/unload', what, floorMs }, opts);
      if (res.status === 200) return { unloaded: true, via: 'api' };
      const err = http.httpError(res, what);
      if (!err.routeMissing) throw err;
      const legacy = await http.exchange({ method: 'GET', path: '/unload', what, floorMs }, opts);
      if (legacy.status === 200) return { unloaded: true, via: 'legacy-unload' };
      throw http.httpError(legacy, what);
    },

    async load(modelId, opts = {}) {
      const what = `load of ${modelId}`;
      const res = await http.exchange(
        {
          method: 'GET',
          path: `/upstream/${encodeModelPath(modelId)}/`,
          what,
          floorMs: LOAD_TIMEOUT_FLOOR_MS,
          discardBody: true,
        },
        opts,
      );
      if (res.status >= 300 && res.status < 400) return loadedDespiteRedirect(http, modelId, res.status, opts);
      if (res.status >= 200 && res.status < 500 && res.status !== 404) return { status: res.status };
      const err = http.httpError(res, what);
      // A 404 from the model server's own root page (e.g. vLLM) still means it is up; a 404 from
      // llama-swap means the model is unknown.
      if (res.status === 404 && !err.fromLlamaSwap && !/model not found/.test(err.upstreamMessage ?? ''))
        return { status: res.status };
      throw err;
    },

    async logStream(source, opts = {}) {
      const id =
        source === 'combined' ? '' : typeof source === 'string' ? `/${source}` : `/${encodeModelPath(source.model)}`;
      const path = `/logs/stream${id}${opts.noHistory ? '?no-history' : ''}`;
      const body = await http.openStream(path, 'log stream', opts, 'application/json');
      return textStream(body, 'log stream', opts.signal);
    },

    async events(opts = {}) {
      const body = await http.openStream('/api/events', 'events stream', opts, 'text/event-stream, application/json');
      return eventStream(body, opts.signal);
    },

    close: () => http.close(),
  };
}

/**
 * A redirect is not a load: llama-swap answers one before any model starts when it cleans a
 * path. A model server's own root page may redirect too, which only counts when the model runs.
 */
async function loadedDespiteRedirect(
  http: Transport,
  modelId: string,
  status: number,
  opts: CallOptions,
): Promise<{ status: number }> {
  const body = await http.getJson<{ running?: RunningModel[] }>('/running', 'running', opts);
  const running = Array.isArray(body.running) ? body.running : [];
  if (running.some((r) => r.model === modelId && r.state === 'ready')) return { status };
  throw new UpstreamError('http', `llama-swap answered the load of ${modelId} with a redirect (HTTP ${status})`, {
    status: 502,
  });
}
