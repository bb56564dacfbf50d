/**
 * Failures talking to llama-swap, as one typed error. llama-swap answers errors in several
 * shapes (docs/llama-swap.md, "Errors"): the current envelope `{"src":"llama-swap","error":{"message",...}}`, the
 * v250-and-older `{"src":"llama-swap","error":"<message>"}`, `llama-swap: <message>` text, Go's
 * plain `404 page not found` for a route that does not exist, and a bare 502 with no body.
 */

/** `unsupported`: this kind of upstream has no such route at all (llama-server's router has no log stream). */
export type UpstreamErrorKind = 'unreachable' | 'timeout' | 'http' | 'unsupported';

export interface ParsedUpstreamError {
  /** Best human-readable message. */
  message: string;
  /** True when the body says it came from llama-swap itself (`src`), not from a model server. */
  fromLlamaSwap: boolean;
  /** Envelope `type` / `code` when present. */
  type?: string;
  code?: string;
  /** Go mux answer for a path/method that does not exist in this llama-swap version. */
  routeMissing: boolean;
}

export interface UpstreamErrorOptions {
  status?: number;
  parsed?: ParsedUpstreamError;
  body?: string;
  cause?: unknown;
}

export class UpstreamError extends Error {
  override name = 'UpstreamError';
  readonly kind: UpstreamErrorKind;
  readonly status: number | undefined;
  /** The message llama-swap (or the model server) sent, when there was one. */
  readonly upstreamMessage: string | undefined;
  readonly fromLlamaSwap: boolean;
  readonly routeMissing: boolean;
  readonly errorType: string | undefined;
  readonly code: string | undefined;
  /** Raw response body (first 4 KiB) for diagnostics. */
  readonly body: string | undefined;

  constructor(kind: UpstreamErrorKind, message: string, opts: UpstreamErrorOptions = {}) {
    super(message, opts.cause === undefined ? undefined : { cause: opts.cause });
    this.kind = kind;
    this.status = opts.status;
    this.upstreamMessage = opts.parsed?.message;
    this.fromLlamaSwap = opts.parsed?.fromLlamaSwap ?? false;
    this.routeMissing = opts.parsed?.routeMissing ?? false;
    this.errorType = opts.parsed?.type;
    this.code = opts.parsed?.code;
    this.body = opts.body;
  }
}

const MUX_404 = /^404 page not found\s*$/;
const MUX_405 = /^Method Not Allowed\s*$/;

/** Read any of llama-swap's error bodies. */
export function parseUpstreamErrorBody(
  status: number,
  body: string,
  contentType: string | undefined,
): ParsedUpstreamError {
  const text = body.trim();
  if (text === '') return { message: `HTTP ${status} with an empty body`, fromLlamaSwap: false, routeMissing: false };
  if ((contentType ?? '').includes('json') || text.startsWith('{')) {
    try {
      const json = JSON.parse(text) as unknown;
      if (typeof json === 'object' && json !== null) {
        const obj = json as Record<string, unknown>;
        const fromLlamaSwap = obj.src === 'llama-swap';
        const err = obj.error;
        if (typeof err === 'string') return { message: err, fromLlamaSwap, routeMissing: false };
        if (typeof err === 'object' && err !== null) {
          const e = err as Record<string, unknown>;
          if (typeof e.message === 'string') {
            return {
              message: e.message,
              fromLlamaSwap,
              routeMissing: false,
              ...(typeof e.type === 'string' ? { type: e.type } : {}),
              ...(typeof e.code === 'string' || typeof e.code === 'number' ? { code: String(e.code) } : {}),
            };
          }
        }
        if (typeof obj.message === 'string') return { message: obj.message, fromLlamaSwap, routeMissing: false };
      }
    } catch {
      // not JSON after all: fall through to text handling
    }
  }
  if ((status === 404 && MUX_404.test(text)) || (status === 405 && MUX_405.test(text))) {
    return { message: text, fromLlamaSwap: true, routeMissing: true };
  }
  if (text.startsWith('llama-swap: '))
    return { message: text.slice('llama-swap: '.length), fromLlamaSwap: true, routeMissing: false };
  return { message: text.length > 500 ? `${text.slice(0, 500)}…` : text, fromLlamaSwap: false, routeMissing: false };
}

export function httpError(
  status: number,
  body: string,
  contentType: string | undefined,
  what: string,
  who = 'llama-swap',
): UpstreamError {
  const parsed = parseUpstreamErrorBody(status, body, contentType);
  return new UpstreamError('http', `${who} ${what} failed with HTTP ${status}: ${parsed.message}`, {
    status,
    parsed,
    body: body.slice(0, 4096),
  });
}

const TIMEOUT_CODES = new Set([
  'UND_ERR_HEADERS_TIMEOUT',
  'UND_ERR_BODY_TIMEOUT',
  'UND_ERR_CONNECT_TIMEOUT',
  'ETIMEDOUT',
]);

/** Map a transport failure (undici / socket error) to `timeout` or `unreachable`. */
export function transportError(err: unknown, what: string, timedOut: boolean, who = 'llama-swap'): UpstreamError {
  const code = errorCode(err);
  if (timedOut || (code !== undefined && TIMEOUT_CODES.has(code))) {
    return new UpstreamError('timeout', `${who} ${what} timed out`, { cause: err });
  }
  const detail = code ?? (err instanceof Error ? err.message : String(err));
  return new UpstreamError('unreachable', `${who} ${what} failed: ${detail}`, { cause: err });
}

function errorCode(err: unknown): string | undefined {
  for (let e: unknown = err, depth = 0; e && depth < 4; depth++) {
    const code = (e as { code?: unknown }).code;
    if (typeof code === 'string') return code;
    e = (e as { cause?: unknown }).cause;
  }
  return undefined;
}
