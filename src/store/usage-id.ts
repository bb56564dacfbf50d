/**
 * Usage record ids (and audit entry ids, which page the same way): `<time>-<process tag>-<counter>`,
 * the call's time in base36 (9 digits, so ids sort like the time they carry), a random tag per
 * process (replicas share a database) and a counter. The request log is keyed by (at, id), and a
 * call is found by its id alone because the id says which `at` to look in (`usageIdTime`).
 */
import { randomBytes } from 'node:crypto';

const TIME_DIGITS = 9;
const PROCESS_TAG = randomBytes(4).toString('hex');
let sequence = 0;

/** A unique, time-ordered id for a call that started at `at` (epoch ms). */
export function newUsageId(at: number): string {
  sequence = (sequence + 1) % 0x7fffffff;
  return `${timePrefix(at)}-${PROCESS_TAG}-${sequence.toString(36).padStart(6, '0')}`;
}

/** The time (epoch ms) an id begins with, or undefined when it is not one of ours. */
export function usageIdTime(id: string): number | undefined {
  if (id.length <= TIME_DIGITS || id[TIME_DIGITS] !== '-' || !/^[0-9a-z]+$/.test(id.slice(0, TIME_DIGITS)))
    return undefined;
  const at = Number.parseInt(id.slice(0, TIME_DIGITS), 36);
  return Number.isSafeInteger(at) ? at : undefined;
}

let lastMs = -1;
let lastPrefix = '';

/** The base36 time an id starts with (epoch ms, whole). */
function timePrefix(at: number): string {
  const ms = Math.max(0, Math.floor(at));
  // Calls under load start many to a millisecond: the previous prefix is mostly this one.
  if (ms !== lastMs) {
    lastMs = ms;
    lastPrefix = ms.toString(36).padStart(TIME_DIGITS, '0');
  }
  return lastPrefix;
}
