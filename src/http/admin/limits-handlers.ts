/**
 * Admin API: `GET /api/limits`, where per-key limits are counted right now, so the dashboard's
 * Keys page can say whether a key's limits hold for all replicas together or for each one.
 * The route and its admin chain are in the route table; this is only the handler.
 */
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { LimitsInfo } from '../../admin-api/types.js';
import type { LimitStore } from '../../limits/limit-store.js';

type Handler = (request: FastifyRequest, reply: FastifyReply) => Promise<LimitsInfo>;

export function createLimitsHandler(limits: Pick<LimitStore, 'status'>): Handler {
  return async (_request, reply) => {
    // Changes when Redis goes away or comes back: never a cached answer.
    void reply.header('cache-control', 'no-store');
    const status = limits.status();
    return {
      limitsScope: status.scope,
      redis: status.redis,
      unavailableSince: status.unavailableSince === null ? null : new Date(status.unavailableSince).toISOString(),
    };
  };
}
