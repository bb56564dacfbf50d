import { createHash } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import {
  API_KEY_LENGTH,
  displayPrefix,
  encodeBase62,
  generateApiKey,
  hashApiKey,
  keyStatus,
  newKeyId,
  newKeyRecord,
  parseIsoTimestamp,
  toKeyView,
} from '../../src/auth/api-keys.js';

const BASE62 = '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz';
const decodeBase62 = (text: string): bigint => [...text].reduce((n, c) => n * 62n + BigInt(BASE62.indexOf(c)), 0n);

describe('API key format', () => {
  it('is sk- followed by 43 base62 characters, always the same length', () => {
    for (let i = 0; i < 500; i++) {
      const { secret } = generateApiKey();
      expect(secret).toMatch(/^sk-[0-9A-Za-z]{43}$/);
      expect(secret).toHaveLength(API_KEY_LENGTH);
    }
    expect(API_KEY_LENGTH).toBe(46);
  });

  it('carries 256 random bits: 43 base62 digits hold exactly 32 bytes, and keys use the whole range', () => {
    expect(encodeBase62(new Uint8Array(32).fill(0xff), 43)).toHaveLength(43);
    expect(() => encodeBase62(new Uint8Array(32).fill(0xff), 42)).toThrow(RangeError);
    expect(encodeBase62(new Uint8Array(32), 43)).toBe('0'.repeat(43));
    const values = Array.from({ length: 200 }, () => decodeBase62(generateApiKey().secret.slice(3)));
    for (const v of values) expect(v < 2n ** 256n).toBe(true);
    // With 200 uniform 256-bit values, the largest has ≥ 250 bits unless something is badly off.
    expect(Math.max(...values.map((v) => v.toString(2).length))).toBeGreaterThanOrEqual(250);
    expect(new Set(values).size).toBe(200);
  });

  it('encodes bytes big-endian in base62', () => {
    expect(encodeBase62(Uint8Array.of(61), 2)).toBe('0z');
    expect(encodeBase62(Uint8Array.of(62), 2)).toBe('10');
    expect(encodeBase62(Uint8Array.of(1, 0), 3)).toBe('048'); // 256 = 4 * 62 + 8
  });

  it('stores the SHA-256 hex of the whole key and a display prefix of sk- plus six characters', () => {
    const { secret, hash, prefix } = generateApiKey();
    expect(hash).toBe(createHash('sha256').update(secret).digest('hex'));
    expect(hashApiKey('abc')).toBe('ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad');
    expect(prefix).toBe(secret.slice(0, 9));
    expect(prefix).toMatch(/^sk-[0-9A-Za-z]{6}$/);
    expect(displayPrefix(secret)).toBe(prefix);
  });

  it('makes key ids of key_ plus 12 base62 characters', () => {
    const ids = new Set(Array.from({ length: 1000 }, newKeyId));
    expect(ids.size).toBe(1000);
    for (const id of ids) expect(id).toMatch(/^key_[0-9A-Za-z]{12}$/);
  });

  it('builds a new record without the secret in it', () => {
    const { record, secret } = newKeyRecord({ name: 'ci', models: ['a', 'a', 'b'], limits: { rpm: 5 } }, 1000);
    expect(record).toEqual({
      id: expect.stringMatching(/^key_/),
      name: 'ci',
      prefix: secret.slice(0, 9),
      hash: hashApiKey(secret),
      createdAt: 1000,
      lastUsedAt: null,
      expiresAt: null,
      revokedAt: null,
      models: ['a', 'b'],
      note: '',
      limits: { rpm: 5, tpm: null, concurrent: null },
      priority: 0,
      manage: false,
      budget: { tokens: null, requests: null, gpuSeconds: null, period: 'day' },
      ownerId: null,
      ceilings: { rpm: 5, tpm: null, concurrent: null, expiresAt: null },
    });
    expect(JSON.stringify(record)).not.toContain(secret.slice(3));
  });
});

describe('key status', () => {
  it('is revoked before expired, and expired from the expiry instant on', () => {
    expect(keyStatus({ revokedAt: null, expiresAt: null }, 10)).toBe('active');
    expect(keyStatus({ revokedAt: null, expiresAt: 11 }, 10)).toBe('active');
    expect(keyStatus({ revokedAt: null, expiresAt: 10 }, 10)).toBe('expired');
    expect(keyStatus({ revokedAt: 5, expiresAt: 1 }, 10)).toBe('revoked');
    expect(keyStatus({ revokedAt: 5, expiresAt: null }, 10)).toBe('revoked');
  });

  it('shows a record with ISO timestamps and without its hash', () => {
    const { record } = newKeyRecord({ name: 'v', expiresAt: Date.UTC(2030, 0, 2) }, Date.UTC(2030, 0, 1));
    const view = toKeyView(record, Date.UTC(2030, 0, 1, 12));
    expect(view).toEqual({
      id: record.id,
      name: 'v',
      prefix: record.prefix,
      createdAt: '2030-01-01T00:00:00.000Z',
      lastUsedAt: null,
      expiresAt: '2030-01-02T00:00:00.000Z',
      revokedAt: null,
      models: [],
      note: '',
      limits: { rpm: null, tpm: null, concurrent: null },
      priority: 0,
      manage: false,
      budget: { tokens: null, requests: null, gpuSeconds: null, period: 'day' },
      status: 'active',
      ownerId: null,
      ownerName: null,
    });
    expect(JSON.stringify(view)).not.toContain(record.hash);
  });
});

describe('parseIsoTimestamp', () => {
  it('accepts dates (midnight UTC) and date-times with an offset', () => {
    expect(parseIsoTimestamp('2030-01-31')).toBe(Date.UTC(2030, 0, 31));
    expect(parseIsoTimestamp('2030-01-31T10:00:00Z')).toBe(Date.UTC(2030, 0, 31, 10));
    expect(parseIsoTimestamp('2030-01-31T10:00:00.5+01:00')).toBe(Date.UTC(2030, 0, 31, 9, 0, 0, 500));
  });

  it('refuses local times, impossible dates and free text', () => {
    for (const text of ['2030-01-31T10:00', '2030-02-31', '2030-13-01', 'tomorrow', '1', 'May 5 2030', '']) {
      expect(parseIsoTimestamp(text), text).toBeUndefined();
    }
  });
});
