/**
 * Admin password hashing with Node's built-in scrypt. The stored form carries its own
 * parameters and salt, `scrypt$N$r$p$<salt>$<hash>` (base64url), so the cost can be raised
 * later without invalidating existing hashes.
 *
 * Cost: N=2^15, r=8, p=3 (32 MiB, one of OWASP's recommended scrypt settings), about 0.2 s on
 * one core. scrypt runs on libuv's thread pool, so a login never blocks the event loop; the
 * login rate limit bounds how often anyone can make the gateway pay for it.
 */
import { randomBytes, scrypt, timingSafeEqual, type ScryptOptions } from 'node:crypto';

export const MIN_PASSWORD_LENGTH = 12;
/** Long enough for any passphrase; short enough that nobody hashes megabytes per request. */
export const MAX_PASSWORD_LENGTH = 1024;

export interface ScryptCost {
  N: number;
  r: number;
  p: number;
}

export const DEFAULT_SCRYPT_COST: Readonly<ScryptCost> = Object.freeze({ N: 2 ** 15, r: 8, p: 3 });

const SALT_BYTES = 16;
const HASH_BYTES = 32;

/** Why a new password is refused, or undefined when it is acceptable. Length counts characters. */
export function passwordProblem(password: string): string | undefined {
  if (isTooLong(password)) return `must be at most ${MAX_PASSWORD_LENGTH} characters`;
  if (countCharacters(password) < MIN_PASSWORD_LENGTH) return `must be at least ${MIN_PASSWORD_LENGTH} characters`;
  return undefined;
}

/**
 * Over MAX_PASSWORD_LENGTH characters. A character is at most two UTF-16 units, so a longer
 * string is refused from its `.length` alone, before anything walks it (a request may carry
 * megabytes); only strings that could fit are counted.
 */
export function isTooLong(password: string): boolean {
  if (password.length > 2 * MAX_PASSWORD_LENGTH) return true;
  return password.length > MAX_PASSWORD_LENGTH && countCharacters(password) > MAX_PASSWORD_LENGTH;
}

/** Code points, without building an array of them. */
export function countCharacters(text: string): number {
  let count = 0;
  for (let i = 0; i < text.length; i++) {
    const unit = text.charCodeAt(i);
    // A high surrogate followed by a low one is one character.
    if (unit >= 0xd800 && unit <= 0xdbff && i + 1 < text.length) {
      const next = text.charCodeAt(i + 1);
      if (next >= 0xdc00 && next <= 0xdfff) i++;
    }
    count++;
  }
  return count;
}

export async function hashPassword(
  password: string,
  cost: Readonly<ScryptCost> = DEFAULT_SCRYPT_COST,
): Promise<string> {
  const salt = randomBytes(SALT_BYTES);
  const hash = await derive(password, salt, HASH_BYTES, cost);
  return ['scrypt', cost.N, cost.r, cost.p, salt.toString('base64url'), hash.toString('base64url')].join('$');
}

/**
 * Whether `password` matches `stored`. Compares in constant time. Throws when `stored` is not
 * a hash this code wrote: a damaged row must fail loudly, not read as "wrong password".
 */
export async function verifyPassword(password: string, stored: string): Promise<boolean> {
  const parsed = parseStoredHash(stored);
  // Hashing an absurdly long guess would cost more than the guess is worth; it is wrong anyway.
  if (isTooLong(password)) return false;
  const actual = await derive(password, parsed.salt, parsed.hash.length, parsed.cost);
  return timingSafeEqual(actual, parsed.hash);
}

function parseStoredHash(stored: string): { cost: ScryptCost; salt: Buffer; hash: Buffer } {
  const parts = stored.split('$');
  const [scheme, n, r, p, salt, hash] = parts;
  const cost = { N: Number(n), r: Number(r), p: Number(p) };
  const saltBytes = Buffer.from(salt ?? '', 'base64url');
  const hashBytes = Buffer.from(hash ?? '', 'base64url');
  const valid =
    parts.length === 6 &&
    scheme === 'scrypt' &&
    Number.isInteger(cost.N) &&
    cost.N >= 2 ** 10 &&
    cost.N <= 2 ** 20 &&
    (cost.N & (cost.N - 1)) === 0 &&
    Number.isInteger(cost.r) &&
    cost.r >= 1 &&
    cost.r <= 32 &&
    Number.isInteger(cost.p) &&
    cost.p >= 1 &&
    cost.p <= 16 &&
    saltBytes.length >= 8 &&
    hashBytes.length >= 16 &&
    hashBytes.length <= 64;
  if (!valid) throw new Error('the stored admin password hash is not in the scrypt$N$r$p$salt$hash form');
  return { cost, salt: saltBytes, hash: hashBytes };
}

function derive(password: string, salt: Buffer, length: number, cost: Readonly<ScryptCost>): Promise<Buffer> {
  // Node refuses scrypt above 32 MiB unless told otherwise; allow what these parameters need.
  const options: ScryptOptions = { N: cost.N, r: cost.r, p: cost.p, maxmem: 128 * cost.N * cost.r * 2 + 1024 * 1024 };
  return new Promise((resolve, reject) => {
    scrypt(password.normalize('NFC'), salt, length, options, (error, key) => (error ? reject(error) : resolve(key)));
  });
}
