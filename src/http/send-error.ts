import type { ServerResponse } from 'node:http';
import { GatewayError, isGatewayError } from '../core/errors.js';
import { errorBody, terminalStreamEvent } from '../core/render-error.js';
import type { WireFormat } from '../core/wire-format.js';
import { QUEUE_MS_HEADER } from '../core/context.js';

export interface SentError {
  error: GatewayError;
  /** Body bytes written (0 when the response had already started and was cut instead). */
  bytes: number;
}

/**
 * Answers a raw Node response with an error in the caller's wire format. Used by the `/v1`
 * fast path; Fastify routes go through the same `errorBody` via the app's error handler.
 * Unknown errors become a generic 500 whose message reveals nothing internal.
 */
export function sendError(
  res: ServerResponse,
  error: unknown,
  format: WireFormat,
  requestId: string,
  queueMs = 0,
): SentError {
  const gatewayError = isGatewayError(error) ? error : new GatewayError('internal_error', { cause: error });
  if (res.headersSent) {
    // An event stream already under way (the keep-alive opened it) ends with one error event.
    const type = String(res.getHeader('content-type') ?? '');
    if (type.startsWith('text/event-stream') && !res.writableEnded && !res.destroyed) {
      const event = terminalStreamEvent(gatewayError, format);
      res.end(event);
      return { error: gatewayError, bytes: Buffer.byteLength(event) };
    }
    res.destroy();
    return { error: gatewayError, bytes: 0 };
  }
  const payload = JSON.stringify(errorBody(gatewayError, format));
  const bytes = Buffer.byteLength(payload);
  const status = gatewayError.status;
  res.writeHead(status, {
    ...gatewayError.headers,
    // Claude Code retries a 401 for minutes unless told not to (the SDKs read the header too):
    // a key does not fix itself.
    ...(status === 401 || status === 403 ? { 'x-should-retry': 'false' } : {}),
    'content-type': 'application/json; charset=utf-8',
    'content-length': bytes,
    'x-request-id': requestId,
    [QUEUE_MS_HEADER]: String(Math.round(queueMs)),
  });
  res.end(payload);
  return { error: gatewayError, bytes };
}
