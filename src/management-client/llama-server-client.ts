/**
 * Client for llama.cpp's `llama-server` in router mode (started without a model; it spawns one
 * child per model): `GET /models` (each model's `status.value`: `unloaded`, `loading`, `loaded`,
 * `sleeping`, plus `failed` and `exit_code` after a failed start), `POST /models/load` and
 * `POST /models/unload` with `{"model": id}`, `GET /props` (`role: "router"`, `build_info`).
 * Source: llama.cpp `tools/server/server-models.cpp` (`server_models_routes::init_routes`).
 *
 * The router answers a load or an unload at once and works in the background, so `load` and
 * `unload` here follow `/models` until the model is up or gone: the same promise llama-swap's
 * blocking calls make. It has no log or event stream; those calls fail as `unsupported`.
 */
import { UpstreamError } from './errors.js';
import { createTransport, type CallOptions, type Exchange } from './transport.js';
import type { ModelEntry, RunningModel, UnloadResult } from './types.js';
import type { Upstream } from './upstream.js';

export interface LlamaServerClientOptions {
  baseUrl: URL;
  apiKey?: string;
  timeoutMs?: number;
  /** How often `/models` is read while a load or unload is under way (default 250 ms). */
  settlePollMs?: number;
}

export interface LlamaServerClient extends Upstream {
  readonly kind: 'llama-server';
}

/** `GET /props` of a router (`get_router_props`). */
export interface RouterProps {
  role?: string;
  build_info?: string;
  max_instances?: number;
}

/** A model's `status.value`; `failed` rides along with `unloaded` after a start that failed. */
export type RouterModelStatus = 'unloaded' | 'loading' | 'loaded' | 'sleeping' | 'downloading' | (string & {});

/** A child keeps its memory while `loaded` or `sleeping` (weights offloaded, woken by a request). */
function routerStatusRunning(status: RouterModelStatus | undefined): boolean {
  return status === 'loaded' || status === 'sleeping' || status === 'loading';
}

const LOAD_TIMEOUT_MS = 130_000;
const UNLOAD_TIMEOUT_MS = 30_000;
const WHO = 'llama-server';
const NO_STREAM =
  "llama-server's router mode has no log or event stream: its models' output goes to the terminal " +
  'that started it. Use llama-swap to follow logs from the dashboard.';

export function createLlamaServerClient(options: LlamaServerClientOptions): LlamaServerClient {
  const http = createTransport({ ...options, who: WHO });
  const settlePollMs = options.settlePollMs ?? 250;

  async function listModels(opts: CallOptions): Promise<ModelEntry[]> {
    const body = await http.getJson<{ data?: ModelEntry[] }>('/models', 'model list', opts);
    return Array.isArray(body.data) ? body.data : [];
  }

  /** Reads `/models` until `done` says the model got where it was going; throws what `done` throws. */
  async function settle(
    modelId: string,
    done: (entry: ModelEntry | undefined) => boolean,
    limitMs: number,
    opts: CallOptions,
  ): Promise<void> {
    const until = Date.now() + (opts.timeoutMs ?? limitMs);
    for (;;) {
      const entry = (await listModels(opts)).find((m) => m.id === modelId);
      if (done(entry)) return;
      if (Date.now() >= until) throw new UpstreamError('timeout', `${WHO} did not finish with ${modelId} in time`);
      await pause(settlePollMs, opts.signal);
    }
  }

  async function post(path: string, modelId: string, what: string, opts: CallOptions): Promise<Exchange> {
    return http.exchange({ method: 'POST', path, what, json: { model: modelId } }, opts);
  }

  const client: LlamaServerClient = {
    baseUrl: options.baseUrl,
    kind: 'llama-server',

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
      const props = await http.getJson<RouterProps>('/props', 'props', opts);
      return typeof props.build_info === 'string' ? { version: props.build_info, commit: '', build_date: '' } : null;
    },

    models: (opts = {}) => listModels(opts),

    async running(opts = {}) {
      const models = await listModels(opts);
      return models.flatMap((m): RunningModel[] => {
        const status = m.status?.value;
        if (!routerStatusRunning(status)) return [];
        const state = status === 'loading' ? 'starting' : 'ready';
        return [{ model: m.id, state, cmd: '', proxy: '', ttl: 0, name: '', description: '' }];
      });
    },

    activeProfilePins: () => Promise.resolve({}),

    async load(modelId, opts = {}) {
      const what = `load of ${modelId}`;
      const res = await post('/models/load', modelId, what, opts);
      const err = res.status === 200 ? undefined : http.httpError(res, what);
      // "model is already running": loading or loaded; wait for it like a fresh load.
      if (err && !(res.status === 400 && /already (running|loaded)/.test(err.upstreamMessage ?? ''))) throw err;
      await settle(
        modelId,
        (entry) => {
          if (!entry) throw new UpstreamError('http', `${WHO} no longer lists ${modelId}`, { status: 404 });
          const status = entry.status as { value?: string; failed?: boolean; exit_code?: number } | undefined;
          if (status?.failed === true && status.value === 'unloaded') {
            throw new UpstreamError(
              'http',
              `${WHO} could not start ${modelId} (exit code ${status.exit_code ?? '?'})`,
              {
                status: 502,
              },
            );
          }
          return status?.value === 'loaded' || status?.value === 'sleeping';
        },
        LOAD_TIMEOUT_MS,
        opts,
      );
      return { status: 200 };
    },

    async unload(modelId, opts = {}): Promise<UnloadResult> {
      const what = `unload of ${modelId}`;
      const res = await post('/models/unload', modelId, what, opts);
      if (res.status !== 200) {
        const err = http.httpError(res, what);
        // Stopped already: the same answer llama-swap gives.
        if (res.status === 400 && /not running/.test(err.upstreamMessage ?? '')) return { unloaded: true, via: 'api' };
        // The router answers an unknown model with 400 "model is not found"; llama-swap says 404.
        if (/not found/.test(err.upstreamMessage ?? ''))
          throw new UpstreamError('http', err.message, { status: 404, body: res.text });
        throw err;
      }
      await settle(modelId, (entry) => !routerStatusRunning(entry?.status?.value), UNLOAD_TIMEOUT_MS, opts);
      return { unloaded: true, via: 'api' };
    },

    async unloadAll(opts = {}) {
      const running = await client.running(opts);
      await Promise.all(running.map((r) => client.unload(r.model, opts)));
      return { unloaded: true, via: 'api' };
    },

    logStream: () => Promise.reject(new UpstreamError('unsupported', NO_STREAM)),
    events: () => Promise.reject(new UpstreamError('unsupported', NO_STREAM)),
    close: () => http.close(),
  };
  return client;
}

function pause(ms: number, signal: AbortSignal | undefined): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) return reject(signal.reason as Error);
    const timer = setTimeout(() => {
      signal?.removeEventListener('abort', onAbort);
      resolve();
    }, ms);
    const onAbort = () => {
      clearTimeout(timer);
      reject(signal!.reason as Error);
    };
    signal?.addEventListener('abort', onAbort, { once: true });
  });
}
