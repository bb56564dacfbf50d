/** The Usage chart's words for its buckets, which screen readers hear in its label and caption. */
import { describe, expect, it } from 'vitest';
import { bucketNoun, bucketsNoun, RANGES } from '../../web/src/lib/usage.js';

describe('usage chart bucket nouns', () => {
  it('names one bucket after "per" and several in plain plural, for every range', () => {
    expect(RANGES.map((r) => `per ${bucketNoun(r.value)}; between ${bucketsNoun(r.value)}`)).toEqual([
      'per minute; between minutes',
      'per 15 minutes; between 15-minute periods',
      'per day; between days',
    ]);
  });

  it('never doubles a plural s', () => {
    for (const range of RANGES) expect(bucketsNoun(range.value)).not.toMatch(/ss$/);
  });
});
