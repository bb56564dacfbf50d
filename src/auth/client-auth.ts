/**
 * Who is calling `/v1`: the decision only, free of any HTTP framework so it is tested as a
 * function. The middleware in `http/` turns an error result into the catalogue's 401.
 */
import { keyStatus } from './api-keys.js';
import type { IndexedKey, KeyVerifier } from './key-index.js';

export type ClientAuthErrorCode = 'missing_api_key' | 'invalid_api_key' | 'revoked_api_key' | 'expired_api_key';

export type ClientAuthResult = { mode: 'open' } | { mode: 'key'; key: IndexedKey } | { error: ClientAuthErrorCode };

export type IncomingHeaders = Readonly<Record<string, string | string[] | undefined>>;

/**
 * Bounds the hashing a single request can trigger; real clients send one or two candidates
 * (their key, sometimes a foreign bearer token alongside).
 */
const MAX_CANDIDATES = 8;

/**
 * Open mode (no key records at all) lets everyone in and ignores whatever key was sent.
 * Otherwise the call is accepted when ANY candidate is an active key. Without one, the most
 * useful explanation wins: revoked, then expired, then invalid; no candidate is "missing".
 */
export function authenticateClient(headers: IncomingHeaders, index: KeyVerifier, nowMs: number): ClientAuthResult {
  if (!index.hasAnyKeys()) return { mode: 'open' };
  const candidates = keyCandidates(headers);
  if (candidates.length === 0) return { error: 'missing_api_key' };

  let sawRevoked = false;
  let sawExpired = false;
  for (const candidate of candidates) {
    const key = index.verify(candidate);
    if (!key) continue;
    const status = keyStatus(key, nowMs);
    if (status === 'active') return { mode: 'key', key };
    if (status === 'revoked') sawRevoked = true;
    else sawExpired = true;
  }
  if (sawRevoked) return { error: 'revoked_api_key' };
  if (sawExpired) return { error: 'expired_api_key' };
  return { error: 'invalid_api_key' };
}

/**
 * Every place a client may have put its key, in the order clients most often use:
 * `Authorization: Bearer <k>` (OpenAI SDKs), `x-api-key` (Anthropic SDKs), a bare
 * `Authorization: <k>`, and `api-key` (Azure-style clients). Other schemes (`Basic ...`) are
 * not ours and are ignored. Repeated headers arrive comma-joined or as arrays; keys contain
 * no commas, so both are split.
 */
export function keyCandidates(headers: IncomingHeaders): string[] {
  // The common case, on every call of an OpenAI SDK: one `Bearer <k>` and no other key header.
  // Same answer as the general path below, without its regex and set.
  const authorization = headers.authorization;
  if (typeof authorization === 'string' && headers['x-api-key'] === undefined && headers['api-key'] === undefined) {
    const value = authorization.trim();
    if (value.length > 7 && value.charCodeAt(6) === 0x20 && value.slice(0, 6).toLowerCase() === 'bearer') {
      const key = value.slice(7).trim();
      return key === '' ? [] : [key];
    }
  }
  const found = new Set<string>();
  const add = (value: string | undefined): void => {
    const trimmed = value?.trim();
    if (trimmed && found.size < MAX_CANDIDATES) found.add(trimmed);
  };

  for (const value of headerValues(headers.authorization)) {
    const match = /^(\S+)(?:\s+(.*))?$/.exec(value.trim());
    if (!match) continue;
    const [, first, rest] = match;
    const isBearer = first!.toLowerCase() === 'bearer';
    if (rest === undefined && !isBearer) add(first);
    else if (isBearer) add(rest);
  }
  for (const name of ['x-api-key', 'api-key'] as const) {
    for (const value of headerValues(headers[name])) value.split(',').forEach(add);
  }
  return [...found];
}

function headerValues(value: string | string[] | undefined): string[] {
  if (value === undefined) return [];
  return Array.isArray(value) ? value : [value];
}
