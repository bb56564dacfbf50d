/**
 * llama-swap's own error answers come in four shapes (docs/llama-swap.md, "Errors"): the JSON envelope
 * `{"src":"llama-swap","error":{...}}`, the legacy `{"error":"<string>"}` of v250 and older,
 * Go's plain-text mux 404/405 (or `llama-swap: <msg>` when text was negotiated), and an
 * empty-bodied 502 when a local model server died. They become a proper error in the caller's
 * wire format with the same status. A model server's own error (llama-server's OpenAI-shaped
 * JSON) passes through unchanged to OpenAI callers; other callers get it in their own format.
 */
import { GatewayError } from '../core/errors.js';
import type { WireFormat } from '../core/wire-format.js';

/** Error bodies larger than this cannot be llama-swap's and are streamed through untouched. */
export const MAX_TRANSLATABLE_ERROR_BYTES = 64 * 1024;

export interface UpstreamErrorResponse {
  status: number;
  contentType: string | undefined;
  body: Buffer;
  retryAfter: string | undefined;
  allow: string | undefined;
  method: string;
  path: string;
  /** The caller's wire format: a model server's error is rewritten for all but OpenAI callers. */
  format?: WireFormat | undefined;
}

/** A `GatewayError` to render instead of the upstream body, or `undefined` to pass it through. */
export function translateUpstreamError(res: UpstreamErrorResponse): GatewayError | undefined {
  const text = res.body.toString('utf8').trim();
  const type = (res.contentType ?? '').toLowerCase();
  const headers: Record<string, string> = {};
  if (res.retryAfter) headers['retry-after'] = res.retryAfter;
  if (res.allow) headers.allow = res.allow;

  if (text === '') {
    if (res.status === 502)
      return new GatewayError('upstream_bad_gateway', {
        message: 'llama-swap could not reach the model server (it may have crashed or still be starting).',
        headers,
      });
    return new GatewayError('upstream_error', {
      status: res.status,
      message: `llama-swap answered ${res.status} with an empty body.`,
      headers,
    });
  }

  if (type.includes('json') || text.startsWith('{')) {
    const parsed = llamaSwapJsonError(text) ?? foreignModelServerError(text, res.format);
    if (parsed === undefined) return undefined; // a model server's error, for an OpenAI caller: pass through
    return new GatewayError('upstream_error', {
      status: res.status,
      message: parsed.message,
      headers,
      upstreamCode: parsed.code,
    });
  }

  if (type.startsWith('text/plain') || type === '') {
    if (res.status === 404 && text === '404 page not found') {
      return new GatewayError('upstream_error', {
        status: 404,
        message: `llama-swap has no route for ${res.method} ${res.path}.`,
        headers,
      });
    }
    if (res.status === 405) {
      return new GatewayError('upstream_error', {
        status: 405,
        message:
          `llama-swap does not allow ${res.method} on ` + `${res.path}${res.allow ? ` (allowed: ${res.allow})` : ''}.`,
        headers,
      });
    }
    return new GatewayError('upstream_error', {
      status: res.status,
      message: text.replace(/^llama-swap:\s*/, ''),
      headers,
    });
  }
  // Ollama clients read only `{"error":"…"}`: anything else would reach them as a bare status.
  if (res.format === 'ollama')
    return new GatewayError('upstream_error', { status: res.status, message: text.slice(0, 1000), headers });
  return undefined;
}

/**
 * A model server's OpenAI-shaped error (`{"error":{"message","type","code"}}`, llama-server's),
 * as a message for a caller that speaks another format; undefined for OpenAI callers, who get it as it is.
 */
function foreignModelServerError(
  text: string,
  format: WireFormat | undefined,
): { message: string; code: string | undefined } | undefined {
  if (format === undefined || format === 'openai') return undefined;
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    return format === 'ollama' ? { message: text.slice(0, 1000), code: undefined } : undefined;
  }
  const error = (parsed as { error?: unknown } | null)?.error;
  if (typeof error === 'object' && error !== null && typeof (error as { message?: unknown }).message === 'string')
    return { message: (error as { message: string }).message, code: undefined };
  return format === 'ollama' ? { message: text.slice(0, 1000), code: undefined } : undefined;
}

/**
 * The message of llama-swap's JSON error, and its `code` when the envelope has one (clients
 * branch on `concurrency_limit`, `not_found`...); the legacy string shape has none.
 */
function llamaSwapJsonError(text: string): { message: string; code: string | undefined } | undefined {
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    return undefined;
  }
  if (typeof parsed !== 'object' || parsed === null) return undefined;
  const record = parsed as { src?: unknown; error?: unknown };
  // The legacy shape, with or without src.
  if (typeof record.error === 'string') return { message: record.error, code: undefined };
  if (record.src === 'llama-swap' && typeof record.error === 'object' && record.error !== null) {
    const { message, code } = record.error as { message?: unknown; code?: unknown };
    return {
      message: typeof message === 'string' ? message : JSON.stringify(record.error),
      code: (typeof code === 'string' && code !== '') || typeof code === 'number' ? String(code) : undefined,
    };
  }
  return undefined;
}
