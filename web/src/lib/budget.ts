/**
 * Key budgets in the Keys page: the dialog's fields → the API's `budget` object (empty = no
 * budget of that kind), the PATCH that changes only what changed, and each bar's numbers.
 */
import type { BudgetPeriod, BudgetUse, KeyBudget } from '../../../src/admin-api/types.js';

export const BUDGET_FIELDS = ['tokens', 'requests', 'gpuSeconds'] as const;
export type BudgetField = (typeof BUDGET_FIELDS)[number];
export const BUDGET_PERIODS: readonly BudgetPeriod[] = ['day', 'week', 'month'];

/** The server's bound (src/http/admin/keys-handlers.ts). */
const BUDGET_MAX = 1_000_000_000_000;
/** A bar warns from this share of its budget on. */
const BUDGET_WARN_AT = 0.8;

export const BUDGET_TEXT: Record<BudgetField, { label: string; unit: string }> = {
  tokens: { label: 'Tokens', unit: 'tokens' },
  requests: { label: 'Requests', unit: 'requests' },
  gpuSeconds: { label: 'GPU seconds', unit: 'GPU s' },
};

export interface BudgetInputs {
  tokens: string;
  requests: string;
  gpuSeconds: string;
  period: BudgetPeriod;
}

export function budgetInputs(budget: KeyBudget | null | undefined): BudgetInputs {
  const text = (v: number | null | undefined) => (v === null || v === undefined ? '' : String(v));
  return {
    tokens: text(budget?.tokens),
    requests: text(budget?.requests),
    gpuSeconds: text(budget?.gpuSeconds),
    period: budget?.period ?? 'day',
  };
}

/** The fields as a budget, or the problems by field; thousands separators are accepted. */
export function parseBudgetInputs(inputs: BudgetInputs): {
  budget: KeyBudget;
  errors: Partial<Record<BudgetField, string>>;
} {
  const budget: KeyBudget = { tokens: null, requests: null, gpuSeconds: null, period: inputs.period };
  const errors: Partial<Record<BudgetField, string>> = {};
  for (const field of BUDGET_FIELDS) {
    const raw = inputs[field].replace(/[\s,_'’]/g, '');
    if (raw === '') continue;
    const n = Number(raw);
    if (!/^\d+$/.test(raw)) errors[field] = 'A whole number, or empty for no budget.';
    else if (n < 1) errors[field] = 'At least 1 (empty for no budget).';
    else if (n > BUDGET_MAX) errors[field] = `At most ${BUDGET_MAX.toLocaleString('en')}.`;
    else budget[field] = n;
  }
  return { budget, errors };
}

/** Only what differs from `before` (null clears an amount); undefined when nothing does. */
export function budgetPatch(before: KeyBudget, after: KeyBudget): Partial<KeyBudget> | undefined {
  const patch: Partial<KeyBudget> = {};
  for (const field of BUDGET_FIELDS) if (before[field] !== after[field]) patch[field] = after[field];
  if (before.period !== after.period) patch.period = after.period;
  return Object.keys(patch).length > 0 ? patch : undefined;
}

/** One bar: how full (0..1, capped), whether it warns, and its text (`1,234 / 200,000 tokens`). */
export function budgetBar(use: BudgetUse): { share: number; warn: boolean; text: string } {
  const share = use.limit > 0 ? Math.min(1, use.used / use.limit) : 1;
  const number = (n: number) => n.toLocaleString('en', { maximumFractionDigits: 1 });
  return {
    share,
    warn: share >= BUDGET_WARN_AT,
    text: `${number(use.used)} / ${number(use.limit)} ${BUDGET_TEXT[use.kind].unit}`,
  };
}
