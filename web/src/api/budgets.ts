/** `GET /api/budgets` (docs/admin-api.md, "Budgets"). */
import { request } from './http.js';
import type { BudgetList, KeyBudgetUse } from '@gatehouse/admin-api/types.js';

/** Each active key's use of its budgets in the current period. */
export async function listBudgets(signal?: AbortSignal): Promise<KeyBudgetUse[]> {
  const { keys } = await request<BudgetList>('GET', '/api/budgets', { signal });
  return keys;
}
