/** `GET /api/budgets` and `GET /api/limits`: what bounds keys right now. Neither takes input. */
import { Type } from 'typebox';
import { BudgetPeriod, Iso } from './common.js';

/** One budget's use in the current period; reservations of calls in flight count as used. */
export const BudgetUse = Type.Object({
  kind: Type.Union([Type.Literal('tokens'), Type.Literal('requests'), Type.Literal('gpuSeconds')]),
  limit: Type.Integer(),
  used: Type.Number(),
});

/** A key's use of each of its budgets in the current period. */
export const KeyBudgetUse = Type.Object({
  id: Type.String(),
  period: BudgetPeriod,
  periodStart: Iso,
  resetsAt: Iso,
  budgets: Type.Array(BudgetUse),
});

/** `GET /api/budgets`: every active key with a budget. */
export const BudgetList = Type.Object({ keys: Type.Array(KeyBudgetUse) });

/** `GET /api/limits`: where per-key limits are counted right now. */
export const LimitsInfo = Type.Object({
  limitsScope: Type.Union([Type.Literal('replica'), Type.Literal('shared')], {
    description: '`shared`: in Redis, for every replica together; `replica`: by each gateway process alone.',
  }),
  redis: Type.Union([Type.Literal('off'), Type.Literal('connected'), Type.Literal('unavailable')]),
  unavailableSince: Type.Union([Iso, Type.Null()]),
});
