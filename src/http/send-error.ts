import type { ServerResponse } from 'node:http';
import { GatewayError, isGatewayError } from './errors.js';
import { errorBody } from './render-error.js';
import type { WireFormat } from './wire-format.js';

/**
 * Answers a raw Node response with an error in the caller's wire format. Used by the `/v1`
 * fast path; Fastify routes go through the same `errorBody` via the app's error handler.
 * Unknown errors become a generic 500 whose message reveals nothing internal.
 */
export function sendError(res: ServerResponse, error: unknown, format: WireFormat, requestId: string): GatewayError {
  const gatewayError = isGatewayError(error) ? error : new GatewayError('internal_error', { cause: error });
  if (res.headersSent) {
    res.destroy();
    return gatewayError;
  }
  const payload = JSON.stringify(errorBody(gatewayError, format));
  res.writeHead(gatewayError.status, {
    ...gatewayError.headers,
    'content-type': 'application/json; charset=utf-8',
    'content-length': Buffer.byteLength(payload),
    'x-request-id': requestId,
  });
  res.end(payload);
  return gatewayError;
}
