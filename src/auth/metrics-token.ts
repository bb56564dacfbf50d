/**
 * `metricsToken`: guards `GET /metrics` with `GATEHOUSE_METRICS_TOKEN` when it is set
 * (`Authorization: Bearer <token>`, compared in constant time); without the setting, scrapers
 * need nothing. Admin sessions and API keys do not open it: a scraper is neither.
 */
import { createHash, timingSafeEqual } from 'node:crypto';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { GatewayError } from '../core/errors.js';

export function metricsToken(token: string | undefined) {
  // Digests have one length whatever the guess, so the comparison time says nothing about it.
  const expected = token ? digest(token) : undefined;
  return async function metricsTokenHook(request: FastifyRequest, _reply: FastifyReply): Promise<void> {
    if (!expected) return;
    const header = request.headers.authorization;
    const match = typeof header === 'string' ? /^Bearer\s+(\S+)\s*$/i.exec(header) : null;
    if (match === null || !timingSafeEqual(digest(match[1]!), expected)) {
      throw new GatewayError('metrics_unauthorized', {
        headers: { 'www-authenticate': 'Bearer realm="gatehouse-metrics"' },
      });
    }
  };
}

function digest(value: string): Buffer {
  return createHash('sha256').update(value).digest();
}
