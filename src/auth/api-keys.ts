/**
 * The gateway's own API keys: `sk-` + 32 random bytes in base62 (43 characters, zero-padded
 * so every key has the same length). At rest there is only the SHA-256 hex of the full key
 * and a short display prefix; the raw key exists in memory while it is created and shown
 * once, and never again.
 */
import { hash, randomBytes } from 'node:crypto';
import type { KeyBudget, KeyLimits, KeyRecord } from '../store/records.js';

export const API_KEY_PREFIX = 'sk-';
const BASE62 = '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz';
const SECRET_BYTES = 32;
/** ceil(256 / log2(62)): the digits 2^256 - 1 needs in base62. */
const API_KEY_BODY_LENGTH = 43;
export const API_KEY_LENGTH = API_KEY_PREFIX.length + API_KEY_BODY_LENGTH;
/** Body characters shown in the display prefix (`sk-` + 6). 62^6 ≈ 5.7e10, unique in practice. */
const DISPLAY_CHARS = 6;
const KEY_ID_PREFIX = 'key_';
const KEY_ID_CHARS = 12;

export interface GeneratedApiKey {
  /** The full key, to hand to the caller once. Never store or log it. */
  secret: string;
  /** SHA-256 hex of `secret`: what the store keeps. */
  hash: string;
  /** What people see in lists, e.g. `sk-3fK9aZ`. */
  prefix: string;
}

export function generateApiKey(): GeneratedApiKey {
  const secret = API_KEY_PREFIX + encodeBase62(randomBytes(SECRET_BYTES), API_KEY_BODY_LENGTH);
  return { secret, hash: hashApiKey(secret), prefix: displayPrefix(secret) };
}

/**
 * SHA-256 hex of the full key, `sk-` included. Fast on purpose: keys carry 256 bits. Runs on
 * every authenticated call: the one-shot `hash()` skips creating a Hash object.
 */
export function hashApiKey(raw: string): string {
  return hash('sha256', raw, 'hex');
}

export function displayPrefix(secret: string): string {
  return secret.slice(0, API_KEY_PREFIX.length + DISPLAY_CHARS);
}

/** `key_` + 12 base62 characters, drawn without modulo bias. */
export function newKeyId(): string {
  let id = KEY_ID_PREFIX;
  while (id.length < KEY_ID_PREFIX.length + KEY_ID_CHARS) {
    for (const byte of randomBytes(16)) {
      // 248 = 4 * 62: bytes above it would favour the first characters.
      if (byte < 248 && id.length < KEY_ID_PREFIX.length + KEY_ID_CHARS) id += BASE62[byte % 62];
    }
  }
  return id;
}

/** Big-endian base62 of `bytes`, left-padded with `0` to `length` digits. */
export function encodeBase62(bytes: Uint8Array, length: number): string {
  let n = BigInt(`0x${Buffer.from(bytes).toString('hex') || '0'}`);
  let out = '';
  while (n > 0n) {
    out = BASE62[Number(n % 62n)]! + out;
    n /= 62n;
  }
  if (out.length > length) throw new RangeError(`${bytes.length} bytes do not fit in ${length} base62 digits`);
  return out.padStart(length, '0');
}

export type KeyStatus = 'active' | 'revoked' | 'expired';

/** Revoked wins over expired: it is the deliberate act, and it is permanent. */
export function keyStatus(key: Pick<KeyRecord, 'revokedAt' | 'expiresAt'>, nowMs: number): KeyStatus {
  if (key.revokedAt !== null) return 'revoked';
  if (key.expiresAt !== null && key.expiresAt <= nowMs) return 'expired';
  return 'active';
}

/** A key as the admin API and `keys list --json` show it: no hash, ISO timestamps. */
export interface KeyView {
  id: string;
  name: string;
  prefix: string;
  createdAt: string;
  lastUsedAt: string | null;
  expiresAt: string | null;
  revokedAt: string | null;
  models: string[];
  note: string;
  limits: KeyLimits;
  /** Place in the admission queue, -10..10: higher goes first. */
  priority: number;
  /** May list, load and unload models (`/models*`). */
  manage: boolean;
  budget: KeyBudget;
  status: KeyStatus;
  /** The owning user's id and name; null for keys made with the admin token or the CLI. */
  ownerId: string | null;
  ownerName: string | null;
}

/** `ownerNames`: user id → name, for the owner's name beside the id. */
export function toKeyView(key: KeyRecord, nowMs: number, ownerNames: ReadonlyMap<string, string> = new Map()): KeyView {
  return {
    id: key.id,
    name: key.name,
    prefix: key.prefix,
    createdAt: new Date(key.createdAt).toISOString(),
    lastUsedAt: isoOrNull(key.lastUsedAt),
    expiresAt: isoOrNull(key.expiresAt),
    revokedAt: isoOrNull(key.revokedAt),
    models: [...key.models],
    note: key.note,
    limits: { ...key.limits },
    priority: key.priority,
    manage: key.manage,
    budget: { ...key.budget },
    status: keyStatus(key, nowMs),
    ownerId: key.ownerId,
    ownerName: key.ownerId === null ? null : (ownerNames.get(key.ownerId) ?? null),
  };
}

function isoOrNull(ms: number | null): string | null {
  return ms === null ? null : new Date(ms).toISOString();
}

export interface NewKeyInput {
  name: string;
  models?: string[];
  expiresAt?: number | null;
  note?: string;
  limits?: Partial<KeyLimits>;
  priority?: number;
  manage?: boolean;
  budget?: Partial<KeyBudget>;
  /** The user the key belongs to; null/absent for keys made with the admin token or the CLI. */
  ownerId?: string | null;
}

/**
 * A fresh record plus its secret. The record goes to the store; the secret goes to the
 * person who asked, once.
 */
export function newKeyRecord(input: NewKeyInput, nowMs: number): { record: KeyRecord; secret: string } {
  const { secret, hash, prefix } = generateApiKey();
  return {
    secret,
    record: {
      id: newKeyId(),
      name: input.name,
      prefix,
      hash,
      createdAt: nowMs,
      lastUsedAt: null,
      expiresAt: input.expiresAt ?? null,
      revokedAt: null,
      models: [...new Set(input.models ?? [])],
      note: input.note ?? '',
      limits: {
        rpm: input.limits?.rpm ?? null,
        tpm: input.limits?.tpm ?? null,
        concurrent: input.limits?.concurrent ?? null,
      },
      priority: input.priority ?? 0,
      manage: input.manage ?? false,
      budget: {
        tokens: input.budget?.tokens ?? null,
        requests: input.budget?.requests ?? null,
        gpuSeconds: input.budget?.gpuSeconds ?? null,
        period: input.budget?.period ?? 'day',
      },
      ownerId: input.ownerId ?? null,
      // What the creator set binds a member owner, unless the member set it themselves (the caller says so).
      ceilings: {
        rpm: input.limits?.rpm ?? null,
        tpm: input.limits?.tpm ?? null,
        concurrent: input.limits?.concurrent ?? null,
        expiresAt: input.expiresAt ?? null,
      },
    },
  };
}

/** ISO 8601 date or date-time; `Date.parse` alone accepts too much ("1", "May 5"). */
const ISO_TIMESTAMP = /^\d{4}-\d{2}-\d{2}(?:[T ]\d{2}:\d{2}(?::\d{2}(?:\.\d{1,9})?)?(?:Z|[+-]\d{2}:?\d{2}))?$/i;

/**
 * Epoch ms of an ISO 8601 date (midnight UTC) or date-time with `Z` or an offset, else
 * `undefined`. A date-time without offset is refused: it would mean the server's local time.
 */
export function parseIsoTimestamp(text: string): number | undefined {
  const trimmed = text.trim();
  if (!ISO_TIMESTAMP.test(trimmed)) return undefined;
  // V8 rolls 2030-02-31 over to March; a calendar date must exist as written.
  const [year, month, day] = trimmed.slice(0, 10).split('-').map(Number) as [number, number, number];
  const calendar = new Date(Date.UTC(year, month - 1, day));
  if (calendar.getUTCMonth() !== month - 1 || calendar.getUTCDate() !== day) return undefined;
  const ms = Date.parse(trimmed);
  return Number.isNaN(ms) ? undefined : ms;
}
