/** The Queue panel's logic: the admission queue grouped by model, and how long a call has waited. */
import type { QueueView, QueuedCallView } from '@gatehouse/admin-api/types.js';

export interface ModelQueue {
  /** null: calls that named no model. */
  model: string | null;
  generating: QueuedCallView[];
  loading: QueuedCallView[];
  /** In the order they would go (position 1 first), then the calls waiting for their key's own slots. */
  waiting: QueuedCallView[];
}

/** One entry per model with calls, models with waiting calls first, then by name. */
export function groupQueue(view: QueueView): ModelQueue[] {
  const byModel = new Map<string | null, ModelQueue>();
  const entry = (model: string | null) => {
    let group = byModel.get(model);
    if (!group) byModel.set(model, (group = { model, generating: [], loading: [], waiting: [] }));
    return group;
  };
  for (const call of view.inflight) entry(call.model)[call.phase === 'loading' ? 'loading' : 'generating'].push(call);
  for (const call of view.waiting) entry(call.model).waiting.push(call);
  const place = (call: QueuedCallView) => call.position ?? Number.MAX_SAFE_INTEGER;
  for (const group of byModel.values()) group.waiting.sort((a, b) => place(a) - place(b));
  return [...byModel.values()].sort(
    (a, b) =>
      Number(b.waiting.length > 0) - Number(a.waiting.length > 0) || (a.model ?? '').localeCompare(b.model ?? ''),
  );
}

/** "8 s", "2 min 5 s", "1 h 3 min": a wait, to the second while it is short. */
export function formatWait(sinceIso: string, now: number): string {
  const since = Date.parse(sinceIso);
  if (Number.isNaN(since)) return '—';
  // The browser's clock may run a little behind the server's: never a negative wait.
  const s = Math.max(0, Math.floor((now - since) / 1000));
  if (s < 60) return `${s} s`;
  const min = Math.floor(s / 60);
  if (min < 60) return `${min} min ${s % 60} s`;
  return `${Math.floor(min / 60)} h ${min % 60} min`;
}
