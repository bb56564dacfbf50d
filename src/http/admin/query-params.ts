/**
 * Query-string parsing shared by the admin API's read routes: every problem is collected, then
 * answered at once as `422 validation_failed` with one `details` entry per parameter.
 */
import { GatewayError } from '../../core/errors.js';

export function parseStatus(raw: unknown, issues: Issues): { min: number; max: number } | undefined {
  if (raw === undefined || raw === '') return undefined;
  const text = typeof raw === 'string' ? raw.trim().toLowerCase() : '';
  if (/^[1-5]\d\d$/.test(text)) return { min: Number(text), max: Number(text) };
  if (/^[1-5]xx$/.test(text)) {
    const base = Number(text[0]) * 100;
    return { min: base, max: base + 99 };
  }
  issues.add('/status', 'must be a status code (429) or a class (2xx, 4xx, 5xx)');
  return undefined;
}

export function parseTime(query: Record<string, unknown>, name: string, issues: Issues): number | undefined {
  const raw = query[name];
  if (raw === undefined || raw === '') return undefined;
  const ms = typeof raw === 'string' && /^\d{4}-\d{2}-\d{2}/.test(raw) ? Date.parse(raw) : Number.NaN;
  if (Number.isNaN(ms)) {
    issues.add(`/${name}`, 'must be an ISO 8601 date-time, e.g. 2030-01-31T12:00:00Z');
    return undefined;
  }
  return ms;
}

export function optionalString(query: Record<string, unknown>, name: string, issues: Issues): string | undefined {
  const raw = query[name];
  if (raw === undefined || raw === '') return undefined;
  if (typeof raw !== 'string') {
    issues.add(`/${name}`, 'must be given once');
    return undefined;
  }
  return raw;
}

/** One of `choices`, or `fallback` when absent. */
export function oneOf<T extends string>(
  query: Record<string, unknown>,
  name: string,
  choices: readonly T[],
  fallback: T,
  issues: Issues,
): T {
  const raw = query[name];
  if (raw === undefined || raw === '') return fallback;
  if (typeof raw === 'string' && (choices as readonly string[]).includes(raw)) return raw as T;
  issues.add(`/${name}`, `must be one of ${choices.join(', ')}`);
  return fallback;
}

export function checkKnown(query: Record<string, unknown>, known: string[], issues: Issues): void {
  for (const name of Object.keys(query))
    if (!known.includes(name)) issues.add(`/${name}`, `unknown parameter; expected one of ${known.join(', ')}`);
}

export class Issues {
  readonly #list: Array<{ path: string; message: string }> = [];
  add(path: string, message: string): void {
    this.#list.push({ path, message });
  }
  throwIfAny(): void {
    if (this.#list.length > 0) {
      throw new GatewayError('validation_failed', {
        message: `Invalid query: ${this.#list.map((i) => `${i.path.slice(1)} ${i.message}`).join('; ')}.`,
        details: this.#list,
      });
    }
  }
}
