/**
 * People who sign in to the dashboard: password checks, invitations, OpenID Connect look-ups,
 * role changes and disabling. Every decision about a user is here; the HTTP handlers only
 * parse and answer.
 *
 * Invitations: a random 32-byte token travels in the link's fragment (`/invite#token=...`),
 * the store keeps its SHA-256 hex; a link works once and for `INVITE_TTL_MS`. Disabling a
 * user ends their sessions and, through the store's key-change announcement, stops their keys
 * on every replica (`KeyIndex` refuses keys whose owner is disabled).
 */
import { createHash, randomBytes } from 'node:crypto';
import type { KeyBudget, UserRecord, UserRole } from '../store/records.js';
import type { Store, UserStore } from '../store/store.js';
import type { User } from '../admin-api/types.js';
import { GatewayError } from '../core/errors.js';
import { visibleUserName } from '../core/user-names.js';
import { DEFAULT_SCRYPT_COST, hashPassword, verifyPassword, type ScryptCost } from './passwords.js';

export const INVITE_TTL_MS = 7 * 86_400_000;
const USER_ID_PREFIX = 'usr_';
/** base64url of 32 bytes. Anything else is refused without a database read. */
const TOKEN_SHAPE = /^[A-Za-z0-9_-]{43}$/;

export type InviteAcceptance =
  /** `before`: the user as the invitation left them, for the audit entry. */
  | { ok: true; user: UserRecord; before: UserRecord }
  /** No such link, or it was used already. */
  | { ok: false; reason: 'unknown' | 'expired' | 'disabled' };

export type OidcSignIn =
  | { ok: true; user: UserRecord; created: boolean }
  /** Unknown person and auto-create is off / no role could be given, or the user is disabled. */
  | { ok: false; reason: 'unknown' | 'disabled' };

export interface UsersOptions {
  store: Pick<Store, 'users' | 'invites' | 'sessions'>;
  scryptCost?: Readonly<ScryptCost>;
  now?: () => number;
}

export class Users {
  readonly #store: UsersOptions['store'];
  readonly #cost: Readonly<ScryptCost>;
  readonly #now: () => number;
  #decoy: Promise<string> | undefined;

  constructor(options: UsersOptions) {
    this.#store = options.store;
    this.#cost = options.scryptCost ?? DEFAULT_SCRYPT_COST;
    this.#now = options.now ?? Date.now;
  }

  /** The same users written through `store`: a transaction that also writes the audit entry. */
  through(store: UsersOptions['store']): Users {
    return new Users({ store, scryptCost: this.#cost, now: this.#now });
  }

  /** The stored form of a password (scrypt: slow on purpose, so never inside a transaction). */
  hashPassword(password: string): Promise<string> {
    return this.#hash(password);
  }

  get(id: string): Promise<UserRecord | undefined> {
    return this.#store.users.get(id);
  }

  list(): Promise<UserRecord[]> {
    return this.#store.users.list();
  }

  findByName(name: string): Promise<UserRecord | undefined> {
    return this.#store.users.findByName(name);
  }

  /** Whether an enabled admin other than `userId` exists (the last admin must stay). */
  async anotherEnabledAdmin(userId: string): Promise<boolean> {
    return (await this.#store.users.list()).some((u) => u.id !== userId && u.role === 'admin' && u.disabledAt === null);
  }

  /**
   * The enabled password user with this name and password, else undefined. A name that cannot
   * sign in (unknown, disabled, invited) is verified against the decoy hash, so every answer
   * costs one scrypt and its timing does not tell which names exist.
   */
  async verifyPassword(name: string, password: string): Promise<UserRecord | undefined> {
    const user = await this.#store.users.findByName(name);
    const usable = user !== undefined && user.disabledAt === null && user.passwordHash !== null;
    const matches = await verifyPassword(password, usable ? user.passwordHash! : await this.#decoyHash());
    return usable && matches ? user : undefined;
  }

  /** Stores a new password for the user (the caller has checked `passwordProblem`). */
  async setPassword(userId: string, password: string): Promise<void> {
    await this.#store.users.update(userId, { passwordHash: await this.#hash(password) });
  }

  /** The one way passwords are hashed here, so the decoy always has the real hashes' parameters. */
  #hash(password: string): Promise<string> {
    return hashPassword(password, this.#cost);
  }

  /** A hash of a random password nobody knows, made on first use. */
  #decoyHash(): Promise<string> {
    this.#decoy ??= this.#hash(randomBytes(32).toString('base64url'));
    return this.#decoy;
  }

  /**
   * Creates a password user; `passwordHash` absent leaves them unable to sign in until invited.
   * A name taken meanwhile (another request, another replica) is a `409 conflict`.
   */
  async createPasswordUser(input: {
    name: string;
    email?: string | null;
    role: UserRole;
    /** From `hashPassword`, made before the transaction. */
    passwordHash?: string;
  }): Promise<UserRecord> {
    const record = {
      ...blankUser(this.#now()),
      name: input.name,
      email: input.email ?? null,
      role: input.role,
      signIn: 'password' as const,
      passwordHash: input.passwordHash ?? null,
    };
    try {
      return await this.#store.users.create(record);
    } catch (error) {
      const taken = await this.#store.users.findByName(input.name);
      throw taken ? nameTaken(taken.name) : error;
    }
  }

  /**
   * A one-time link for `user` to set a password (a new link replaces the previous one).
   * Returns the token, to be shown once.
   */
  async issueInvite(userId: string): Promise<{ token: string; expiresAt: number }> {
    const token = randomBytes(32).toString('base64url');
    const at = this.#now();
    await this.#store.invites.deleteForUser(userId);
    await this.#store.invites.create({
      tokenHash: sha256Hex(token),
      userId,
      createdAt: at,
      expiresAt: at + INVITE_TTL_MS,
    });
    return { token, expiresAt: at + INVITE_TTL_MS };
  }

  /**
   * The invited user (no password, no provider yet) with this email and an invitation that has
   * not expired: an OpenID Provider that verified the email may claim it in place of the link.
   */
  async invitedByEmail(email: string): Promise<UserRecord | undefined> {
    const wanted = email.toLowerCase();
    const candidate = (await this.#store.users.list()).find(
      (u) => u.email?.toLowerCase() === wanted && u.passwordHash === null && u.oidcSubject === null,
    );
    if (!candidate) return undefined;
    const invite = await this.#store.invites.findForUser(candidate.id);
    return invite && this.#now() < invite.expiresAt ? candidate : undefined;
  }

  /** Uses up the invitation and sets the user's password (`hashPassword` of a checked password). */
  async acceptInvite(token: string, passwordHash: string): Promise<InviteAcceptance> {
    if (!TOKEN_SHAPE.test(token)) return { ok: false, reason: 'unknown' };
    const invite = await this.#store.invites.take(sha256Hex(token));
    if (!invite) return { ok: false, reason: 'unknown' };
    if (this.#now() >= invite.expiresAt) return { ok: false, reason: 'expired' };
    const user = await this.#store.users.get(invite.userId);
    if (!user || user.disabledAt !== null) return { ok: false, reason: 'disabled' };
    const updated = await this.#store.users.update(user.id, { passwordHash });
    return updated ? { ok: true, user: updated, before: user } : { ok: false, reason: 'unknown' };
  }

  /**
   * The user an OpenID Provider vouched for, by (issuer, subject). Known users get the role the
   * provider's claim maps to now (`role`, when it maps to one) and their name/email refreshed;
   * unknown ones are created only with `autoCreate` (as `role`, else `member`) or when `role`
   * came from an explicit mapping, under the provider's name as it shows (invisible characters
   * dropped), numbered when it compares equal to a taken one. Disabled users are refused.
   */
  async findOrCreateOidcUser(input: {
    issuer: string;
    subject: string;
    name: string;
    email: string | null;
    /** The role the claim maps to; undefined when the claim names none. */
    role: UserRole | undefined;
    autoCreate: boolean;
  }): Promise<OidcSignIn> {
    const existing = await this.#store.users.findByOidc(input.issuer, input.subject);
    if (existing) {
      if (existing.disabledAt !== null) return { ok: false, reason: 'disabled' };
      const patch = {
        ...(input.role !== undefined && input.role !== existing.role ? { role: input.role } : {}),
        ...(input.email !== existing.email ? { email: input.email } : {}),
      };
      const user = Object.keys(patch).length > 0 ? await this.#store.users.update(existing.id, patch) : existing;
      return user ? { ok: true, user, created: false } : { ok: false, reason: 'unknown' };
    }
    if (input.role === undefined && !input.autoCreate) return { ok: false, reason: 'unknown' };
    const user = await this.#store.users.create({
      ...blankUser(this.#now()),
      name: await freeUserName(this.#store.users, visibleUserName(input.name) || 'user'),
      email: input.email,
      role: input.role ?? 'member',
      signIn: 'oidc',
      oidcIssuer: input.issuer,
      oidcSubject: input.subject,
    });
    return { ok: true, user, created: true };
  }

  /** Changes role, enabled state, allowance or budget cap. Disabling ends the user's sessions at once. */
  async update(
    userId: string,
    change: { role?: UserRole; disabled?: boolean; allowedModels?: string[]; maxBudget?: KeyBudget | null },
  ): Promise<UserRecord | undefined> {
    const current = await this.#store.users.get(userId);
    if (!current) return undefined;
    const disabledAt =
      change.disabled === undefined ? undefined : change.disabled ? (current.disabledAt ?? this.#now()) : null;
    const updated = await this.#store.users.update(userId, {
      ...(change.role !== undefined ? { role: change.role } : {}),
      ...(disabledAt !== undefined ? { disabledAt } : {}),
      ...(change.allowedModels !== undefined ? { allowedModels: change.allowedModels } : {}),
      ...(change.maxBudget !== undefined ? { maxBudget: change.maxBudget } : {}),
    });
    if (updated && updated.disabledAt !== null) await this.#store.sessions.deleteAllExcept(null, userId);
    return updated;
  }
}

/** The answer to a new user whose name compares equal to `existing`'s. */
export function nameTaken(existing: string): GatewayError {
  return new GatewayError('conflict', {
    message: `A user named ${JSON.stringify(existing)} exists already.`,
    details: [{ path: '/name', message: 'taken' }],
  });
}

/**
 * `base`, or `base 2`, `base 3`...: names are unique (as they compare), providers' display names
 * are not.
 */
export async function freeUserName(users: Pick<UserStore, 'findByName'>, base: string): Promise<string> {
  for (let n = 1; ; n++) {
    const candidate = n === 1 ? base : `${base} ${n}`;
    if (!(await users.findByName(candidate))) return candidate;
  }
}

/** `usr_` + 12 base64url characters (72 random bits). */
export function newUserId(): string {
  return USER_ID_PREFIX + randomBytes(9).toString('base64url');
}

function blankUser(at: number): UserRecord {
  return {
    id: newUserId(),
    name: '',
    email: null,
    role: 'member',
    signIn: 'password',
    passwordHash: null,
    oidcIssuer: null,
    oidcSubject: null,
    createdAt: at,
    disabledAt: null,
    allowedModels: [],
    maxBudget: null,
  };
}

function sha256Hex(value: string): string {
  return createHash('sha256').update(value, 'utf8').digest('hex');
}

/** A user as the admin API shows them: never a password hash or the provider's subject. */
export function toUserView(user: UserRecord): User {
  return {
    id: user.id,
    name: user.name,
    email: user.email,
    role: user.role,
    signIn: user.signIn,
    status:
      user.disabledAt !== null
        ? 'disabled'
        : user.signIn === 'password' && user.passwordHash === null
          ? 'invited'
          : 'active',
    createdAt: new Date(user.createdAt).toISOString(),
    disabledAt: user.disabledAt === null ? null : new Date(user.disabledAt).toISOString(),
    allowedModels: [...user.allowedModels],
    maxBudget: user.maxBudget && { ...user.maxBudget },
  };
}
