import { describe, expect, it } from 'vitest';
import { shareHolder } from '../../src/core/context.js';
import { SpoolBudget } from '../../src/proxy/spool-budget.js';

const MiB = 1024 * 1024;

describe('SpoolBudget', () => {
  it("counts a person's keys together: more keys buy neither more bodies nor more bytes", () => {
    const budget = new SpoolBudget({ maxBytes: 100 * MiB, maxPerKey: 2 });
    const mallory1 = shareHolder('key_1', 'usr_mallory');
    const mallory2 = shareHolder('key_2', 'usr_mallory');
    budget.open(mallory1, 10 * MiB);
    budget.open(mallory2, 10 * MiB);
    expect(() => budget.open(shareHolder('key_3', 'usr_mallory'), MiB)).toThrow(
      expect.objectContaining({ code: 'spool_full', status: 503 }),
    );
    expect(budget.open(shareHolder('key_4', 'usr_alice'), MiB)).toBeDefined();
  });

  it('lets no one holder promise more than half of the total, so declared lengths cannot block everyone', () => {
    const budget = new SpoolBudget({ maxBytes: 100 * MiB, maxPerKey: 8 });
    const greedy = shareHolder('key_1', 'usr_mallory');
    budget.open(greedy, 30 * MiB);
    expect(() => budget.open(greedy, 30 * MiB)).toThrow(
      expect.objectContaining({ code: 'spool_full', headers: { 'retry-after': '5' } }),
    );
    const growing = budget.open(greedy, MiB);
    expect(() => growing.cover(25 * MiB)).toThrow(expect.objectContaining({ code: 'spool_full' }));
    // What is left of the total still takes another person's body, and the holder's share comes back.
    const other = budget.open(shareHolder('key_2', 'usr_alice'), 45 * MiB);
    other.release();
    growing.release();
    expect(budget.bytes).toBe(30 * MiB);
  });

  it('keeps keys of nobody (CLI, admin token) apart from each other', () => {
    const budget = new SpoolBudget({ maxBytes: 100 * MiB, maxPerKey: 1 });
    budget.open(shareHolder('key_1', undefined), MiB);
    expect(budget.open(shareHolder('key_2', undefined), MiB)).toBeDefined();
    expect(() => budget.open(shareHolder('key_1', undefined), MiB)).toThrow(
      expect.objectContaining({ code: 'spool_full' }),
    );
  });
});
