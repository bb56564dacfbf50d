/**
 * Key budgets in the Keys page: the dialog's fields → the API's `budget` object (empty = no
 * budget of that kind), the PATCH that changes only what changed, and each bar's numbers. Also a
 * member's maximum budget: its text, and what of it their keys leave for one more.
 */
import type { ApiKey, BudgetPeriod, BudgetUse, KeyBudget } from '@gatehouse/admin-api/types.js';

export const BUDGET_FIELDS = ['tokens', 'requests', 'gpuSeconds'] as const;
export type BudgetField = (typeof BUDGET_FIELDS)[number];
export const BUDGET_PERIODS: readonly BudgetPeriod[] = ['day', 'week', 'month'];

/** The server's bound (src/http/admin/budget-input.ts). */
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

const number = (n: number) => n.toLocaleString('en');

/** `1,000 tokens, 100 requests per day`; `No cap` for null or a cap without amounts. */
export function capText(cap: KeyBudget | null): string {
  const parts = BUDGET_FIELDS.flatMap((field) => {
    const value = cap?.[field] ?? null;
    return value === null ? [] : [`${number(value)} ${BUDGET_TEXT[field].unit}`];
  });
  return cap && parts.length > 0 ? `${parts.join(', ')} per ${cap.period}` : 'No cap';
}

/**
 * What a member's maximum budget leaves for one key, per capped kind: the cap less the budgets of
 * their other non-revoked keys in the cap's period (the server's rule, `src/auth/budget-cap.ts`).
 */
export function capRoom(
  cap: KeyBudget | null,
  keys: readonly Pick<ApiKey, 'id' | 'status' | 'budget'>[],
  exceptId?: string,
): Partial<Record<BudgetField, number>> {
  const room: Partial<Record<BudgetField, number>> = {};
  if (!cap) return room;
  const others = keys.filter((k) => k.status !== 'revoked' && k.id !== exceptId && k.budget.period === cap.period);
  for (const field of BUDGET_FIELDS) {
    const limit = cap[field];
    if (limit === null) continue;
    const held = others.reduce((sum, k) => sum + (k.budget[field] ?? 0), 0);
    room[field] = Math.max(0, limit - held);
  }
  return room;
}

/** `600 tokens, 40 requests per day`: what `capRoom` leaves, as text. */
export function roomText(room: Partial<Record<BudgetField, number>>, period: BudgetPeriod): string {
  const parts = BUDGET_FIELDS.flatMap((field) => {
    const value = room[field];
    return value === undefined ? [] : [`${number(value)} ${BUDGET_TEXT[field].unit}`];
  });
  return `${parts.join(', ')} per ${period}`;
}
