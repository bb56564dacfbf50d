/**
 * The one reader of a budget in an admin request body: a key's `budget` and a member's
 * `maxBudget` (the cap on their keys' budgets together) are checked by the same rules.
 */
import { BUDGET_MAX } from '../../admin-api/common.js';
import { BUDGET_PERIODS, type KeyBudget } from '../../store/records.js';

const BUDGET_AMOUNTS = ['tokens', 'requests', 'gpuSeconds'] as const;
type BudgetAmount = (typeof BUDGET_AMOUNTS)[number];

/**
 * `null` clears every amount; an object names the amounts and period it changes. Problems go to
 * `issue` with JSON-pointer paths under `path` (`/budget/tokens`); the answer is then undefined.
 */
export function parseBudget(
  value: unknown,
  path: string,
  issue: (path: string, message: string) => void,
): Partial<KeyBudget> | undefined {
  if (value === null) return { tokens: null, requests: null, gpuSeconds: null };
  if (typeof value !== 'object' || Array.isArray(value)) {
    issue(
      path,
      'must be an object like {"tokens": 200000, "requests": null, "gpuSeconds": null, "period": "day"}, or null',
    );
    return undefined;
  }
  const budget: Partial<KeyBudget> = {};
  let valid = true;
  const fail = (at: string, message: string) => {
    valid = false;
    issue(at, message);
  };
  for (const [field, raw] of Object.entries(value)) {
    if (field === 'period') {
      const period = BUDGET_PERIODS.find((p) => p === raw);
      if (period) budget.period = period;
      else fail(`${path}/period`, `must be one of ${BUDGET_PERIODS.join(', ')}`);
    } else if (!(BUDGET_AMOUNTS as readonly string[]).includes(field)) {
      fail(`${path}/${field}`, `unknown field; expected one of ${[...BUDGET_AMOUNTS, 'period'].join(', ')}`);
    } else if (raw === null) {
      budget[field as BudgetAmount] = null;
    } else if (typeof raw !== 'number' || !Number.isInteger(raw) || raw < 1 || raw > BUDGET_MAX) {
      fail(`${path}/${field}`, `must be a whole number from 1 to ${BUDGET_MAX}, or null for no budget`);
    } else {
      budget[field as BudgetAmount] = raw;
    }
  }
  return valid ? budget : undefined;
}
