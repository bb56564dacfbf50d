/**
 * A sign-in with a name costs one scrypt verification whoever the name belongs to: an unknown,
 * disabled or not-yet-invited name is verified against a decoy hash made with the parameters
 * real passwords are hashed with, so the answer's timing does not tell which names exist.
 * Counted through the verifier, never by the clock.
 */
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, beforeEach, describe, expect, it, vi } from 'vitest';
import * as passwords from '../../src/auth/passwords.js';
import { Users } from '../../src/auth/users.js';
import { openSqliteStore } from '../../src/store/sqlite.js';
import type { Store } from '../../src/store/store.js';

vi.mock('../../src/auth/passwords.js', async (importOriginal) => {
  const original = await importOriginal<typeof passwords>();
  return { ...original, verifyPassword: vi.fn(original.verifyPassword) };
});

const COST = { N: 1024, r: 4, p: 2 };
const PASSWORD = 'the real password of ann';
let store: Store;
let users: Users;
let realHash: string;

beforeAll(async () => {
  store = await openSqliteStore({ dataDir: mkdtempSync(join(tmpdir(), 'gh-timing-')) });
  users = new Users({ store, scryptCost: COST });
  realHash = await users.hashPassword(PASSWORD);
  await users.createPasswordUser({ name: 'ann', role: 'member', passwordHash: realHash });
  await users.createPasswordUser({ name: 'invited bob', role: 'member' });
  const carol = await users.createPasswordUser({ name: 'carol', role: 'member', passwordHash: realHash });
  await users.update(carol.id, { disabled: true });
});
afterAll(async () => {
  await store?.close();
});
beforeEach(() => {
  vi.mocked(passwords.verifyPassword).mockClear();
});

/** `scrypt$N$r$p` of a stored hash. */
const parameters = (stored: string) => stored.split('$').slice(0, 4).join('$');

describe('sign-in by name', () => {
  it('verifies the password of a known name once, against their hash', async () => {
    expect((await users.verifyPassword('ann', 'a wrong guess at it'))?.name).toBeUndefined();
    expect(vi.mocked(passwords.verifyPassword).mock.calls).toEqual([['a wrong guess at it', realHash]]);
  });

  it.each(['nobody at all', 'invited bob', 'carol'])(
    'verifies the guess for %j once too, against a hash of the same parameters, and refuses it',
    async (name) => {
      expect(await users.verifyPassword(name, PASSWORD)).toBeUndefined();
      const calls = vi.mocked(passwords.verifyPassword).mock.calls;
      expect(calls).toHaveLength(1);
      const [guess, stored] = calls[0]!;
      expect(guess).toBe(PASSWORD);
      expect(parameters(stored)).toBe(parameters(realHash));
      expect(parameters(stored)).toBe('scrypt$1024$4$2');
      expect(stored).not.toBe(realHash);
    },
  );
});
