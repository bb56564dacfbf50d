/**
 * Limits and expiry an admin set on a key are ceilings for the member who owns it: the member may
 * tighten them (and loosen them again up to the ceiling), never raise or clear them, as with their
 * maximum budget. The ceiling is kept apart from the value, so a member's own tightening does not
 * lower it, and limits a member set alone stay theirs to loosen.
 */
import type { KeyCeilings, KeyLimits } from '../store/records.js';

/** A write of a key's limits or expiry, as the admin API and the CLI take it. */
export interface LimitsWrite {
  limits?: Partial<KeyLimits>;
  expiresAt?: number | null;
}

export const NO_CEILINGS: Readonly<KeyCeilings> = { rpm: null, tpm: null, concurrent: null, expiresAt: null };

const LIMITS = ['rpm', 'tpm', 'concurrent'] as const;

/** The ceilings an admin's write sets: each field it writes, `null` lifting that ceiling. */
export function ceilingsSetBy(write: LimitsWrite): Partial<KeyCeilings> {
  const ceilings: Partial<KeyCeilings> = {};
  for (const field of LIMITS) if (write.limits?.[field] !== undefined) ceilings[field] = write.limits[field];
  if (write.expiresAt !== undefined) ceilings.expiresAt = write.expiresAt;
  return ceilings;
}

/** Why a member's write goes above the ceilings, one entry per field (JSON-pointer paths); empty when it fits. */
export function ceilingRefusals(ceilings: KeyCeilings, write: LimitsWrite): Array<{ path: string; message: string }> {
  const details: Array<{ path: string; message: string }> = [];
  for (const field of LIMITS) {
    const ceiling = ceilings[field];
    const value = write.limits?.[field];
    if (ceiling === null || value === undefined || (value !== null && value <= ceiling)) continue;
    const cleared = value === null ? ' and not cleared' : '';
    details.push({ path: `/limits/${field}`, message: `at most ${ceiling}${cleared}: an admin set this limit` });
  }
  const ceiling = ceilings.expiresAt;
  const value = write.expiresAt;
  if (ceiling !== null && value !== undefined && (value === null || value > ceiling)) {
    const cleared = value === null ? ' and not cleared' : '';
    const latest = new Date(ceiling).toISOString();
    details.push({ path: '/expiresAt', message: `at the latest ${latest}${cleared}: an admin set this expiry` });
  }
  return details;
}
