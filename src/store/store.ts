/**
 * The one narrow interface in front of persistent state: a store per kind of record, and the
 * `Store` that holds them. Nothing outside `src/store` writes SQL; `open-store.ts` picks the backend.
 */
import type { AuditAction } from '../admin-api/types.js';
import type {
  AdminSessionRecord,
  AuditRecord,
  InviteRecord,
  KeyPatch,
  KeyRecord,
  KeyUsageTotals,
  UsageBucket,
  UsageCursor,
  UsageListRow,
  UsageRecord,
  UserPatch,
  UserRecord,
} from './records.js';

/** Thrown by `keys.findByIdOrPrefix` when the reference matches more than one key. */
export class AmbiguousKeyReferenceError extends Error {
  override name = 'AmbiguousKeyReferenceError';
  constructor(
    readonly reference: string,
    readonly matches: ReadonlyArray<Pick<KeyRecord, 'id' | 'prefix' | 'name'>>,
  ) {
    super(
      `"${reference}" matches ${matches.length} keys ` +
        `(${matches.map((m) => `${m.id} ${m.prefix} "${m.name}"`).join(', ')}); use the full id`,
    );
  }
}

export interface KeyStore {
  /** Inserts a new key. Fails if the id or hash already exists. */
  create(record: KeyRecord): Promise<KeyRecord>;
  /** Every key, oldest first; only the keys of `ownerId` when given. */
  list(filter?: { ownerId: string }): Promise<KeyRecord[]>;
  get(id: string): Promise<KeyRecord | undefined>;
  /**
   * Resolves what an operator typed: an exact id, or the start of an id (`key_…`) or of a
   * display prefix (`sk-…`, at least 4 characters). Case-sensitive, as keys are. Throws
   * `AmbiguousKeyReferenceError` when several keys match.
   */
  findByIdOrPrefix(reference: string): Promise<KeyRecord | undefined>;
  /** Applies the patch; returns the updated record, or `undefined` when the id is unknown. */
  update(id: string, patch: KeyPatch): Promise<KeyRecord | undefined>;
  /** Returns whether a key was deleted. */
  delete(id: string): Promise<boolean>;
  count(): Promise<number>;
  /**
   * Records last use for many keys in one transaction. A stored value is only ever moved
   * forward, so an old batch arriving late cannot rewind it.
   */
  touchLastUsed(lastUsed: ReadonlyMap<string, number>): Promise<void>;
}

export interface MetaStore {
  get(key: string): Promise<string | undefined>;
  set(key: string, value: string): Promise<void>;
  delete(key: string): Promise<void>;
  /**
   * Deletes `key` only while it still holds `value`, in one statement; returns whether it
   * did. Two callers racing for the same value: exactly one gets `true` (single-use tokens).
   */
  deleteIfEquals(key: string, value: string): Promise<boolean>;
}

export interface AdminSessionStore {
  /** Inserts a new session. Fails if the id or token hash already exists. */
  create(record: AdminSessionRecord): Promise<void>;
  findByTokenHash(tokenHash: string): Promise<AdminSessionRecord | undefined>;
  /** Moves `lastSeenAt` forward; never back, so a late write cannot rewind it. */
  touch(id: string, at: number): Promise<void>;
  /** Returns whether a session was deleted. */
  delete(id: string): Promise<boolean>;
  /**
   * Deletes every session except `keepId` (every one when `null`); returns how many. With
   * `userId`, only that user's sessions.
   */
  deleteAllExcept(keepId: string | null, userId?: string): Promise<number>;
  /**
   * Deletes the sessions past their absolute end (`expiresAt <= now`) or idle since before
   * `idleBefore` (`lastSeenAt < idleBefore`); returns how many.
   */
  deleteExpired(now: number, idleBefore: number): Promise<number>;
  count(): Promise<number>;
}

export interface UsageListQuery {
  keyId?: string;
  /** Only calls made with one of these keys (a member's own keys); empty matches nothing. */
  keyIds?: readonly string[];
  model?: string;
  /** Inclusive status range (`{min: 500, max: 599}` for 5xx, or one code). */
  status?: { min: number; max: number };
  /** Inclusive lower bound of `at`. */
  from?: number;
  /** Exclusive upper bound of `at`. */
  to?: number;
  after?: UsageCursor;
  /** Oldest first (exports) instead of newest first (the dashboard's log). */
  oldestFirst?: boolean;
  limit: number;
}

export interface UsageRollupQuery {
  /** Minute rollups (kept ~2 days) or hour rollups (kept as long as the request log). */
  resolution: 'minute' | 'hour';
  /** Inclusive, epoch ms, aligned to `stepMs`. */
  from: number;
  /** Exclusive. */
  to: number;
  /** Width of the returned buckets: a multiple of the resolution. */
  stepMs: number;
  groupBy: 'key' | 'model' | null;
  /** Only calls made with one of these keys (a member's own keys); empty matches nothing. */
  keyIds?: readonly string[];
}

export interface UsagePruneCutoffs {
  /** Request-log rows with `at` before this go. */
  requestsBefore: number;
  minutesBefore: number;
  hoursBefore: number;
}

export interface UsageStore {
  /**
   * Appends rows and adds them to the minute and hour rollups, in one transaction. Rollups are
   * summed in SQL (`count = count + excluded.count`), so replicas sharing a database add up.
   */
  append(records: readonly UsageRecord[]): Promise<void>;
  /**
   * The most records one `append` should carry. SQLite writes on the event loop, so its
   * transactions are kept short (every call waits for one); PostgreSQL takes large ones in one
   * round trip.
   */
  readonly maxAppendRecords: number;
  /** Newest first (by `at`, then `id`; oldest first with `oldestFirst`), filtered; at most `limit` rows. */
  list(query: UsageListQuery): Promise<UsageListRow[]>;
  /** One row with its captured bodies. */
  get(id: string): Promise<UsageRecord | undefined>;
  /** Buckets of `stepMs` in [from, to), only those with calls, ordered by bucket then group. */
  rollup(query: UsageRollupQuery): Promise<UsageBucket[]>;
  /**
   * Deletes at most `limit` rows of each table past its cutoff; returns how many went in all.
   * Small batches keep each transaction short; the caller repeats until it returns 0.
   */
  prune(cutoffs: UsagePruneCutoffs, limit: number): Promise<number>;
  count(): Promise<number>;
  /**
   * What a key used in [from, to): calls sent upstream (those with a `gpuMs`), their input +
   * output tokens and GPU ms. Reads the request log through its (key_id, at) index.
   */
  keyTotals(keyId: string, from: number, to: number): Promise<KeyUsageTotals>;
}

export interface AuditListQuery {
  action?: AuditAction;
  /** Entries strictly older than this time, or than this entry when `id` is given. */
  before?: { at: number; id?: string };
  limit: number;
}

export interface AuditStore {
  append(record: AuditRecord): Promise<void>;
  /** Newest first (by `at`, then `id`), filtered; at most `limit` entries. */
  list(query: AuditListQuery): Promise<AuditRecord[]>;
  /** Deletes at most `limit` entries older than `before`; returns how many. The caller repeats until 0. */
  prune(before: number, limit: number): Promise<number>;
}

/** The stores one transaction writes through (`Store.transaction`). */
export interface StoreTransaction {
  readonly keys: KeyStore;
  readonly meta: MetaStore;
  readonly users: UserStore;
  readonly invites: InviteStore;
  readonly sessions: AdminSessionStore;
  readonly audit: AuditStore;
  /**
   * Waits for, then holds until this transaction ends, a lock named after one key owner: a write
   * that checks the sum of an owner's keys against a cap takes it before reading them, so two such
   * writes cannot both pass on the same sum. Only other holders wait for it, not other writes.
   */
  lockKeyOwner(ownerId: string): Promise<void>;
}

export interface UserStore {
  /**
   * Inserts a user. Fails if the id, the name's comparison key or the (issuer, subject) pair
   * already exists.
   */
  create(record: UserRecord): Promise<UserRecord>;
  /** Every user, oldest first. */
  list(): Promise<UserRecord[]>;
  get(id: string): Promise<UserRecord | undefined>;
  /** The user with exactly this name, else the one whose name compares equal to it. */
  findByName(name: string): Promise<UserRecord | undefined>;
  findByOidc(issuer: string, subject: string): Promise<UserRecord | undefined>;
  /**
   * Applies the patch; returns the updated record, or `undefined` when the id is unknown.
   * Announced like a key write (`watchKeys`): a disabled user's keys stop on every replica.
   */
  update(id: string, patch: UserPatch): Promise<UserRecord | undefined>;
  count(): Promise<number>;
}

export interface InviteStore {
  create(record: InviteRecord): Promise<void>;
  /**
   * Uses up the invitation with this token hash in one statement, whatever its age: of two
   * requests racing with one link exactly one gets it back. The caller checks `expiresAt`.
   */
  take(tokenHash: string): Promise<InviteRecord | undefined>;
  /** Deletes every invitation of a user (a new invitation replaces the old link). */
  deleteForUser(userId: string): Promise<number>;
  /** The user's invitation that expires last, whatever its age; the caller checks `expiresAt`. */
  findForUser(userId: string): Promise<InviteRecord | undefined>;
}

export interface Store {
  /** `sqlite` or `postgres`, for logs and diagnostics. */
  readonly kind: 'sqlite' | 'postgres';
  /** Names of the migrations applied while opening this store (empty when already current). */
  readonly migrationsApplied: readonly string[];
  readonly keys: KeyStore;
  readonly meta: MetaStore;
  readonly sessions: AdminSessionStore;
  readonly users: UserStore;
  readonly invites: InviteStore;
  /** The request log and its rollups (`usage/`). */
  readonly usage: UsageStore;
  /** Who changed what in the admin API (`audit/`). */
  readonly audit: AuditStore;
  /**
   * Runs `work` in one transaction: everything it writes through `tx` commits together or not
   * at all (an action and its audit entry). Keep it short: on SQLite it holds the write lock and
   * the store's one connection, so `work` must query through `tx` only (a query on the store
   * itself would wait for the transaction to end).
   */
  transaction<T>(work: (tx: StoreTransaction) => Promise<T>): Promise<T>;
  /**
   * Calls `onChange` when another connection or process changed the keys or the users (the
   * CLI, another replica). Writes through this store are not reported: their caller knows already.
   * May also fire spuriously (periodic resync); listeners reload, they do not diff.
   * Returns the unsubscribe function.
   */
  watchKeys(onChange: () => void): () => void;
  /** Stops watchers and closes connections. Idempotent. */
  close(): Promise<void>;
}
