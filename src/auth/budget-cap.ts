/**
 * A member's maximum budget: the most their non-revoked keys may hold in budgets together, per
 * kind, in one period. Per key it would mean nothing, as a member makes as many keys as they like.
 * For each kind the cap sets, every such key needs a budget of that kind in the cap's period
 * (a key without one could spend without bound), and the amounts must add up to at most the cap.
 * Expired keys count too: a new expiry would bring them back.
 */
import type { KeyBudget, KeyRecord } from '../store/records.js';

const KINDS = ['tokens', 'requests', 'gpuSeconds'] as const;
type Kind = (typeof KINDS)[number];
const UNITS: Record<Kind, string> = { tokens: 'tokens', requests: 'requests', gpuSeconds: 'GPU seconds' };

export interface BudgetCapRefusal {
  message: string;
  /** JSON-pointer paths into the key's body (`/budget/tokens`, `/budget/period`). */
  details: Array<{ path: string; message: string }>;
}

/**
 * Why `budget` (of the key being made or changed) does not fit `cap` beside the member's other
 * non-revoked keys, or undefined when it fits.
 */
export function budgetCapRefusal(
  cap: KeyBudget,
  budget: KeyBudget,
  others: ReadonlyArray<Pick<KeyRecord, 'name' | 'budget'>>,
): BudgetCapRefusal | undefined {
  const kinds = KINDS.filter((kind) => cap[kind] !== null);
  if (kinds.length === 0) return undefined;
  const per = `per ${cap.period}`;
  const details: BudgetCapRefusal['details'] = [];
  const remaining = {} as Record<Kind, number>;
  let blocked = false;
  if (budget.period !== cap.period)
    details.push({ path: '/budget/period', message: `must be ${cap.period}: your maximum budget is ${per}` });
  for (const kind of kinds) {
    const amount = (n: number) => `${n} ${UNITS[kind]}`;
    let held = 0;
    for (const other of others) {
      const value = other.budget[kind];
      if (value !== null && other.budget.period === cap.period) {
        held += value;
        continue;
      }
      blocked = true;
      details.push({
        path: `/budget/${kind}`,
        message: `your key ${JSON.stringify(other.name)} has no ${UNITS[kind]} budget ${per}`,
      });
    }
    remaining[kind] = Math.max(0, cap[kind]! - held);
    const own = budget[kind];
    if (held > cap[kind]!)
      details.push({
        path: `/budget/${kind}`,
        message: `your other keys hold ${amount(held)} ${per}, more than your maximum of ${amount(cap[kind]!)}`,
      });
    else if (own === null)
      details.push({ path: `/budget/${kind}`, message: `required: at most ${amount(remaining[kind])} ${per}` });
    else if (own > remaining[kind])
      details.push({
        path: `/budget/${kind}`,
        message: `at most ${amount(remaining[kind])} ${per} remain of your maximum of ${amount(cap[kind]!)}`,
      });
  }
  if (details.length === 0) return undefined;
  const list = (value: (kind: Kind) => number) => kinds.map((kind) => `${value(kind)} ${UNITS[kind]}`).join(', ');
  const message =
    `Your keys may hold at most ${list((kind) => cap[kind]!)} ${per} together (your maximum budget); ` +
    `${list((kind) => remaining[kind])} remain, so this key needs a budget of at most that ${per}.` +
    (blocked ? ' Give your other keys such a budget, or revoke them, first.' : '');
  return { message, details };
}
