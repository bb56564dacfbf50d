/** Expiry choices of the key form, turned into the ISO timestamp (or null) the API takes. */
export type ExpiryChoice = 'keep' | 'never' | '7d' | '30d' | '90d' | '365d' | 'custom';

export const EXPIRY_PRESETS: Array<{ value: ExpiryChoice; label: string; days?: number }> = [
  { value: 'never', label: 'Never' },
  { value: '7d', label: 'In 7 days', days: 7 },
  { value: '30d', label: 'In 30 days', days: 30 },
  { value: '90d', label: 'In 90 days', days: 90 },
  { value: '365d', label: 'In 1 year', days: 365 },
  { value: 'custom', label: 'On a date…' },
];

/**
 * `undefined`: leave unchanged; `null`: never expires; a string: ISO time. A custom date
 * means "through the end of that day", local time. Throws a readable message when invalid.
 */
export function expiryToIso(choice: ExpiryChoice, customDate: string, now = Date.now()): string | null | undefined {
  if (choice === 'keep') return undefined;
  if (choice === 'never') return null;
  if (choice === 'custom') {
    const match = /^(\d{4})-(\d{2})-(\d{2})$/.exec(customDate);
    if (!match) throw new Error('Pick a date.');
    const end = new Date(Number(match[1]), Number(match[2]) - 1, Number(match[3]), 23, 59, 59);
    if (end.getTime() <= now) throw new Error('The date must be in the future.');
    return end.toISOString();
  }
  const days = EXPIRY_PRESETS.find((preset) => preset.value === choice)?.days ?? 30;
  return new Date(now + days * 86_400_000).toISOString();
}

/** yyyy-mm-dd for <input type=date min>, local time. */
export function localDateInput(ms: number): string {
  const date = new Date(ms);
  const pad = (n: number) => String(n).padStart(2, '0');
  return `${date.getFullYear()}-${pad(date.getMonth() + 1)}-${pad(date.getDate())}`;
}
