/**
 * Calendar periods of budgets in the operator's time zone (`GATEHOUSE_TIMEZONE`, an IANA name;
 * default UTC): a day starts at local midnight, a week on Monday at local midnight, a month on
 * its 1st. The zone's rules (DST included) come from the runtime's own time-zone data through
 * `Intl.DateTimeFormat`; the rest is plain date arithmetic on UTC dates.
 */
import type { BudgetPeriod } from '../store/records.js';

/** A period: [start, end) in epoch ms; `end` is when the budget resets. */
export interface PeriodWindow {
  start: number;
  end: number;
}

const formatters = new Map<string, Intl.DateTimeFormat>();

function formatter(timeZone: string): Intl.DateTimeFormat {
  let f = formatters.get(timeZone);
  if (!f) {
    f = new Intl.DateTimeFormat('en-US', {
      timeZone,
      year: 'numeric',
      month: 'numeric',
      day: 'numeric',
      hourCycle: 'h23',
    });
    formatters.set(timeZone, f);
  }
  return f;
}

/** The local calendar date at `ms` in `timeZone`, as a UTC midnight (so date math is plain UTC math). */
function localDate(ms: number, timeZone: string): number {
  let year = 0;
  let month = 0;
  let day = 0;
  for (const part of formatter(timeZone).formatToParts(ms)) {
    if (part.type === 'year') year = Number(part.value);
    else if (part.type === 'month') month = Number(part.value);
    else if (part.type === 'day') day = Number(part.value);
  }
  return Date.UTC(year, month - 1, day);
}

const DAY_MS = 86_400_000;
/** Zone offsets stay within -12 h .. +14 h; a margin either side. */
const SEARCH_MS = 16 * 3_600_000;

/**
 * The first instant whose local date in `timeZone` is `date` (a UTC midnight) or later: local
 * midnight, or the first moment after it where a DST change skips midnight. A binary search
 * over the hours around it: local dates only move forward there.
 */
function startOfLocalDate(date: number, timeZone: string): number {
  let lo = date - SEARCH_MS;
  let hi = date + SEARCH_MS;
  while (hi - lo > 1) {
    const mid = Math.floor((lo + hi) / 2);
    if (localDate(mid, timeZone) >= date) hi = mid;
    else lo = mid;
  }
  return hi;
}

/** The first local date of the period holding local date `date`. */
function periodFirstDate(date: number, period: BudgetPeriod): number {
  const d = new Date(date);
  if (period === 'day') return date;
  if (period === 'week') return date - ((d.getUTCDay() + 6) % 7) * DAY_MS; // Monday first
  return Date.UTC(d.getUTCFullYear(), d.getUTCMonth(), 1);
}

/** The first local date of the next period. */
function nextPeriodFirstDate(first: number, period: BudgetPeriod): number {
  const d = new Date(first);
  if (period === 'day') return Date.UTC(d.getUTCFullYear(), d.getUTCMonth(), d.getUTCDate() + 1);
  if (period === 'week') return Date.UTC(d.getUTCFullYear(), d.getUTCMonth(), d.getUTCDate() + 7);
  return Date.UTC(d.getUTCFullYear(), d.getUTCMonth() + 1, 1);
}

/** The last window computed per zone and period: every key shares it until it ends. */
const lastWindow = new Map<string, PeriodWindow>();

/** The period holding `nowMs` in `timeZone`. */
export function periodWindow(nowMs: number, period: BudgetPeriod, timeZone: string): PeriodWindow {
  const cacheKey = `${timeZone}\u0000${period}`;
  const cached = lastWindow.get(cacheKey);
  if (cached && nowMs >= cached.start && nowMs < cached.end) return cached;
  const first = periodFirstDate(localDate(nowMs, timeZone), period);
  const window = {
    start: startOfLocalDate(first, timeZone),
    end: startOfLocalDate(nextPeriodFirstDate(first, period), timeZone),
  };
  lastWindow.set(cacheKey, window);
  return window;
}
