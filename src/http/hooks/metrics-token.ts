/**
 * `metricsToken`: guards `GET /metrics` with `GATEHOUSE_METRICS_TOKEN` when it is set
 * (`Authorization: Bearer <token>`, compared in constant time); without the setting, scrapers
 * need nothing. Admin sessions and API keys do not open it: a scraper is neither.
 */
import type { FastifyReply, FastifyRequest } from 'fastify';
import { bearerTokenMatcher } from '../../auth/bearer-token.js';
import { GatewayError } from '../../core/errors.js';

export function metricsToken(token: string | undefined) {
  const matches = bearerTokenMatcher(token);
  return async function metricsTokenHook(request: FastifyRequest, _reply: FastifyReply): Promise<void> {
    if (!matches) return;
    if (!matches(request.headers.authorization)) {
      throw new GatewayError('metrics_unauthorized', {
        headers: { 'www-authenticate': 'Bearer realm="gatehouse-metrics"' },
      });
    }
  };
}
