/**
 * Admin API: `GET /api/budgets`, each key's use of its budgets in the current period (the
 * dashboard's bars), from the same counters the `/v1` budget step checks. Keys without a
 * budget are left out. The route and its admin chain are in the route table.
 */
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { BudgetList, BudgetUse } from '../../admin-api/types.js';
import { keyStatus } from '../../auth/api-keys.js';
import { hasBudget } from '../../store/records.js';
import type { Store } from '../../store/store.js';
import type { UsageAccounting } from '../../usage/usage-accounting.js';

type Handler = (request: FastifyRequest, reply: FastifyReply) => Promise<BudgetList>;

export function createBudgetsHandler(
  store: Store,
  usage: Pick<UsageAccounting, 'budgetUse'>,
  now: () => number = Date.now,
): Handler {
  return async (request, reply) => {
    void reply.header('cache-control', 'no-store');
    const at = now();
    // A member sees their own keys' budgets only.
    const identity = request.adminIdentity;
    const member = identity?.via === 'session' && identity.user.role === 'member' ? identity.user : undefined;
    const owned = member ? { ownerId: member.id } : undefined;
    const keys = (await store.keys.list(owned)).filter(
      (key) => hasBudget(key.budget) && keyStatus(key, at) === 'active',
    );
    return {
      keys: await Promise.all(
        keys.map(async (key) => {
          const { window, used } = await usage.budgetUse(key.id, key.budget.period);
          const budgets: BudgetUse[] = [];
          if (key.budget.tokens !== null) budgets.push({ kind: 'tokens', limit: key.budget.tokens, used: used.tokens });
          if (key.budget.requests !== null)
            budgets.push({ kind: 'requests', limit: key.budget.requests, used: used.requests });
          if (key.budget.gpuSeconds !== null)
            budgets.push({ kind: 'gpuSeconds', limit: key.budget.gpuSeconds, used: Math.round(used.gpuMs) / 1000 });
          return {
            id: key.id,
            period: key.budget.period,
            periodStart: new Date(window.start).toISOString(),
            resetsAt: new Date(window.end).toISOString(),
            budgets,
          };
        }),
      ),
    };
  };
}
