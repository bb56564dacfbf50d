/**
 * How llama-swap itself answers: Go `json.Encoder` output, and llama-swap's error envelope
 * with its `Accept` negotiation (`internal/swaputil/http.go` `SendResponse`).
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Knobs } from './types.js';

/** `json.Marshal`: HTML-significant characters escaped like Go does. */
export function goJson(value: unknown): string {
  return JSON.stringify(value).replace(
    /[<>&\u2028\u2029]/g,
    (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`,
  );
}

/** `json.NewEncoder(w).Encode(v)`: like `goJson` plus a trailing newline. */
export function sendGoJson(
  res: ServerResponse,
  status: number,
  value: unknown,
  headers: Record<string, string> = {},
): void {
  const body = goJson(value) + '\n';
  res.writeHead(status, { ...headers, 'Content-Type': 'application/json', 'Content-Length': Buffer.byteLength(body) });
  res.end(body);
}

export function sendText(
  res: ServerResponse,
  status: number,
  text: string,
  contentType = 'text/plain; charset=utf-8',
): void {
  res.writeHead(status, { 'Content-Type': contentType, 'Content-Length': Buffer.byteLength(text) });
  res.end(text);
}

/** Status → (type, code) of `httperror.go`. */
function errorTypeForStatus(status: number): { type: string; code: string } {
  switch (status) {
    case 400:
      return { type: 'invalid_request_error', code: 'bad_request' };
    case 401:
      return { type: 'authentication_error', code: 'unauthorized' };
    case 403:
      return { type: 'authentication_error', code: 'forbidden' };
    case 404:
      return { type: 'invalid_request_error', code: 'not_found' };
    case 409:
      return { type: 'invalid_request_error', code: 'conflict' };
    case 429:
      return { type: 'rate_limit_error', code: 'rate_limit_exceeded' };
    case 502:
      return { type: 'server_error', code: 'bad_gateway' };
    case 503:
      return { type: 'server_error', code: 'service_unavailable' };
    case 504:
      return { type: 'server_error', code: 'gateway_timeout' };
    default:
      return status < 500
        ? { type: 'invalid_request_error', code: 'invalid_request' }
        : { type: 'server_error', code: 'internal_error' };
  }
}

export function errorBody(
  shape: Knobs['errorShape'],
  status: number,
  message: string,
  code?: string,
): Record<string, unknown> {
  if (shape === 'legacy') return { src: 'llama-swap', error: message };
  const t = errorTypeForStatus(status);
  return { src: 'llama-swap', error: { message, type: t.type, param: null, code: code ?? t.code } };
}

export interface SendErrorOptions {
  headers?: Record<string, string>;
  /** The 429 concurrency error skips `Accept` negotiation. */
  alwaysJson?: boolean;
  code?: string;
}

/** `SendResponse`: `text/plain` or `text/html` when the Accept header asks, else the JSON body. */
export function sendLlamaSwapError(
  req: IncomingMessage,
  res: ServerResponse,
  shape: Knobs['errorShape'],
  status: number,
  message: string,
  opts: SendErrorOptions = {},
): void {
  if (res.headersSent) return;
  const accept = req.headers.accept ?? '';
  const headers = opts.headers ?? {};
  if (!opts.alwaysJson && accept.includes('text/plain')) {
    const body = `llama-swap: ${message}`;
    res.writeHead(status, { ...headers, 'Content-Type': 'text/plain', 'Content-Length': Buffer.byteLength(body) });
    res.end(body);
    return;
  }
  if (!opts.alwaysJson && accept.includes('text/html')) {
    const body = `<html><body><h1>llama-swap</h1><p>${escapeHtml(message)}</p></body></html>`;
    res.writeHead(status, { ...headers, 'Content-Type': 'text/html', 'Content-Length': Buffer.byteLength(body) });
    res.end(body);
    return;
  }
  const body = goJson(errorBody(shape, status, message, opts.code));
  res.writeHead(status, { ...headers, 'Content-Type': 'application/json', 'Content-Length': Buffer.byteLength(body) });
  res.end(body);
}

/** An error raised inside the simulator that maps to one llama-swap error response. */
export class SimHttpError extends Error {
  constructor(
    readonly status: number,
    message: string,
    readonly opts: SendErrorOptions = {},
  ) {
    super(message);
  }
}

function escapeHtml(s: string): string {
  return s
    .replace(/&/g, '&amp;')
    .replace(/</g, '&lt;')
    .replace(/>/g, '&gt;')
    .replace(/"/g, '&#34;')
    .replace(/'/g, '&#39;');
}
