/**
 * Budget periods in GATEHOUSE_TIMEZONE: local midnight, Monday, the 1st, and the days daylight
 * saving time makes 23 or 25 hours long (or starts after midnight).
 */
import { describe, expect, it } from 'vitest';
import { periodWindow } from '../../src/budgets/budget-period.js';

function iso(window: { start: number; end: number }): [string, string] {
  return [new Date(window.start).toISOString(), new Date(window.end).toISOString()];
}
const at = (text: string) => Date.parse(text);

describe('budget periods', () => {
  it('cuts UTC days at midnight, and the last millisecond of a day still belongs to it', () => {
    expect(iso(periodWindow(at('2030-01-15T12:00:00Z'), 'day', 'UTC'))).toEqual([
      '2030-01-15T00:00:00.000Z',
      '2030-01-16T00:00:00.000Z',
    ]);
    expect(iso(periodWindow(at('2030-01-15T23:59:59.999Z'), 'day', 'UTC'))[0]).toBe('2030-01-15T00:00:00.000Z');
    expect(iso(periodWindow(at('2030-01-16T00:00:00.000Z'), 'day', 'UTC'))[0]).toBe('2030-01-16T00:00:00.000Z');
  });

  it('starts weeks on Monday, across a month and a year end', () => {
    // 2030-01-01 is a Tuesday: its week began on Monday 2029-12-31.
    expect(iso(periodWindow(at('2030-01-01T08:00:00Z'), 'week', 'UTC'))).toEqual([
      '2029-12-31T00:00:00.000Z',
      '2030-01-07T00:00:00.000Z',
    ]);
    // A Sunday is the last day of its week, a Monday the first of the next.
    expect(iso(periodWindow(at('2030-01-06T23:00:00Z'), 'week', 'UTC'))[0]).toBe('2029-12-31T00:00:00.000Z');
    expect(iso(periodWindow(at('2030-01-07T00:00:00Z'), 'week', 'UTC'))[0]).toBe('2030-01-07T00:00:00.000Z');
  });

  it('runs months from the 1st to the 1st, February of a leap year included', () => {
    expect(iso(periodWindow(at('2028-02-29T10:00:00Z'), 'month', 'UTC'))).toEqual([
      '2028-02-01T00:00:00.000Z',
      '2028-03-01T00:00:00.000Z',
    ]);
    expect(iso(periodWindow(at('2030-12-31T23:00:00Z'), 'month', 'UTC'))).toEqual([
      '2030-12-01T00:00:00.000Z',
      '2031-01-01T00:00:00.000Z',
    ]);
  });

  it('counts in local time in another zone: a Berlin day, week and month', () => {
    // 23:30 UTC on the 14th is already the 15th in Berlin (UTC+1 in winter).
    expect(iso(periodWindow(at('2030-01-14T23:30:00Z'), 'day', 'Europe/Berlin'))).toEqual([
      '2030-01-14T23:00:00.000Z',
      '2030-01-15T23:00:00.000Z',
    ]);
    expect(iso(periodWindow(at('2030-01-14T23:30:00Z'), 'week', 'Europe/Berlin'))).toEqual([
      '2030-01-13T23:00:00.000Z',
      '2030-01-20T23:00:00.000Z',
    ]);
    expect(iso(periodWindow(at('2030-05-31T22:30:00Z'), 'month', 'Europe/Berlin'))).toEqual([
      '2030-05-31T22:00:00.000Z',
      '2030-06-30T22:00:00.000Z',
    ]);
    // Half-hour and quarter-hour offsets.
    expect(iso(periodWindow(at('2030-01-15T12:00:00Z'), 'day', 'Asia/Kathmandu'))).toEqual([
      '2030-01-14T18:15:00.000Z',
      '2030-01-15T18:15:00.000Z',
    ]);
  });

  it('follows daylight saving time: a 23-hour day in spring, a 25-hour day in autumn, a month across both', () => {
    // Berlin: clocks go forward on 2030-03-31 and back on 2030-10-27.
    const spring = periodWindow(at('2030-03-31T12:00:00Z'), 'day', 'Europe/Berlin');
    expect(iso(spring)).toEqual(['2030-03-30T23:00:00.000Z', '2030-03-31T22:00:00.000Z']);
    expect(spring.end - spring.start).toBe(23 * 3_600_000);
    const autumn = periodWindow(at('2030-10-27T12:00:00Z'), 'day', 'Europe/Berlin');
    expect(iso(autumn)).toEqual(['2030-10-26T22:00:00.000Z', '2030-10-27T23:00:00.000Z']);
    expect(autumn.end - autumn.start).toBe(25 * 3_600_000);
    expect(iso(periodWindow(at('2030-03-15T12:00:00Z'), 'month', 'Europe/Berlin'))).toEqual([
      '2030-02-28T23:00:00.000Z',
      '2030-03-31T22:00:00.000Z',
    ]);
  });

  it('starts a day whose midnight daylight saving time skips at the first moment that exists', () => {
    // Santiago moves its clocks from 00:00 to 01:00 on 2026-09-06: that day starts at 01:00 (-03).
    expect(iso(periodWindow(at('2026-09-06T12:00:00Z'), 'day', 'America/Santiago'))).toEqual([
      '2026-09-06T04:00:00.000Z',
      '2026-09-07T03:00:00.000Z',
    ]);
  });

  it('moves to the next period exactly at its end', () => {
    const first = periodWindow(at('2030-01-15T12:00:00Z'), 'day', 'America/New_York');
    const next = periodWindow(first.end, 'day', 'America/New_York');
    expect(next.start).toBe(first.end);
    expect(periodWindow(first.end - 1, 'day', 'America/New_York')).toEqual(first);
  });
});
