/**
 * Usage page logic: the choices in its URL, number/time formatting, the chart's layers, stacks
 * and ticks, and the request log's filters and cells. Pure functions (type-checked by tsc);
 * the Svelte files only lay them out.
 */
import type {
  UsageExportFormat,
  UsageExportGroup,
  UsageGroup,
  UsageGroupBy,
  UsagePoint,
  UsageRange,
  UsageRequest,
  UsageRequestFilters,
  UsageStats,
  UsageSummary,
} from '@gatehouse/admin-api/types.js';

// ---- Choices (kept in the URL so a view can be linked) ----------------------------------

/** `bucket` follows "per" ("per 15 minutes"); `buckets` names several ("15-minute periods"). */
export const RANGES: ReadonlyArray<{ value: UsageRange; label: string; bucket: string; buckets: string }> = [
  { value: '1h', label: 'Last hour', bucket: 'minute', buckets: 'minutes' },
  { value: '24h', label: 'Last 24 hours', bucket: '15 minutes', buckets: '15-minute periods' },
  { value: '30d', label: 'Last 30 days', bucket: 'day', buckets: 'days' },
];

export const GROUPINGS: ReadonlyArray<{ value: UsageGroupBy; label: string }> = [
  { value: 'key', label: 'By key' },
  { value: 'model', label: 'By model' },
];

export function parseRange(value: string | null): UsageRange {
  return value === '1h' || value === '30d' ? value : '24h';
}

export function parseGroupBy(value: string | null): UsageGroupBy {
  return value === 'model' ? 'model' : 'key';
}

export function rangeLabel(range: UsageRange): string {
  return RANGES.find((r) => r.value === range)?.label ?? range;
}

// ---- Numbers --------------------------------------------------------------------------

const grouped = new Intl.NumberFormat(undefined, { maximumFractionDigits: 0 });
const compact = new Intl.NumberFormat(undefined, { notation: 'compact', maximumSignificantDigits: 3 });
const oneDecimal = new Intl.NumberFormat(undefined, { maximumFractionDigits: 1 });

/** 1,234 — every digit. */
export function formatCount(n: number): string {
  return grouped.format(n);
}

/** 1,234 below 10,000, then 12.3K, 381K, 2.14M (three digits: it fits a card). */
export function formatCompact(n: number): string {
  return Math.abs(n) < 10_000 ? grouped.format(n) : compact.format(n);
}

export function formatPercent(part: number, whole: number): string {
  if (whole <= 0) return '0 %';
  const pct = (part / whole) * 100;
  if (pct > 0 && pct < 0.1) return '<0.1 %';
  return `${oneDecimal.format(pct)} %`;
}

/** 0.4 ms → "<1 ms", 840 → "840 ms", 1234 → "1.23 s", 75000 → "1 min 15 s". */
export function formatMs(ms: number | null | undefined): string {
  if (ms === null || ms === undefined || !Number.isFinite(ms)) return '—';
  if (ms < 1) return '<1 ms';
  if (ms < 1000) return `${Math.round(ms)} ms`;
  if (ms < 10_000) return `${(ms / 1000).toFixed(2)} s`;
  if (ms < 60_000) return `${(ms / 1000).toFixed(1)} s`;
  const minutes = Math.floor(ms / 60_000);
  const seconds = Math.round((ms % 60_000) / 1000);
  return seconds === 0 ? `${minutes} min` : `${minutes} min ${seconds} s`;
}

/** Decimal units, as network tools show them: 980 B, 12.3 kB, 4.1 MB. */
export function formatBytes(n: number | null | undefined): string {
  if (n === null || n === undefined || !Number.isFinite(n)) return '—';
  if (n < 1000) return `${n} B`;
  const units = ['kB', 'MB', 'GB', 'TB'];
  let value = n;
  let unit = 'B';
  for (const next of units) {
    if (value < 1000) break;
    value /= 1000;
    unit = next;
  }
  return `${value < 10 ? value.toFixed(1) : Math.round(value)} ${unit}`;
}

/** Latency percentiles come from a histogram: shown as estimates. */
export function approxMs(ms: number | null | undefined): string {
  const text = formatMs(ms);
  return text === '—' ? text : `≈ ${text}`;
}

function totalTokens(stats: Pick<UsageStats, 'inputTokens' | 'outputTokens'>): number {
  return stats.inputTokens + stats.outputTokens;
}

// ---- Groups ---------------------------------------------------------------------------

/** A stable id for a group of the summary (also the chart layer's id). */
export function groupId(group: UsageGroup): string {
  if (group.key !== undefined) return `key:${group.key.id ?? ''}`;
  return `model:${group.model ?? ''}`;
}

export function groupLabel(group: UsageGroup): string {
  if (group.key !== undefined) {
    if (group.key.id === null) return 'No key';
    return group.key.name ?? group.key.id;
  }
  return group.model ?? 'No model';
}

/** What the request log can filter by for this group (null: the API has no filter for it). */
export function groupFilter(group: UsageGroup): { key: string } | { model: string } | null {
  if (group.key !== undefined) return group.key.id === null ? null : { key: group.key.id };
  return group.model === null || group.model === undefined ? null : { model: group.model };
}

export function groupHint(group: UsageGroup): string | null {
  if (group.key !== undefined && group.key.id === null)
    return 'Calls in open mode, or refused before a key was recognised';
  if (group.key === undefined && (group.model === null || group.model === undefined))
    return 'Calls that named no model';
  return null;
}

// ---- Chart ----------------------------------------------------------------------------

export type ChartMetric = 'requests' | 'tokens';

export const CHART_METRICS: ReadonlyArray<{ value: ChartMetric; label: string }> = [
  { value: 'requests', label: 'Requests' },
  { value: 'tokens', label: 'Tokens' },
];

/** How many colours the chart has; beyond them, groups are summed as "Other". */
const CHART_COLOURS = 6;

function metricValue(point: UsageStats, metric: ChartMetric): number {
  return metric === 'requests' ? point.requests : totalTokens(point);
}

export interface ChartLayer {
  id: string;
  label: string;
  /** 0 .. CHART_COLOURS-1, or -1 for "Other". */
  colour: number;
  values: number[];
  total: number;
}

/**
 * The stacked layers for a metric: one per group, in the summary's order (most requests first,
 * drawn from the bottom), the groups past the palette summed into "Other". Without groups (no
 * traffic, or no grouping) a single layer of all calls.
 */
export function chartLayers(summary: UsageSummary, metric: ChartMetric): ChartLayer[] {
  const layer = (id: string, label: string, colour: number, series: UsagePoint[]): ChartLayer => {
    const values = series.map((p) => metricValue(p, metric));
    return { id, label, colour, values, total: values.reduce((a, b) => a + b, 0) };
  };
  if (summary.groups.length === 0) return [layer('all', 'All calls', 0, summary.series)];
  const own = summary.groups.length > CHART_COLOURS ? CHART_COLOURS - 1 : CHART_COLOURS;
  const layers = summary.groups.slice(0, own).map((g, i) => layer(groupId(g), groupLabel(g), i, g.series));
  const rest = summary.groups.slice(own);
  if (rest.length > 0) {
    const values = summary.series.map((_, i) =>
      rest.reduce((sum, g) => sum + (g.series[i] ? metricValue(g.series[i], metric) : 0), 0),
    );
    layers.push({
      id: 'other',
      label: `Other (${rest.length})`,
      colour: -1,
      values,
      total: values.reduce((a, b) => a + b, 0),
    });
  }
  return layers;
}

/** The colour a group has in the chart (its index in the summary, or -1 when summed into "Other"). */
export function groupColour(index: number, groupCount: number): number {
  const own = groupCount > CHART_COLOURS ? CHART_COLOURS - 1 : CHART_COLOURS;
  return index < own ? index : -1;
}

export interface StackSegment {
  layer: number;
  from: number;
  to: number;
}

/** Per bucket: the layers' segments bottom-up (empty ones left out) and the bucket's total. */
export function stackBuckets(
  layers: ChartLayer[],
  buckets: number,
): Array<{ total: number; segments: StackSegment[] }> {
  return Array.from({ length: buckets }, (_, i) => {
    let top = 0;
    const segments: StackSegment[] = [];
    layers.forEach((layer, index) => {
      const value = layer.values[i] ?? 0;
      if (value <= 0) return;
      segments.push({ layer: index, from: top, to: top + value });
      top += value;
    });
    return { total: top, segments };
  });
}

/** A round axis maximum and its gridlines (integers only: these are counts). */
export function niceScale(max: number, lines = 4): { max: number; ticks: number[] } {
  if (!(max > 0)) return { max: lines, ticks: Array.from({ length: lines + 1 }, (_, i) => i) };
  const rough = max / lines;
  const magnitude = 10 ** Math.floor(Math.log10(rough));
  const step = Math.max(1, [1, 2, 2.5, 5, 10].map((m) => m * magnitude).find((s) => s >= rough) ?? 10 * magnitude);
  const stepInt = step < 1 ? 1 : Number.isInteger(step) ? step : Math.ceil(step);
  const top = Math.ceil(max / stepInt) * stepInt;
  const ticks: number[] = [];
  for (let v = 0; v <= top + stepInt / 2; v += stepInt) ticks.push(v);
  return { max: top, ticks };
}

const timeFmt = new Intl.DateTimeFormat(undefined, { hour: '2-digit', minute: '2-digit' });
const dayFmtUtc = new Intl.DateTimeFormat(undefined, { day: 'numeric', month: 'short', timeZone: 'UTC' });
const weekdayFmtUtc = new Intl.DateTimeFormat(undefined, {
  weekday: 'short',
  day: 'numeric',
  month: 'short',
  timeZone: 'UTC',
});
const dayFmt = new Intl.DateTimeFormat(undefined, { day: 'numeric', month: 'short' });

/** Which buckets get an x-axis label, and the label: round times, thinned to fit the width. */
export function xTicks(
  range: UsageRange,
  series: UsagePoint[],
  plotWidth: number,
): Array<{ index: number; label: string }> {
  const n = series.length;
  if (n === 0) return [];
  const candidates: Array<{ index: number; label: string }> = [];
  series.forEach((point, index) => {
    const t = new Date(point.t);
    if (range === '1h' && t.getMinutes() % 10 === 0) candidates.push({ index, label: timeFmt.format(t) });
    else if (range === '24h' && t.getMinutes() === 0 && t.getHours() % 3 === 0)
      candidates.push({ index, label: timeFmt.format(t) });
    else if (range === '30d' && (n - 1 - index) % 5 === 0) candidates.push({ index, label: dayFmtUtc.format(t) });
  });
  const minGap = 56;
  const perBucket = plotWidth / n;
  const every = Math.max(
    1,
    Math.ceil(minGap / Math.max(1, perBucket * (range === '30d' ? 5 : range === '24h' ? 12 : 10))),
  );
  return candidates.filter((_, i) => (candidates.length - 1 - i) % every === 0);
}

/** The bucket a tooltip talks about: "14:03–14:04", "12 Mar, 14:00–14:15", "Thu 12 Mar (UTC)". */
export function bucketLabel(range: UsageRange, t: string, stepMs: number): string {
  const start = new Date(t);
  const end = new Date(start.getTime() + stepMs);
  if (range === '30d') return `${weekdayFmtUtc.format(start)} (UTC day)`;
  const span = `${timeFmt.format(start)}–${timeFmt.format(end)}`;
  return range === '24h' ? `${dayFmt.format(start)}, ${span}` : span;
}

/** One bucket, after "per": "minute", "15 minutes", "day". */
export function bucketNoun(range: UsageRange): string {
  return RANGES.find((r) => r.value === range)?.bucket ?? 'bucket';
}

/** Several buckets: "minutes", "15-minute periods", "days" (never "15 minutess"). */
export function bucketsNoun(range: UsageRange): string {
  return RANGES.find((r) => r.value === range)?.buckets ?? 'buckets';
}

// ---- Request log ----------------------------------------------------------------------

export type Since = 'any' | '1h' | '24h' | '7d' | '30d' | 'custom';

export const SINCE_CHOICES: ReadonlyArray<{ value: Since; label: string; ms?: number }> = [
  { value: 'any', label: 'Any time' },
  { value: '1h', label: 'Last hour', ms: 3_600_000 },
  { value: '24h', label: 'Last 24 hours', ms: 86_400_000 },
  { value: '7d', label: 'Last 7 days', ms: 7 * 86_400_000 },
  { value: '30d', label: 'Last 30 days', ms: 30 * 86_400_000 },
  { value: 'custom', label: 'Between…' },
];

export const STATUS_CHOICES: ReadonlyArray<{ value: string; label: string }> = [
  { value: '', label: 'Any status' },
  { value: '2xx', label: '2xx success' },
  { value: '4xx', label: '4xx client errors' },
  { value: '429', label: '429 rate limited' },
  { value: '5xx', label: '5xx server errors' },
];

export interface LogFilterState {
  key: string;
  model: string;
  status: string;
  since: Since;
  /** `datetime-local` values (local time), used with since=custom. */
  from: string;
  to: string;
}

export function parseSince(value: string | null): Since {
  return SINCE_CHOICES.some((c) => c.value === value) ? (value as Since) : 'any';
}

export function parseStatusFilter(value: string | null): string {
  const v = (value ?? '').trim().toLowerCase();
  return /^[1-5]xx$/.test(v) || /^[1-5]\d\d$/.test(v) ? v : '';
}

const LOCAL_INPUT = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(:\d{2})?$/;

/** A `datetime-local` value as ISO (it is local time), or undefined when empty or malformed. */
export function localInputToIso(value: string): string | undefined {
  if (!LOCAL_INPUT.test(value)) return undefined;
  const date = new Date(value);
  return Number.isNaN(date.getTime()) ? undefined : date.toISOString();
}

/** The API query for the filters, times resolved against `now`. */
export function toRequestFilters(state: LogFilterState, now = Date.now()): UsageRequestFilters {
  const filters: UsageRequestFilters = {};
  if (state.key) filters.key = state.key;
  if (state.model.trim()) filters.model = state.model.trim();
  if (state.status) filters.status = state.status;
  if (state.since === 'custom') {
    const from = localInputToIso(state.from);
    const to = localInputToIso(state.to);
    if (from) filters.from = from;
    if (to) filters.to = to;
  } else {
    const ms = SINCE_CHOICES.find((c) => c.value === state.since)?.ms;
    if (ms) filters.from = new Date(now - ms).toISOString();
  }
  return filters;
}

// ---- Export -----------------------------------------------------------------------------

export const EXPORT_GROUPS: ReadonlyArray<{ value: UsageExportGroup; label: string }> = [
  { value: 'call', label: 'Each call' },
  { value: 'key', label: 'Per key' },
  { value: 'model', label: 'Per model' },
  { value: 'day', label: 'Per day' },
];

export const EXPORT_FORMATS: ReadonlyArray<{ value: UsageExportFormat; label: string }> = [
  { value: 'csv', label: 'CSV' },
  { value: 'json', label: 'JSON' },
];

/** The log's filters in words ("key alice · status 5xx · last 24 hours"); empty when none. */
export function describeFilters(state: LogFilterState, keyName: (id: string) => string): string {
  const parts: string[] = [];
  if (state.key) parts.push(`key ${keyName(state.key)}`);
  if (state.model.trim()) parts.push(`model ${state.model.trim()}`);
  if (state.status) parts.push(`status ${state.status}`);
  if (state.since === 'custom') {
    if (state.from) parts.push(`from ${state.from.replace('T', ' ')}`);
    if (state.to) parts.push(`before ${state.to.replace('T', ' ')}`);
  } else if (state.since !== 'any') {
    parts.push((SINCE_CHOICES.find((c) => c.value === state.since)?.label ?? state.since).toLowerCase());
  }
  return parts.join(' · ');
}

export function filtersActive(state: LogFilterState): boolean {
  return state.key !== '' || state.model.trim() !== '' || state.status !== '' || state.since !== 'any';
}

export type Tone = 'success' | 'warning' | 'danger' | 'neutral' | 'accent';

export function statusTone(status: number): Tone {
  if (status === 499) return 'neutral';
  if (status >= 500) return 'danger';
  if (status >= 400) return 'warning';
  if (status >= 200 && status < 300) return 'success';
  return 'neutral';
}

/** "≈ 8" when the count is an estimate (a stream cut short, or a backend that reports nothing). */
export function tokenCount(value: number | null, source: UsageRequest['tokensSource']): string {
  if (value === null) return '—';
  return source === 'estimate' ? `≈ ${formatCount(value)}` : formatCount(value);
}

export const TOKENS_SOURCE_TEXT: Record<NonNullable<UsageRequest['tokensSource']>, string> = {
  usage: 'from the response’s usage object',
  timings: 'from llama.cpp’s timings',
  estimate: 'estimated: the stream ended early or reported no counts',
};

export const ERROR_CLASS_TEXT: Record<string, string> = {
  client_abort: 'The client left before the end',
  rate_limited: 'Over one of the key’s limits',
  missing_api_key: 'No key was sent, and keys are required',
  invalid_api_key: 'The key is not known',
  revoked_api_key: 'The key has been revoked',
  expired_api_key: 'The key has expired',
  model_not_allowed: 'The key may not use this model',
  body_too_large: 'The request body is too large',
  invalid_json: 'The request body is not valid JSON',
  shutting_down: 'The gateway was shutting down',
  upstream_timeout: 'llama-swap took too long to answer',
  upstream_unreachable: 'llama-swap could not be reached',
  upstream_bad_gateway: 'llama-swap answered with something unusable',
  upstream_idle_timeout: 'The stream went silent for too long',
  upstream_stream_failed: 'The upstream stream broke',
  upstream_error: 'llama-swap’s own error',
  upstream_status: 'A model server’s error, relayed as is',
};

const secondsFmt = new Intl.DateTimeFormat(undefined, { hour: '2-digit', minute: '2-digit', second: '2-digit' });
const dayTimeFmt = new Intl.DateTimeFormat(undefined, {
  day: 'numeric',
  month: 'short',
  hour: '2-digit',
  minute: '2-digit',
});
const fullFmt = new Intl.DateTimeFormat(undefined, { dateStyle: 'medium', timeStyle: 'medium' });

/** "14:03:21" today, "12 Mar, 14:03" before. */
export function logTime(iso: string, now = Date.now()): string {
  const date = new Date(iso);
  if (Number.isNaN(date.getTime())) return iso;
  return date.toDateString() === new Date(now).toDateString() ? secondsFmt.format(date) : dayTimeFmt.format(date);
}

export function fullTime(iso: string): string {
  const date = new Date(iso);
  return Number.isNaN(date.getTime()) ? iso : fullFmt.format(date);
}

export function keyLabel(key: UsageRequest['key']): string {
  if (key === null) return 'no key';
  return key.name ?? key.id;
}

const CUT = /\n?\[\.\.\. (\d+) more bytes not captured\]$/;

/** A captured body for display: JSON re-indented when whole, the "not captured" tail apart. */
export function formatBody(body: string): { text: string; note: string | null } {
  const cut = CUT.exec(body);
  const head = cut ? body.slice(0, cut.index) : body;
  const note = cut ? `… ${formatCount(Number(cut[1]))} more bytes were not captured.` : null;
  const trimmed = head.trim();
  if (!cut && (trimmed.startsWith('{') || trimmed.startsWith('['))) {
    try {
      return { text: JSON.stringify(JSON.parse(trimmed), null, 2), note };
    } catch {
      // not JSON after all (or an SSE stream): shown as is
    }
  }
  return { text: head, note };
}

/** The CSS colour of a chart colour index (the palette is defined on the Usage page). */
export function colourVar(colour: number): string {
  return colour < 0 ? 'var(--chart-other)' : `var(--chart-${colour})`;
}
