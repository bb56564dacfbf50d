/**
 * Answers a request Node's HTTP parser refused (a malformed request line, headers over the
 * size limit, a request that never finished arriving) before Fastify or the `/v1` route could
 * see it: the server's 'clientError' event. The answer is the OpenAI error shape (no path is
 * known yet, and `/v1` clients are the ones who read bodies), then the connection closes.
 */
import { STATUS_CODES } from 'node:http';
import type { Duplex } from 'node:stream';
import { GatewayError } from '../core/errors.js';
import { isAnswering } from './answering.js';
import { errorBody } from '../core/render-error.js';

function clientErrorAnswer(error: Error & { code?: string }): GatewayError {
  switch (error.code) {
    case 'HPE_HEADER_OVERFLOW':
      return new GatewayError('request_headers_too_large');
    case 'ERR_HTTP_REQUEST_TIMEOUT':
      return new GatewayError('request_timeout');
    default:
      return new GatewayError('bad_request', { message: 'The request is not valid HTTP/1.1.' });
  }
}

export function answerClientError(error: Error & { code?: string }, socket: Duplex): void {
  // A reset connection has nobody left to answer.
  if (error.code === 'ECONNRESET' || socket.destroyed) return;
  // Bytes of an answer already under way on this connection must not be mixed with ours.
  if (!socket.writable || isAnswering(socket)) {
    socket.destroy();
    return;
  }
  const gatewayError = clientErrorAnswer(error);
  const body = JSON.stringify(errorBody(gatewayError, 'openai'));
  socket.end(
    `HTTP/1.1 ${gatewayError.status} ${STATUS_CODES[gatewayError.status] ?? 'Error'}\r\n` +
      'Content-Type: application/json; charset=utf-8\r\n' +
      `Content-Length: ${Buffer.byteLength(body)}\r\n` +
      'Connection: close\r\n\r\n' +
      body,
    // Written: close, whether or not the client ever closes its side.
    () => socket.destroy(),
  );
}
