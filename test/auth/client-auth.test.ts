import { describe, expect, it } from 'vitest';
import { hashApiKey, newKeyRecord } from '../../src/auth/api-keys.js';
import { authenticateClient, keyCandidates, type IncomingHeaders } from '../../src/auth/client-auth.js';
import type { IndexedKey, KeyVerifier } from '../../src/auth/key-index.js';
import type { KeyRecord } from '../../src/store/records.js';

const NOW = Date.UTC(2030, 5, 1);

/** The decision only needs the verifier's two questions; answer them from a Map by hash. */
function verifierOf(...records: IndexedKey[]): KeyVerifier {
  const byHash = new Map(records.map((r) => [r.hash, r]));
  return { hasAnyKeys: () => byHash.size > 0, verify: (raw) => byHash.get(hashApiKey(raw)) };
}

function makeKey(name: string, overrides: Partial<KeyRecord> = {}): { record: IndexedKey; secret: string } {
  const { record, secret } = newKeyRecord({ name }, NOW - 1000);
  return { record: { ...record, ...overrides, ownerModels: [], ownedByNonAdmin: false }, secret };
}

const active = makeKey('active');
const active2 = makeKey('active2');
const revoked = makeKey('revoked', { revokedAt: NOW - 10 });
const expired = makeKey('expired', { expiresAt: NOW - 10 });
const expiresNow = makeKey('expires-now', { expiresAt: NOW });
const index = verifierOf(active.record, active2.record, revoked.record, expired.record, expiresNow.record);
const foreign = 'sk-proj-someoneElsesToken1234567890';

const auth = (headers: IncomingHeaders, verifier: KeyVerifier = index) => authenticateClient(headers, verifier, NOW);

describe('authenticateClient', () => {
  describe('open mode', () => {
    it('lets every call in while no key record exists', () => {
      expect(auth({}, verifierOf())).toEqual({ mode: 'open' });
    });

    it('ignores whatever key is sent while open', () => {
      expect(auth({ authorization: 'Bearer whatever' }, verifierOf())).toEqual({ mode: 'open' });
      expect(auth({ 'x-api-key': active.secret }, verifierOf())).toEqual({ mode: 'open' });
    });

    it('is closed as soon as any record exists, even a revoked or expired one', () => {
      expect(auth({}, verifierOf(revoked.record))).toEqual({ error: 'missing_api_key' });
      expect(auth({}, verifierOf(expired.record))).toEqual({ error: 'missing_api_key' });
    });
  });

  describe('each header form', () => {
    it.each([
      ['Authorization: Bearer <key>', { authorization: `Bearer ${active.secret}` }],
      ['Authorization: bearer <key> (scheme is case-insensitive)', { authorization: `bearer ${active.secret}` }],
      ['Authorization: Bearer with extra spaces', { authorization: `  Bearer    ${active.secret}  ` }],
      ['x-api-key: <key>', { 'x-api-key': active.secret }],
      ['Authorization: <key> without a scheme', { authorization: active.secret }],
      ['api-key: <key>', { 'api-key': active.secret }],
    ])('accepts an active key sent as %s', (_, headers) => {
      expect(auth(headers)).toEqual({ mode: 'key', key: active.record });
    });

    it.each([
      ['Authorization: Bearer <key>', { authorization: 'Bearer sk-nope' }],
      ['x-api-key: <key>', { 'x-api-key': 'sk-nope' }],
      ['Authorization: <key>', { authorization: 'sk-nope' }],
      ['api-key: <key>', { 'api-key': 'sk-nope' }],
    ])('rejects an unknown key sent as %s as invalid', (_, headers) => {
      expect(auth(headers)).toEqual({ error: 'invalid_api_key' });
    });

    it('treats no key, empty headers, a lone "Bearer" and other schemes as missing', () => {
      expect(auth({})).toEqual({ error: 'missing_api_key' });
      expect(auth({ authorization: '', 'x-api-key': '  ' })).toEqual({ error: 'missing_api_key' });
      expect(auth({ authorization: 'Bearer' })).toEqual({ error: 'missing_api_key' });
      expect(auth({ authorization: 'Bearer   ' })).toEqual({ error: 'missing_api_key' });
      expect(auth({ authorization: 'Basic dXNlcjpwYXNz' })).toEqual({ error: 'missing_api_key' });
    });

    it('reads repeated headers given as arrays or comma-joined', () => {
      expect(auth({ 'x-api-key': ['sk-nope', active.secret] })).toEqual({ mode: 'key', key: active.record });
      expect(auth({ 'x-api-key': `sk-nope, ${active.secret}` })).toEqual({ mode: 'key', key: active.record });
      expect(auth({ authorization: ['Bearer sk-nope', `Bearer ${active.secret}`] })).toEqual({
        mode: 'key',
        key: active.record,
      });
    });
  });

  describe('several candidates', () => {
    it('accepts the call when any candidate is an active key (a foreign Bearer token alongside ours)', () => {
      expect(auth({ authorization: `Bearer ${foreign}`, 'x-api-key': active.secret })).toEqual({
        mode: 'key',
        key: active.record,
      });
      expect(auth({ authorization: `Bearer ${active.secret}`, 'x-api-key': foreign })).toEqual({
        mode: 'key',
        key: active.record,
      });
      expect(auth({ 'api-key': active.secret, authorization: `Bearer ${revoked.secret}` })).toEqual({
        mode: 'key',
        key: active.record,
      });
    });

    it('uses the first active key in header order when two are sent', () => {
      expect(auth({ authorization: `Bearer ${active.secret}`, 'x-api-key': active2.secret })).toEqual({
        mode: 'key',
        key: active.record,
      });
      expect(auth({ 'x-api-key': active2.secret, 'api-key': active.secret })).toEqual({
        mode: 'key',
        key: active2.record,
      });
    });

    it('explains a refusal as revoked first, then expired, then invalid', () => {
      expect(auth({ authorization: `Bearer ${foreign}`, 'x-api-key': revoked.secret })).toEqual({
        error: 'revoked_api_key',
      });
      expect(auth({ authorization: `Bearer ${expired.secret}`, 'x-api-key': revoked.secret })).toEqual({
        error: 'revoked_api_key',
      });
      expect(auth({ authorization: `Bearer ${foreign}`, 'x-api-key': expired.secret })).toEqual({
        error: 'expired_api_key',
      });
      expect(auth({ authorization: `Bearer ${foreign}`, 'x-api-key': 'sk-nope' })).toEqual({
        error: 'invalid_api_key',
      });
    });
  });

  it('rejects a revoked key', () => {
    expect(auth({ authorization: `Bearer ${revoked.secret}` })).toEqual({ error: 'revoked_api_key' });
  });

  it('rejects an expired key, from its expiry instant on', () => {
    expect(auth({ authorization: `Bearer ${expired.secret}` })).toEqual({ error: 'expired_api_key' });
    expect(auth({ authorization: `Bearer ${expiresNow.secret}` })).toEqual({ error: 'expired_api_key' });
    expect(authenticateClient({ authorization: `Bearer ${expiresNow.secret}` }, index, NOW - 1)).toEqual({
      mode: 'key',
      key: expiresNow.record,
    });
  });

  it('revoked wins over expired for a key that is both', () => {
    const both = makeKey('both', { revokedAt: NOW - 5, expiresAt: NOW - 5 });
    expect(auth({ 'x-api-key': both.secret }, verifierOf(both.record))).toEqual({ error: 'revoked_api_key' });
  });

  it('does not accept a key that differs only in case or by a prefix', () => {
    const swapped =
      active.secret.slice(0, 3) +
      [...active.secret.slice(3)].map((c) => (c === c.toLowerCase() ? c.toUpperCase() : c.toLowerCase())).join('');
    expect(auth({ 'x-api-key': swapped })).toEqual({ error: 'invalid_api_key' });
    expect(auth({ 'x-api-key': active.secret.slice(0, -1) })).toEqual({ error: 'invalid_api_key' });
    expect(auth({ 'x-api-key': active.record.prefix })).toEqual({ error: 'invalid_api_key' });
    expect(auth({ 'x-api-key': active.record.hash })).toEqual({ error: 'invalid_api_key' });
  });

  it('hashes a bounded number of candidates however many are sent', () => {
    let verified = 0;
    const counting: KeyVerifier = { hasAnyKeys: () => true, verify: (raw) => (verified++, index.verify(raw)) };
    const flood = Array.from({ length: 500 }, (_, i) => `sk-junk${i}`).join(',');
    expect(authenticateClient({ 'x-api-key': flood }, counting, NOW)).toEqual({ error: 'invalid_api_key' });
    expect(verified).toBeLessThanOrEqual(8);
  });
});

describe('keyCandidates', () => {
  it('collects candidates in order, without duplicates', () => {
    expect(keyCandidates({ authorization: 'Bearer a', 'x-api-key': 'b, a', 'api-key': 'c' })).toEqual(['a', 'b', 'c']);
  });

  it('reads a lone Authorization header the same whatever its spelling and spacing', () => {
    const cases: Array<[string, string[]]> = [
      ['Bearer sk-abc', ['sk-abc']],
      ['bearer sk-abc', ['sk-abc']],
      ['BEARER   sk-abc  ', ['sk-abc']],
      ['  Bearer sk-abc', ['sk-abc']],
      ['Bearer\tsk-abc', ['sk-abc']],
      ['Bearer', []],
      ['Bearer ', []],
      ['sk-abc', ['sk-abc']],
      ['Basic dXNlcjpwYXNz', []],
      ['Bearerx sk-abc', []],
    ];
    for (const [authorization, expected] of cases)
      expect(keyCandidates({ authorization }), JSON.stringify(authorization)).toEqual(expected);
  });
});
