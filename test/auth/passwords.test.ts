import { afterEach, describe, expect, it, vi } from 'vitest';
import { countCharacters, hashPassword, passwordProblem, verifyPassword } from '../../src/auth/passwords.js';

describe('admin password hashing', () => {
  it('writes scrypt$N$r$p$salt$hash with a fresh salt each time, and verifies it', async () => {
    const a = await hashPassword('correct horse battery staple');
    const b = await hashPassword('correct horse battery staple');
    expect(a).toMatch(/^scrypt\$32768\$8\$3\$[A-Za-z0-9_-]{22}\$[A-Za-z0-9_-]{43}$/);
    expect(a).not.toBe(b);
    expect(await verifyPassword('correct horse battery staple', a)).toBe(true);
    expect(await verifyPassword('correct horse battery stapl', a)).toBe(false);
  });

  it("verifies with the parameters stored in the hash, not today's defaults", async () => {
    const cheap = await hashPassword('a password hashed cheaply', { N: 1024, r: 8, p: 1 });
    expect(cheap.startsWith('scrypt$1024$8$1$')).toBe(true);
    expect(await verifyPassword('a password hashed cheaply', cheap)).toBe(true);
  });

  it('treats composed and decomposed accents as the same password', async () => {
    const stored = await hashPassword('caf\u00e9 cr\u00e8me br\u00fbl\u00e9e', { N: 1024, r: 8, p: 1 });
    expect(await verifyPassword('cafe\u0301 cre\u0300me bru\u0302le\u0301e', stored)).toBe(true);
  });

  it('fails loudly on a damaged stored hash instead of reading it as a wrong password', async () => {
    for (const damaged of [
      '',
      'plain text',
      'scrypt$32768$8$3$salt',
      'bcrypt$10$x$y$z$w',
      'scrypt$1000$8$1$AAAAAAAAAAAAAAAAAAAAAA$AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA',
      'scrypt$1099511627776$8$1$AAAAAAAAAAAAAAAAAAAAAA$AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA',
    ]) {
      await expect(verifyPassword('whatever password', damaged), damaged).rejects.toThrow(
        'the stored admin password hash is not in the scrypt$N$r$p$salt$hash form',
      );
    }
  });

  it('wants 12 to 1024 characters, counting characters rather than bytes', () => {
    expect(passwordProblem('elevenchars')).toBe('must be at least 12 characters');
    expect(passwordProblem('twelve chars')).toBeUndefined();
    expect(passwordProblem('\u{1F600}'.repeat(12))).toBeUndefined();
    expect(passwordProblem('x'.repeat(1025))).toBe('must be at most 1024 characters');
  });

  it('counts a surrogate pair as one character and a lone surrogate as one, as the string iterator does', () => {
    for (const text of ['', 'plain', '\u{1F600}\u{1F600}', 'a\ud800b', '\udc00\ud800', 'x\ud83d']) {
      expect(countCharacters(text), JSON.stringify(text)).toBe([...text].length);
    }
  });

  describe('a 50 MB password', () => {
    const huge = 'x'.repeat(50 * 1024 * 1024);
    afterEach(() => {
      vi.restoreAllMocks();
    });

    it('is refused as too long from its length alone, without walking its characters', () => {
      const iterate = vi.spyOn(String.prototype, Symbol.iterator);
      const charCodeAt = vi.spyOn(String.prototype, 'charCodeAt');
      expect(passwordProblem(huge)).toBe('must be at most 1024 characters');
      expect(iterate).not.toHaveBeenCalled();
      expect(charCodeAt).not.toHaveBeenCalled();
    });

    it('never matches and is not hashed or walked', async () => {
      const stored = await hashPassword('a password hashed cheaply', { N: 1024, r: 8, p: 1 });
      const iterate = vi.spyOn(String.prototype, Symbol.iterator);
      const charCodeAt = vi.spyOn(String.prototype, 'charCodeAt');
      const normalize = vi.spyOn(String.prototype, 'normalize');
      expect(await verifyPassword(huge, stored)).toBe(false);
      expect(iterate).not.toHaveBeenCalled();
      expect(charCodeAt).not.toHaveBeenCalled();
      expect(normalize).not.toHaveBeenCalled();
    });
  });

  it('refuses 1,025 characters of two UTF-16 units each, and accepts 1,024', () => {
    expect(passwordProblem('\u{1F600}'.repeat(1024))).toBeUndefined();
    expect(passwordProblem('\u{1F600}'.repeat(1025))).toBe('must be at most 1024 characters');
  });
});
