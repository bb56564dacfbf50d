/**
 * Per-key limits in the Keys page: the form's three text fields → the API's `limits` object,
 * the PATCH that changes only what changed (null clears), and the one-line summaries.
 */
import type { KeyLimits, LimitsInfo } from '@gatehouse/admin-api/types.js';

export const LIMIT_FIELDS = ['rpm', 'tpm', 'concurrent'] as const;
export type LimitField = (typeof LIMIT_FIELDS)[number];

/** The server's bound (src/http/admin/keys-handlers.ts). */
const LIMIT_MAX = 1_000_000_000;

export const LIMIT_TEXT: Record<LimitField, { label: string; unit: string; hint: string }> = {
  rpm: { label: 'Requests / minute', unit: 'rpm', hint: 'Calls started in any 60 s.' },
  tpm: { label: 'Tokens / minute', unit: 'tpm', hint: 'Tokens of calls finished in any 60 s.' },
  concurrent: { label: 'Concurrent', unit: 'at once', hint: 'Calls in flight at the same time.' },
};

export type LimitInputs = Record<LimitField, string>;

export function limitInputs(limits: KeyLimits | null | undefined): LimitInputs {
  const text = (v: number | null | undefined) => (v === null || v === undefined ? '' : String(v));
  return { rpm: text(limits?.rpm), tpm: text(limits?.tpm), concurrent: text(limits?.concurrent) };
}

/**
 * The fields as limits (empty = no limit), or the problems by field. Spaces, `_` and the
 * thousands separators people type (`10,000`, `10 000`) are accepted.
 */
export function parseLimitInputs(inputs: LimitInputs): {
  limits: KeyLimits;
  errors: Partial<Record<LimitField, string>>;
} {
  const limits: KeyLimits = { rpm: null, tpm: null, concurrent: null };
  const errors: Partial<Record<LimitField, string>> = {};
  for (const field of LIMIT_FIELDS) {
    const raw = inputs[field].replace(/[\s,_'’]/g, '');
    if (raw === '') continue;
    if (!/^\d+$/.test(raw)) {
      errors[field] = 'A whole number, or empty for no limit.';
      continue;
    }
    const n = Number(raw);
    if (n < 1) errors[field] = 'At least 1 (empty for no limit).';
    else if (n > LIMIT_MAX) errors[field] = `At most ${LIMIT_MAX.toLocaleString('en')}.`;
    else limits[field] = n;
  }
  return { limits, errors };
}

/** Only the limits that differ from `before` (null clears one); undefined when none does. */
export function limitsPatch(before: KeyLimits, after: KeyLimits): Partial<KeyLimits> | undefined {
  const patch: Partial<KeyLimits> = {};
  for (const field of LIMIT_FIELDS) if (before[field] !== after[field]) patch[field] = after[field];
  return Object.keys(patch).length > 0 ? patch : undefined;
}

const compact = new Intl.NumberFormat('en', { notation: 'compact', maximumFractionDigits: 1 });

/** ["60 rpm", "100K tpm", "2 at once"]; empty when the key has none. */
export function limitParts(limits: KeyLimits | null | undefined): string[] {
  if (!limits) return [];
  return LIMIT_FIELDS.filter((f) => limits[f] !== null).map((f) => {
    const n = limits[f] as number;
    return `${n >= 10_000 ? compact.format(n) : n.toLocaleString('en')} ${LIMIT_TEXT[f].unit}`;
  });
}

/** The one line under the keys table: where limits are counted. `null` info: the gateway does not say. */
export function limitsScopeText(info: LimitsInfo | null): { tone: 'info' | 'warning'; text: string } {
  if (info === null) {
    return {
      tone: 'info',
      text: 'Limits are enforced per gateway process: with several replicas, each one allows a key its full limit.',
    };
  }
  if (info.limitsScope === 'shared') {
    return { tone: 'info', text: 'Limits are shared: every replica counts against the same limit (in Redis).' };
  }
  if (info.redis === 'unavailable') {
    return {
      tone: 'warning',
      text:
        'Redis is unreachable, so limits are enforced per replica until it is back: each replica allows a ' +
        'key its full limit.',
    };
  }
  return {
    tone: 'info',
    text:
      'Limits are enforced per replica (per gateway process): with several replicas, each one allows a key ' +
      'its full limit. Set GATEHOUSE_REDIS_URL to share them.',
  };
}
