/**
 * CORS for `/v1`: web apps on other origins may call the client API with a key (keys are
 * bearer tokens, never cookies, so no credentials mode). Preflights are answered here, before
 * `clientAuth`: a browser never sends a key with one. `/api/*` gets none of this (same-origin only).
 */
import type { IncomingMessage, ServerResponse } from 'node:http';

type RawHandler = (req: IncomingMessage, res: ServerResponse) => void;

const ALLOW_METHODS = 'GET, HEAD, POST, PUT, PATCH, DELETE, OPTIONS';
/** Answered when a preflight names no headers; requested ones are echoed (covers `x-stainless-*`). */
const DEFAULT_ALLOW_HEADERS = [
  'authorization',
  'x-api-key',
  'api-key',
  'content-type',
  'anthropic-version',
  'anthropic-beta',
  'anthropic-dangerous-direct-browser-access',
  'x-request-id',
  // What the OpenAI and Anthropic SDKs send about themselves.
  'x-stainless-arch',
  'x-stainless-lang',
  'x-stainless-os',
  'x-stainless-package-version',
  'x-stainless-retry-count',
  'x-stainless-runtime',
  'x-stainless-runtime-version',
  'x-stainless-timeout',
  'x-stainless-helper-method',
  'x-stainless-async',
].join(', ');
const EXPOSE_HEADERS = 'x-request-id, retry-after';
/** Chromium caps a preflight's cache at 2 h; longer would only be ignored. */
const MAX_AGE_SECONDS = '7200';
/** One header name (RFC 9110 token); a request-headers list of anything else is not echoed. */
const HEADER_LIST = /^[!#$%&'*+.^_`|~0-9a-z-]+(?:\s*,\s*[!#$%&'*+.^_`|~0-9a-z-]+)*$/i;

export interface CorsPolicy {
  /** The `Access-Control-Allow-Origin` value for a request from `origin`, or undefined when not allowed. */
  allowOrigin(origin: string): string | undefined;
  /** Whether answers depend on the request's Origin (a list, not `*`): they then carry `Vary: Origin`. */
  readonly varies: boolean;
}

export function corsPolicy(origins: '*' | readonly string[]): CorsPolicy {
  if (origins === '*') return { allowOrigin: () => '*', varies: false };
  const allowed = new Set(origins);
  return { allowOrigin: (origin) => (allowed.has(origin) ? origin : undefined), varies: true };
}

/**
 * Wraps the `/v1` handler: `OPTIONS` is answered `204` without a key; any other call from a
 * browser (it carries `Origin`) gets the allow/expose headers on whatever answers it — the
 * gateway's errors and llama-swap's relayed responses alike. Calls without `Origin` (SDKs,
 * curl) are left untouched.
 */
export function withCors(policy: CorsPolicy, handler: RawHandler): RawHandler {
  return function corsHandler(req, res) {
    const origin = req.headers.origin;
    if (req.method === 'OPTIONS') return answerPreflight(policy, origin, req, res);
    if (policy.varies) res.setHeader('vary', 'Origin');
    if (origin !== undefined) {
      const allow = policy.allowOrigin(origin);
      if (allow !== undefined) {
        res.setHeader('access-control-allow-origin', allow);
        res.setHeader('access-control-expose-headers', EXPOSE_HEADERS);
      }
    }
    handler(req, res);
  };
}

function answerPreflight(
  policy: CorsPolicy,
  origin: string | undefined,
  req: IncomingMessage,
  res: ServerResponse,
): void {
  const headers: Record<string, string> = {};
  if (policy.varies) headers.vary = 'Origin';
  const allow = origin === undefined ? undefined : policy.allowOrigin(origin);
  if (allow !== undefined) {
    const requested = req.headers['access-control-request-headers'];
    headers['access-control-allow-origin'] = allow;
    headers['access-control-allow-methods'] = ALLOW_METHODS;
    headers['access-control-allow-headers'] =
      requested !== undefined && HEADER_LIST.test(requested.trim())
        ? requested.trim().toLowerCase()
        : DEFAULT_ALLOW_HEADERS;
    headers['access-control-max-age'] = MAX_AGE_SECONDS;
    headers['access-control-expose-headers'] = EXPOSE_HEADERS;
  }
  res.writeHead(204, headers);
  // The preflight has no body worth reading; a client that sends one anyway is not kept waiting.
  if (!req.complete) req.resume();
  res.end();
}
