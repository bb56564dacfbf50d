/**
 * `jsonContentType`: an admin request with a body must send `Content-Type: application/json`
 * (`415 unsupported_media_type` otherwise); `POST`, `PUT` and `PATCH` always count as having
 * one. This is a cross-site fence as much as a format rule: an HTML form or a "simple"
 * `fetch` can only send `text/plain`, `application/x-www-form-urlencoded` or
 * `multipart/form-data` without a CORS preflight, which this server never grants. Runs before
 * Fastify parses the body (Fastify would happily parse `text/plain`).
 */
import type { FastifyReply, FastifyRequest } from 'fastify';
import { GatewayError } from '../../core/errors.js';

const ALWAYS_BODY = new Set(['POST', 'PUT', 'PATCH']);

export function jsonContentType() {
  return async function jsonContentTypeHook(request: FastifyRequest, _reply: FastifyReply): Promise<void> {
    const hasBody =
      ALWAYS_BODY.has(request.method) ||
      request.headers['transfer-encoding'] !== undefined ||
      (request.headers['content-length'] !== undefined && request.headers['content-length'] !== '0');
    if (!hasBody) return;
    const type = request.headers['content-type'];
    const mediaType = type?.split(';')[0]?.trim().toLowerCase();
    if (mediaType === 'application/json') return;
    throw new GatewayError('unsupported_media_type', {
      message:
        'The admin API accepts only JSON: send Content-Type: application/json' +
        (type ? ` (got ${JSON.stringify(type)})` : ' (none was sent)') +
        ', with {} when there is nothing to say.',
      details: [{ path: '/headers/content-type', message: 'must be application/json' }],
    });
  };
}
