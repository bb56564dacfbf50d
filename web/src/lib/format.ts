const dateTime = new Intl.DateTimeFormat(undefined, { dateStyle: 'medium', timeStyle: 'short' });
const dateOnly = new Intl.DateTimeFormat(undefined, { dateStyle: 'medium' });

export function formatDateTime(iso: string | null): string {
  if (!iso) return '—';
  const date = new Date(iso);
  return Number.isNaN(date.getTime()) ? iso : dateTime.format(date);
}

export function formatDate(iso: string | null): string {
  if (!iso) return '—';
  const date = new Date(iso);
  return Number.isNaN(date.getTime()) ? iso : dateOnly.format(date);
}

/** "3 min ago", "in 5 days", "just now". */
export function relativeTime(iso: string | null, now = Date.now()): string {
  if (!iso) return '—';
  const ms = new Date(iso).getTime();
  if (Number.isNaN(ms)) return iso;
  const diff = ms - now;
  const abs = Math.abs(diff);
  if (abs < 45_000) return 'just now';
  const units: Array<[number, string]> = [
    [60_000, 'min'],
    [3_600_000, 'h'],
    [86_400_000, 'day'],
    [30 * 86_400_000, 'month'],
    [365 * 86_400_000, 'year'],
  ];
  let value = Math.round(abs / 60_000);
  let unit = 'min';
  for (const [size, name] of units) {
    if (abs >= size * 0.95) {
      value = Math.round(abs / size);
      unit = name;
    }
  }
  const plural = value === 1 || unit === 'min' || unit === 'h' ? unit : `${unit}s`;
  return diff < 0 ? `${value} ${plural} ago` : `in ${value} ${plural}`;
}

/** llama-swap's ttl is in seconds; 0 or null means "stays loaded". */
export function formatTtl(seconds: number | null): string {
  if (seconds === null || seconds <= 0) return 'none';
  if (seconds < 120) return `${seconds} s`;
  if (seconds < 7200) return `${Math.round(seconds / 60)} min`;
  return `${Math.round((seconds / 3600) * 10) / 10} h`;
}
