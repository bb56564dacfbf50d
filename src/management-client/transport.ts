/**
 * The HTTP side both management clients share: one undici `Pool` each (`upstream-pools.ts`),
 * `Accept: application/json` so errors come back as JSON, the upstream's own `Authorization:
 * Bearer <apiKey>` when configured, and per-call deadlines that end in a typed `UpstreamError`
 * naming the upstream (`who`).
 */
import type { Readable } from 'node:stream';
import { openManagementPool } from '../upstream-pools.js';
import { httpError, transportError, UpstreamError } from './errors.js';

export interface TransportOptions {
  /** The upstream's base URL; a path prefix (reverse proxy) is kept. */
  baseUrl: URL;
  apiKey?: string;
  /** Per-call deadline for ordinary calls (default 10 s). */
  timeoutMs?: number;
  /** The upstream's name in error messages (`llama-swap`, `llama-server`). */
  who: string;
}

export interface CallOptions {
  /** Overrides the client's deadline for this call. */
  timeoutMs?: number;
  /** Cancels the call; the caller's abort error is rethrown as-is. */
  signal?: AbortSignal;
}

export interface StreamOptions {
  /** Ends the stream (quietly) when aborted. */
  signal?: AbortSignal;
  /** Deadline for the response headers only; the stream itself has no idle limit. */
  timeoutMs?: number;
}

export interface Exchange {
  status: number;
  contentType: string | undefined;
  text: string;
}

export interface ExchangeRequest {
  method: 'GET' | 'POST';
  path: string;
  /** What the call is, for error messages (`model list`, `unload of qwen`). */
  what: string;
  /** A JSON body (POST). */
  json?: unknown;
  /** The deadline is at least this long (loads and unloads block). */
  floorMs?: number;
  /** Skip reading a successful body. */
  discardBody?: boolean;
}

export interface Transport {
  readonly who: string;
  /** One request whose body is read (or discarded) within the deadline. */
  exchange(request: ExchangeRequest, opts: CallOptions): Promise<Exchange>;
  /** GET a 2xx JSON body, or throw the upstream's error. */
  getJson<T>(path: string, what: string, opts: CallOptions): Promise<T>;
  /** Open a long-lived stream: the deadline covers the headers only. */
  openStream(path: string, what: string, opts: StreamOptions, accept: string): Promise<Readable>;
  /** An error for an answer that is not what was asked for. */
  httpError(res: Exchange, what: string): UpstreamError;
  parseJson<T>(res: Exchange, what: string): T;
  close(): Promise<void>;
}

const DEFAULT_TIMEOUT_MS = 10_000;

export function createTransport(options: TransportOptions): Transport {
  const { who } = options;
  const timeoutMs = options.timeoutMs ?? DEFAULT_TIMEOUT_MS;
  const prefix = options.baseUrl.pathname.replace(/\/+$/, '');
  const pool = openManagementPool(options.baseUrl, timeoutMs);
  const baseHeaders: Record<string, string> = { accept: 'application/json', 'user-agent': 'gatehouse' };
  if (options.apiKey) baseHeaders.authorization = `Bearer ${options.apiKey}`;

  const toHttpError = (res: Exchange, what: string) => httpError(res.status, res.text, res.contentType, what, who);

  function parseJson<T>(res: Exchange, what: string): T {
    try {
      return JSON.parse(res.text) as T;
    } catch (err) {
      throw new UpstreamError('http', `${who} ${what} returned invalid JSON (HTTP ${res.status})`, {
        status: res.status,
        body: res.text.slice(0, 4096),
        cause: err,
      });
    }
  }

  async function exchange(request: ExchangeRequest, opts: CallOptions): Promise<Exchange> {
    const limit = opts.timeoutMs ?? Math.max(timeoutMs, request.floorMs ?? 0);
    const deadline = new AbortController();
    const timer = setTimeout(() => deadline.abort(), limit);
    const signal = opts.signal ? AbortSignal.any([opts.signal, deadline.signal]) : deadline.signal;
    const withBody = request.json !== undefined;
    try {
      const res = await pool.request({
        path: prefix + request.path,
        method: request.method,
        headers: withBody ? { ...baseHeaders, 'content-type': 'application/json' } : baseHeaders,
        ...(withBody ? { body: JSON.stringify(request.json) } : {}),
        signal,
        headersTimeout: limit,
        bodyTimeout: limit,
      });
      let text = '';
      if (request.discardBody && res.statusCode < 400) await res.body.dump();
      else text = await res.body.text();
      return { status: res.statusCode, contentType: headerValue(res.headers['content-type']), text };
    } catch (err) {
      if (opts.signal?.aborted) throw err;
      throw transportError(err, request.what, deadline.signal.aborted, who);
    } finally {
      clearTimeout(timer);
    }
  }

  return {
    who,
    exchange,
    httpError: toHttpError,
    parseJson,

    async getJson<T>(path: string, what: string, opts: CallOptions): Promise<T> {
      const res = await exchange({ method: 'GET', path, what }, opts);
      if (res.status < 200 || res.status >= 300) throw toHttpError(res, what);
      return parseJson<T>(res, what);
    },

    async openStream(path, what, opts, accept) {
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
          throw httpError(res.statusCode, text, headerValue(res.headers['content-type']), what, who);
        }
        return res.body;
      } catch (err) {
        if (err instanceof UpstreamError || opts.signal?.aborted) throw err;
        throw transportError(err, what, deadline.signal.aborted, who);
      } finally {
        clearTimeout(timer);
      }
    },

    async close() {
      await pool.destroy();
    },
  };
}

function headerValue(v: string | string[] | undefined): string | undefined {
  return Array.isArray(v) ? v[0] : v;
}
