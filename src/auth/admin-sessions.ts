/**
 * Dashboard sessions. A session is a random 32-byte token held by the browser in the
 * `gatehouse_session` cookie; the store keeps only its SHA-256, so a copy of the database
 * cannot be replayed as a login. Sessions live in the store, so they survive a restart and
 * are shared by replicas on one PostgreSQL database.
 *
 * Expiry: a session ends after `ttlMs` without a request (sliding) and, whatever the
 * activity, `MAX_SESSION_AGE_MS` after sign-in. `lastSeenAt` is written at most once per
 * `touchEveryMs` (a minute), so a busy dashboard costs one write a minute, not one per request;
 * the price is that the idle clock may start up to a minute early.
 */
import { createHash, randomBytes, randomUUID } from 'node:crypto';
import type { AdminSessionRecord } from '../store/records.js';
import type { AdminSessionStore } from '../store/store.js';

const MAX_SESSION_AGE_MS = 30 * 86_400_000;
const TOKEN_BYTES = 32;
/** base64url of 32 bytes. Anything else is refused without a database read. */
const TOKEN_SHAPE = /^[A-Za-z0-9_-]{43}$/;

export interface AdminSessionsOptions {
  store: AdminSessionStore;
  /** Idle time after which a session ends. */
  ttlMs: number;
  maxAgeMs?: number;
  touchEveryMs?: number;
  now?: () => number;
}

export interface StartedSession {
  /** The secret for the cookie. Shown to the browser once, never stored. */
  token: string;
  session: AdminSessionRecord;
}

export class AdminSessions {
  readonly #store: AdminSessionStore;
  readonly #ttlMs: number;
  readonly #maxAgeMs: number;
  readonly #touchEveryMs: number;
  readonly #now: () => number;

  constructor(options: AdminSessionsOptions) {
    if (!(options.ttlMs > 0)) throw new Error('AdminSessions: ttlMs must be > 0');
    this.#store = options.store;
    this.#ttlMs = options.ttlMs;
    this.#maxAgeMs = options.maxAgeMs ?? MAX_SESSION_AGE_MS;
    this.#touchEveryMs = options.touchEveryMs ?? 60_000;
    this.#now = options.now ?? Date.now;
  }

  /**
   * Starts a session for the user (and clears out expired ones while at it); in `store` when
   * given (a transaction that also writes its audit entry).
   */
  async start(userId: string, store: AdminSessionStore = this.#store): Promise<StartedSession> {
    const at = this.#now();
    await store.deleteExpired(at, at - this.#ttlMs);
    const token = randomBytes(TOKEN_BYTES).toString('base64url');
    const session: AdminSessionRecord = {
      id: randomUUID(),
      tokenHash: hashSessionToken(token),
      createdAt: at,
      lastSeenAt: at,
      expiresAt: at + this.#maxAgeMs,
      userId,
    };
    await store.create(session);
    return { token, session };
  }

  /**
   * The live session for a cookie value, or undefined. Looked up by hash (no comparison of
   * secrets happens in JS). Records activity at most once per `touchEveryMs`; deletes the
   * session when it has expired.
   */
  async resolve(token: string): Promise<AdminSessionRecord | undefined> {
    if (!TOKEN_SHAPE.test(token)) return undefined;
    const session = await this.#store.findByTokenHash(hashSessionToken(token));
    if (!session) return undefined;
    const at = this.#now();
    if (at >= session.expiresAt || at - session.lastSeenAt >= this.#ttlMs) {
      await this.#store.delete(session.id);
      return undefined;
    }
    if (at - session.lastSeenAt >= this.#touchEveryMs) {
      await this.#store.touch(session.id, at);
      return { ...session, lastSeenAt: at };
    }
    return session;
  }

  /** Ends one session (sign-out); in `store` when given. */
  async end(id: string, store: AdminSessionStore = this.#store): Promise<void> {
    await store.delete(id);
  }

  /** Ends every session of `userId` but `keepId` (every one when null); returns how many ended. */
  endAllExcept(keepId: string | null, userId: string, store: AdminSessionStore = this.#store): Promise<number> {
    return store.deleteAllExcept(keepId, userId);
  }
}

export function hashSessionToken(token: string): string {
  return createHash('sha256').update(token, 'utf8').digest('hex');
}
