/** The Queue panel's grouping and wait times, and the key priority field's check. */
import { describe, expect, it } from 'vitest';
import type { QueuedCallView, QueueView } from '../../src/admin-api/types.js';
import { formatPriority, priorityError } from '../../web/src/lib/priority.js';
import { formatWait, groupQueue } from '../../web/src/lib/queue.js';

const call = (id: string, model: string | null, phase: QueuedCallView['phase'], position: number | null) => ({
  id,
  model,
  key: null,
  phase,
  since: '2026-01-01T00:00:00.000Z',
  position,
  priority: 0,
});

describe('the Queue panel', () => {
  it('groups calls by model, models with waiting calls first, waiting calls by position', () => {
    const view: QueueView = {
      scope: 'replica',
      caps: 'replica',
      inflight: [call('a', 'alpha', 'generating', null), call('b', 'zeta', 'loading', null)],
      waiting: [call('c', 'zeta', 'queued', 2), call('d', 'zeta', 'queued', 1)],
    };
    expect(
      groupQueue(view).map((g) => [g.model, g.generating.length, g.loading.length, g.waiting.map((w) => w.id)]),
    ).toEqual([
      ['zeta', 0, 1, ['d', 'c']],
      ['alpha', 1, 0, []],
    ]);
  });

  it('says how long a call has waited, to the second while short and never negative', () => {
    const since = '2026-01-01T00:00:00.000Z';
    const at = (s: number) => Date.parse(since) + s * 1000;
    expect([-2, 0, 59, 125, 3_780].map((s) => formatWait(since, at(s)))).toEqual([
      '0 s',
      '0 s',
      '59 s',
      '2 min 5 s',
      '1 h 3 min',
    ]);
  });
});

describe('a key’s priority', () => {
  it('accepts whole numbers from -10 to 10 and nothing else', () => {
    expect([-10, 0, 10].map(priorityError)).toEqual([null, null, null]);
    expect([11, -11, 1.5, null].every((v) => priorityError(v) !== null)).toBe(true);
  });

  it('shows a sign', () => {
    expect([3, -2, 0].map(formatPriority)).toEqual(['+3', '\u22122', '0']);
  });
});
