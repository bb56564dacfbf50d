/**
 * Typed client for llama-swap's own API (health, version, running, models, load/unload, log
 * and event streams). It uses one undici `Pool` per client (keep-alive, no fetch overhead),
 * always sends `Accept: application/json` so errors come back as JSON and, when configured,
 * `Authorization: Bearer <apiKey>` (docs/llama-swap.md, "Errors", "Authentication"). Inference
 * traffic does not go through here; `proxy/` forwards it.
 */
import { Pool } from 'undici';
import { httpError, transportError, UpstreamError } from './errors.js';
import { eventStream, textStream } from './log-stream.js';
import type {
  ClosableStream,
  HealthResult,
  LlamaSwapEvent,
  LogSource,
  ModelEntry,
  RunningModel,
  UnloadResult,
  VersionInfo,
} from './types.js';

export interface LlamaSwapClientOptions {
  /** llama-swap's base URL; a path prefix (reverse proxy) is kept. */
  baseUrl: URL;
  apiKey?: string;
  /** Per-call deadline for ordinary calls (default 10 s). Unload and load have longer floors. */
  timeoutMs?: number;
}

export interface CallOptions {
  /** Overrides the client's deadline for this call. */
  timeoutMs?: number;
  /** Cancels the call; the caller's abort error is rethrown as-is. */
  signal?: AbortSignal;
}

export interface LogStreamOptions {
  /** Skip the history burst (`?no-history`; any value counts). */
  noHistory?: boolean;
  /** Ends the stream (quietly) when aborted. */
  signal?: AbortSignal;
  /** Deadline for the response headers only; the stream itself has no idle limit. */
  timeoutMs?: number;
}

export interface LlamaSwapClient {
  readonly baseUrl: URL;
  /** `GET /health`; never throws. */
  health(opts?: CallOptions): Promise<HealthResult>;
  /** `GET /api/version`; `null` on versions without the route. */
  version(opts?: CallOptions): Promise<VersionInfo | null>;
  running(opts?: CallOptions): Promise<RunningModel[]>;
  models(opts?: CallOptions): Promise<ModelEntry[]>;
  /** The pins of the active profile (`GET /api/profiles`); `{}` when none is active or the version has no profiles. */
  activeProfilePins(opts?: CallOptions): Promise<Readonly<Record<string, string>>>;
  /** Blocks until stopped. Old llama-swap: `{ unloaded: false, unsupported: true }`. Unknown model: throws 404. */
  unload(modelId: string, opts?: CallOptions): Promise<UnloadResult>;
  /** `POST /api/models/unload`, falling back to `GET /unload` on versions without it. */
  unloadAll(opts?: CallOptions): Promise<UnloadResult>;
  /** `GET /upstream/<id>/` (the UI's load button); resolves once llama-swap answered with the model up. */
  load(modelId: string, opts?: CallOptions): Promise<{ status: number }>;
  logStream(source: LogSource, opts?: LogStreamOptions): Promise<ClosableStream<string>>;
  events(opts?: Omit<LogStreamOptions, 'noHistory'>): Promise<ClosableStream<LlamaSwapEvent>>;
  close(): Promise<void>;
}

const DEFAULT_TIMEOUT_MS = 10_000;
/** Unloads block while processes stop (per-model `unloadTimeout`, default 10 s). */
const UNLOAD_TIMEOUT_FLOOR_MS = 30_000;
/** A load blocks until the health check passes (`healthCheckTimeout`, default 120 s). */
const LOAD_TIMEOUT_FLOOR_MS = 130_000;

/** Percent-encode each segment of a model ID but keep its slashes (IDs like `org/model`). */
export function encodeModelPath(modelId: string): string {
  return modelId.split('/').map(encodeURIComponent).join('/');
}

export function createLlamaSwapClient(options: LlamaSwapClientOptions): LlamaSwapClient {
  const timeoutMs = options.timeoutMs ?? DEFAULT_TIMEOUT_MS;
  const prefix = options.baseUrl.pathname.replace(/\/+$/, '');
  const pool = new Pool(options.baseUrl.origin, { connect: { timeout: timeoutMs }, keepAliveTimeout: 10_000 });
  const baseHeaders: Record<string, string> = { accept: 'application/json', 'user-agent': 'gatehouse' };
  if (options.apiKey) baseHeaders.authorization = `Bearer ${options.apiKey}`;

  interface Exchange {
    status: number;
    contentType: string | undefined;
    text: string;
  }

  /** One request whose body is read (or discarded) within the deadline. */
  async function exchange(
    method: 'GET' | 'POST',
    path: string,
    what: string,
    opts: CallOptions,
    floorMs = 0,
    discardBody = false,
  ): Promise<Exchange> {
    const limit = opts.timeoutMs ?? Math.max(timeoutMs, floorMs);
    const deadline = new AbortController();
    const timer = setTimeout(() => deadline.abort(), limit);
    const signal = opts.signal ? AbortSignal.any([opts.signal, deadline.signal]) : deadline.signal;
    try {
      const res = await pool.request({
        path: prefix + path,
        method,
        headers: baseHeaders,
        signal,
        headersTimeout: limit,
        bodyTimeout: limit,
      });
      let text = '';
      if (discardBody && res.statusCode < 400) await res.body.dump();
      else text = await res.body.text();
      return { status: res.statusCode, contentType: headerValue(res.headers['content-type']), text };
    } catch (err) {
      if (opts.signal?.aborted) throw err;
      throw transportError(err, what, deadline.signal.aborted);
    } finally {
      clearTimeout(timer);
    }
  }

  async function getJson<T>(path: string, what: string, opts: CallOptions): Promise<T> {
    const res = await exchange('GET', path, what, opts);
    if (res.status < 200 || res.status >= 300) throw httpError(res.status, res.text, res.contentType, what);
    return parseJson<T>(res, what);
  }

  /** Open a long-lived stream: the deadline covers the headers only. */
  async function openStream(path: string, what: string, opts: LogStreamOptions, accept: string) {
    const limit = opts.timeoutMs ?? timeoutMs;
    const deadline = new AbortController();
    const timer = setTimeout(() => deadline.abort(), limit);
    const signal = opts.signal ? AbortSignal.any([opts.signal, deadline.signal]) : deadline.signal;
    try {
      const res = await pool.request({
        path: prefix + path,
        method: 'GET',
        headers: { ...baseHeaders, accept },
        signal,
        headersTimeout: limit,
        bodyTimeout: 0,
      });
      clearTimeout(timer);
      if (res.statusCode !== 200) {
        const text = await res.body.text();
        throw httpError(res.statusCode, text, headerValue(res.headers['content-type']), what);
      }
      return res.body;
    } catch (err) {
      if (err instanceof UpstreamError || opts.signal?.aborted) throw err;
      throw transportError(err, what, deadline.signal.aborted);
    } finally {
      clearTimeout(timer);
    }
  }

  return {
    baseUrl: options.baseUrl,

    async health(opts = {}) {
      try {
        const res = await exchange('GET', '/health', 'health check', opts);
        if (res.status === 200) return { ok: true, status: res.status };
        return {
          ok: false,
          status: res.status,
          error: httpError(res.status, res.text, res.contentType, 'health check').message,
        };
      } catch (err) {
        if (err instanceof UpstreamError) return { ok: false, error: err.message };
        throw err;
      }
    },

    async version(opts = {}) {
      const res = await exchange('GET', '/api/version', 'version', opts);
      if (res.status === 404) {
        const err = httpError(res.status, res.text, res.contentType, 'version');
        if (err.routeMissing) return null;
        throw err;
      }
      if (res.status !== 200) throw httpError(res.status, res.text, res.contentType, 'version');
      return parseJson<VersionInfo>(res, 'version');
    },

    async running(opts = {}) {
      const body = await getJson<{ running?: RunningModel[] }>('/running', 'running', opts);
      return Array.isArray(body.running) ? body.running : [];
    },

    async models(opts = {}) {
      const body = await getJson<{ data?: ModelEntry[] }>('/v1/models', 'model list', opts);
      return Array.isArray(body.data) ? body.data : [];
    },

    async activeProfilePins(opts = {}) {
      const res = await exchange('GET', '/api/profiles', 'profile list', opts);
      if (res.status === 404) return {};
      if (res.status < 200 || res.status >= 300) throw httpError(res.status, res.text, res.contentType, 'profile list');
      const body = parseJson<{ active?: unknown; profiles?: Array<{ id?: unknown; pins?: unknown }> }>(
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
      const res = await exchange(
        'POST',
        `/api/models/unload/${encodeModelPath(modelId)}`,
        what,
        opts,
        UNLOAD_TIMEOUT_FLOOR_MS,
      );
      if (res.status === 200) return { unloaded: true, via: 'api' };
      const err = httpError(res.status, res.text, res.contentType, what);
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
      const res = await exchange('POST', '/api/models/unload', 'unload all', opts, UNLOAD_TIMEOUT_FLOOR_MS);
      if (res.status === 200) return { unloaded: true, via: 'api' };
      const err = httpError(res.status, res.text, res.contentType, 'unload all');
      if (!err.routeMissing) throw err;
      const legacy = await exchange('GET', '/unload', 'unload all', opts, UNLOAD_TIMEOUT_FLOOR_MS);
      if (legacy.status === 200) return { unloaded: true, via: 'legacy-unload' };
      throw httpError(legacy.status, legacy.text, legacy.contentType, 'unload all');
    },

    async load(modelId, opts = {}) {
      const what = `load of ${modelId}`;
      const res = await exchange(
        'GET',
        `/upstream/${encodeModelPath(modelId)}/`,
        what,
        opts,
        LOAD_TIMEOUT_FLOOR_MS,
        true,
      );
      if (res.status >= 200 && res.status < 500 && res.status !== 404) return { status: res.status };
      const err = httpError(res.status, res.text, res.contentType, what);
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
      const body = await openStream(path, 'log stream', opts, 'application/json');
      return textStream(body, 'log stream', opts.signal);
    },

    async events(opts = {}) {
      const body = await openStream('/api/events', 'events stream', opts, 'text/event-stream, application/json');
      return eventStream(body, opts.signal);
    },

    async close() {
      await pool.destroy();
    },
  };
}

function parseJson<T>(res: { status: number; text: string }, what: string): T {
  try {
    return JSON.parse(res.text) as T;
  } catch (err) {
    throw new UpstreamError('http', `llama-swap ${what} returned invalid JSON (HTTP ${res.status})`, {
      status: res.status,
      body: res.text.slice(0, 4096),
      cause: err,
    });
  }
}

function headerValue(v: string | string[] | undefined): string | undefined {
  return Array.isArray(v) ? v[0] : v;
}
