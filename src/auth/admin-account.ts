/**
 * The first admin: the user the setup link, `GATEHOUSE_ADMIN_PASSWORD` and a sign-in without a
 * name act on (`meta.admin.first_user_id` names them; migration `0009_users` made the old admin
 * password this user). And, before that user exists, the one-time setup token. Passwords live
 * hashed on the user (`scrypt$N$r$p$salt$hash`), the setup token as its SHA-256 hex; neither is
 * ever stored or logged in plain text.
 *
 * First run: while no first admin exists (and `GATEHOUSE_ADMIN_PASSWORD` is not set), each start
 * issues a NEW setup token, replacing the previous one's hash, so a link printed before a
 * restart stops working. Only a request carrying the current token can set the password, once.
 */
import { createHash, timingSafeEqual, randomBytes } from 'node:crypto';
import type { MetaStore, Store } from '../store/store.js';
import type { UserRecord } from '../store/records.js';
import { DEFAULT_SCRYPT_COST, hashPassword, verifyPassword, type ScryptCost } from './passwords.js';
import { freeUserName, newUserId } from './users.js';

export const SETUP_TOKEN_META_KEY = 'admin.setup_token_sha256';
const FIRST_ADMIN_META_KEY = 'admin.first_user_id';
/** The first admin's name when the setup link or GATEHOUSE_ADMIN_PASSWORD creates them. */
const FIRST_ADMIN_NAME = 'admin';

export type SetupClaim =
  /** The token was right and is now used up: the caller may set the password. */
  | 'claimed'
  /** No setup token is active (already used, or none was issued since the last start). */
  | 'none'
  /** A token is active and this is not it. */
  | 'mismatch';

export class AdminAccount {
  readonly #store: Pick<Store, 'meta' | 'users'>;
  readonly #cost: Readonly<ScryptCost>;
  readonly #now: () => number;

  constructor(
    store: Pick<Store, 'meta' | 'users'>,
    options: { scryptCost?: Readonly<ScryptCost>; now?: () => number } = {},
  ) {
    this.#store = store;
    this.#cost = options.scryptCost ?? DEFAULT_SCRYPT_COST;
    this.#now = options.now ?? Date.now;
  }

  /** The first admin user, once the setup link or GATEHOUSE_ADMIN_PASSWORD made them. */
  async firstAdmin(): Promise<UserRecord | undefined> {
    const id = await this.#store.meta.get(FIRST_ADMIN_META_KEY);
    return id === undefined ? undefined : this.#store.users.get(id);
  }

  async hasPassword(): Promise<boolean> {
    return (await this.firstAdmin())?.passwordHash != null;
  }

  /**
   * Sets the first admin's password, creating that user when missing (the caller has checked
   * `passwordProblem`). Returns the user.
   */
  async setPassword(password: string): Promise<UserRecord> {
    return this.storePasswordHash(await this.hashPassword(password));
  }

  /** The stored form of a password (scrypt: slow on purpose, so never inside a transaction). */
  hashPassword(password: string): Promise<string> {
    return hashPassword(password, this.#cost);
  }

  /**
   * `setPassword` with a hash from `hashPassword`, in `store` when given (a transaction that
   * also writes its audit entry).
   */
  async storePasswordHash(
    passwordHash: string,
    store: Pick<Store, 'meta' | 'users'> = this.#store,
  ): Promise<UserRecord> {
    const id = await store.meta.get(FIRST_ADMIN_META_KEY);
    const existing = id === undefined ? undefined : await store.users.get(id);
    if (existing) return (await store.users.update(existing.id, { passwordHash })) ?? existing;
    let user: UserRecord;
    try {
      user = await store.users.create({
        id: newUserId(),
        name: await freeUserName(store.users, FIRST_ADMIN_NAME),
        email: null,
        role: 'admin',
        signIn: 'password',
        passwordHash,
        oidcIssuer: null,
        oidcSubject: null,
        createdAt: this.#now(),
        disabledAt: null,
        allowedModels: [],
        maxBudget: null,
      });
    } catch (error) {
      // Replicas starting together with GATEHOUSE_ADMIN_PASSWORD: one creates `admin`, the others
      // find it (same name, unique) and take it as the first admin.
      const winner = await store.users.findByName(FIRST_ADMIN_NAME);
      if (winner?.role !== 'admin') throw error;
      user = (await store.users.update(winner.id, { passwordHash })) ?? winner;
    }
    await store.meta.set(FIRST_ADMIN_META_KEY, user.id);
    return user;
  }

  /** The first admin when `password` is theirs and they are enabled, else undefined. */
  async verifyPassword(password: string): Promise<UserRecord | undefined> {
    const user = await this.firstAdmin();
    if (!user || user.disabledAt !== null || user.passwordHash === null) return undefined;
    return (await verifyPassword(password, user.passwordHash)) ? user : undefined;
  }

  /**
   * Makes `password` the first admin's password unless it already is; returns the user whose
   * password changed, or undefined. Used for `GATEHOUSE_ADMIN_PASSWORD` at every start: an
   * unchanged value keeps sessions.
   */
  async applyPassword(password: string): Promise<UserRecord | undefined> {
    const user = await this.firstAdmin();
    if (user?.passwordHash != null && (await verifyPassword(password, user.passwordHash))) return undefined;
    return this.setPassword(password);
  }

  /** Issues a fresh setup token, invalidating any earlier one. Returns the token (shown once). */
  async issueSetupToken(): Promise<string> {
    const token = randomBytes(32).toString('base64url');
    await this.#store.meta.set(SETUP_TOKEN_META_KEY, sha256Hex(token));
    return token;
  }

  async clearSetupToken(): Promise<void> {
    await this.#store.meta.delete(SETUP_TOKEN_META_KEY);
  }

  /**
   * Checks `token` against the active setup token in constant time and, when it matches,
   * uses it up atomically: of two requests racing with the right token, one gets `claimed`.
   * In `meta` when given (a transaction).
   */
  async claimSetupToken(token: string, meta: MetaStore = this.#store.meta): Promise<SetupClaim> {
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
