/**
 * The one admin account: its password and, before it has one, the one-time setup token.
 * Both live in the store's `meta` table, hashed: the password as `scrypt$N$r$p$salt$hash`,
 * the setup token as its SHA-256 hex. Neither is ever stored or logged in plain text.
 *
 * First run: while no password exists (and `GATEHOUSE_ADMIN_PASSWORD` is not set), each start
 * issues a NEW setup token, replacing the previous one's hash, so a link printed before a
 * restart stops working. Only a request carrying the current token can set the password, once.
 */
import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';
import type { MetaStore } from '../store/store.js';
import { DEFAULT_SCRYPT_COST, hashPassword, verifyPassword, type ScryptCost } from './passwords.js';

export const PASSWORD_META_KEY = 'admin.password_hash';
export const SETUP_TOKEN_META_KEY = 'admin.setup_token_sha256';

export type SetupClaim =
  /** The token was right and is now used up: the caller may set the password. */
  | 'claimed'
  /** No setup token is active (already used, or none was issued since the last start). */
  | 'none'
  /** A token is active and this is not it. */
  | 'mismatch';

export class AdminAccount {
  readonly #meta: MetaStore;
  readonly #cost: Readonly<ScryptCost>;

  constructor(meta: MetaStore, options: { scryptCost?: Readonly<ScryptCost> } = {}) {
    this.#meta = meta;
    this.#cost = options.scryptCost ?? DEFAULT_SCRYPT_COST;
  }

  async hasPassword(): Promise<boolean> {
    return (await this.#meta.get(PASSWORD_META_KEY)) !== undefined;
  }

  /** Stores a new password hash (the caller has checked `passwordProblem`). */
  async setPassword(password: string): Promise<void> {
    await this.storePasswordHash(await this.hashPassword(password));
  }

  /** The stored form of a password (scrypt: slow on purpose, so not inside a transaction). */
  hashPassword(password: string): Promise<string> {
    return hashPassword(password, this.#cost);
  }

  /** Stores a hash from `hashPassword`; in `meta` when given (a transaction). */
  async storePasswordHash(hash: string, meta: MetaStore = this.#meta): Promise<void> {
    await meta.set(PASSWORD_META_KEY, hash);
  }

  /** False when no password exists yet. */
  async verifyPassword(password: string): Promise<boolean> {
    const stored = await this.#meta.get(PASSWORD_META_KEY);
    return stored !== undefined && verifyPassword(password, stored);
  }

  /**
   * Makes `password` the admin password unless it already is; returns whether it changed.
   * Used for `GATEHOUSE_ADMIN_PASSWORD` at every start: an unchanged value keeps sessions.
   */
  async applyPassword(password: string): Promise<boolean> {
    if (await this.verifyPassword(password)) return false;
    await this.setPassword(password);
    return true;
  }

  /** Issues a fresh setup token, invalidating any earlier one. Returns the token (shown once). */
  async issueSetupToken(): Promise<string> {
    const token = randomBytes(32).toString('base64url');
    await this.#meta.set(SETUP_TOKEN_META_KEY, sha256Hex(token));
    return token;
  }

  async clearSetupToken(): Promise<void> {
    await this.#meta.delete(SETUP_TOKEN_META_KEY);
  }

  /**
   * Checks `token` against the active setup token in constant time and, when it matches,
   * uses it up atomically: of two requests racing with the right token, one gets `claimed`.
   * In `meta` when given (a transaction).
   */
  async claimSetupToken(token: string, meta: MetaStore = this.#meta): Promise<SetupClaim> {
    const stored = await meta.get(SETUP_TOKEN_META_KEY);
    if (stored === undefined) return 'none';
    const expected = Buffer.from(stored, 'hex');
    const actual = createHash('sha256').update(token, 'utf8').digest();
    if (expected.length !== actual.length || !timingSafeEqual(expected, actual)) return 'mismatch';
    return (await meta.deleteIfEquals(SETUP_TOKEN_META_KEY, stored)) ? 'claimed' : 'none';
  }
}

function sha256Hex(value: string): string {
  return createHash('sha256').update(value, 'utf8').digest('hex');
}
