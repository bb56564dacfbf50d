/**
 * The one narrow interface in front of persistent state. Nothing outside `src/store` writes
 * SQL; callers see records with epoch-millisecond timestamps and plain JS arrays.
 *
 * `openStore(settings)` picks the backend: PostgreSQL when `databaseUrl` is set, otherwise
 * the embedded SQLite file in `dataDir`. Either way the schema is created and migrated during
 * the open, so a fresh data directory or an empty database just works.
 */
import type { AuditAction, AuditActor, AuditChanges, AuditOutcome, AuditTarget } from '../admin-api/types.js';

/** Per-key limits; `null` means "no limit of this kind". */
export interface KeyLimits {
  /** Requests per minute. */
  rpm: number | null;
  /** Tokens per minute. */
  tpm: number | null;
  /** Requests in flight at once. */
  concurrent: number | null;
}

export type BudgetPeriod = 'day' | 'week' | 'month';
export const BUDGET_PERIODS: readonly BudgetPeriod[] = ['day', 'week', 'month'];

/**
 * A key's budget per calendar period (`GATEHOUSE_TIMEZONE`); `null` means "no budget of this
 * kind". Tokens are input + output; GPU seconds are llama.cpp's `timings` or the upstream time.
 */
export interface KeyBudget {
  tokens: number | null;
  requests: number | null;
  gpuSeconds: number | null;
  period: BudgetPeriod;
}

/**
 * What an admin set on a key, which its owner may tighten but never raise or clear
 * (`auth/key-ceilings.ts`); `null` means no admin set that limit (or expiry).
 */
export interface KeyCeilings extends KeyLimits {
  expiresAt: number | null;
}

/** A key has a budget when any of its three amounts is set. */
export function hasBudget(budget: KeyBudget): boolean {
  return budget.tokens !== null || budget.requests !== null || budget.gpuSeconds !== null;
}

/**
 * One API key as stored. The raw key is never part of it: only the SHA-256 hex of the full
 * key (`hash`) and a short display prefix.
 */
export interface KeyRecord {
  id: string;
  name: string;
  /** `sk-` plus the first characters of the key, for people to recognise it. */
  prefix: string;
  /** SHA-256 hex of the full raw key. */
  hash: string;
  createdAt: number;
  lastUsedAt: number | null;
  expiresAt: number | null;
  revokedAt: number | null;
  /** Model ids this key may use; empty means every model. */
  models: string[];
  note: string;
  limits: KeyLimits;
  /** Place in the admission queue, -10..10: higher goes first. */
  priority: number;
  /** The `manage` scope: may list, load and unload models (`/models*`). */
  manage: boolean;
  budget: KeyBudget;
  /** The user who owns the key; `null` for keys made with the admin token or the CLI. */
  ownerId: string | null;
  /** The limits and expiry an admin set, which bind a member who owns the key. */
  ceilings: KeyCeilings;
}

/** What may change on an existing key. Absent fields stay as they are. */
export interface KeyPatch {
  name?: string;
  models?: string[];
  expiresAt?: number | null;
  revokedAt?: number | null;
  note?: string;
  limits?: Partial<KeyLimits>;
  priority?: number;
  manage?: boolean;
  budget?: Partial<KeyBudget>;
  ceilings?: Partial<KeyCeilings>;
}

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

/**
 * One signed-in dashboard session. The token the browser holds (cookie) is never stored:
 * only its SHA-256 hex.
 */
export interface AdminSessionRecord {
  id: string;
  /** SHA-256 hex of the session token. */
  tokenHash: string;
  createdAt: number;
  /** Last request seen with this session (updated coarsely; see `auth/admin-sessions.ts`). */
  lastSeenAt: number;
  /** Absolute end, whatever the activity. */
  expiresAt: number;
  /** Who signed in. `null` only for a session an older version started (read as the first admin). */
  userId: string | null;
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

/**
 * One proxied call, as the request log keeps it. Written in batches by `usage/usage-writer.ts`;
 * the fields mirror what the gateway saw, never what the client claimed.
 */
export interface UsageRecord {
  /**
   * Unique id that begins with `at` in base36 (`newUsageId`, store/usage-id.ts): the request log
   * is keyed by (at, id) and finds a call by its id through that prefix. The keyset cursor's
   * tie-breaker.
   */
  id: string;
  /** When the call arrived, epoch ms. */
  at: number;
  requestId: string;
  /** `null` in open mode or when the key was refused. */
  keyId: string | null;
  /** The key's name at the time of the call. */
  keyName: string | null;
  model: string | null;
  method: string;
  /** The path, without the query string. */
  endpoint: string;
  /** HTTP status sent; 499 when the client left before any was sent. */
  status: number;
  streamed: boolean;
  inputTokens: number | null;
  outputTokens: number | null;
  cachedTokens: number | null;
  /** Where the counts came from: a `usage` object, llama.cpp `timings`, or counted stream frames. */
  tokensSource: TokensSource | null;
  /** Response headers sent to the client, ms after arrival. */
  ttfbMs: number | null;
  /** First generated token (streams) or first body byte, ms after arrival. */
  ttftMs: number | null;
  durationMs: number;
  bytesIn: number;
  bytesOut: number;
  /** The client went away before the response was complete. */
  clientAborted: boolean;
  /** A short class of what went wrong (`upstream_timeout`, `rate_limited`, `client_abort`...). */
  errorClass: string | null;
  /** Time spent waiting for a turn (admission queue, a key's concurrency slot); null: the call never got that far. */
  queueMs: number | null;
  /**
   * GPU time of a call that was sent upstream: llama.cpp's `timings` (prompt_ms + predicted_ms)
   * when the response carried them, else the upstream time; null when it was never sent.
   */
  gpuMs: number | null;
  /** Start of the request body, only when body capture is on. */
  requestBody: string | null;
  responseBody: string | null;
}

export type TokensSource = 'usage' | 'timings' | 'estimate';

/** A position in the request log: the rows strictly past (at, id) in the list's order. */
export interface UsageCursor {
  at: number;
  id: string;
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

/** A request-log row without the captured bodies, and whether any was captured. */
export type UsageListRow = Omit<UsageRecord, 'requestBody' | 'responseBody'> & { captured: boolean };

/**
 * Upper bounds (ms, inclusive) of the latency histogram kept in the rollups, plus one overflow
 * bucket. Part of the schema: the rollup tables have one column per bucket, so changing this
 * list needs a migration (and old rows keep the old meaning).
 */
export const USAGE_LATENCY_BOUNDS_MS: readonly number[] = Object.freeze([
  1, 2, 3, 5, 7, 10, 15, 20, 30, 50, 70, 100, 150, 200, 300, 500, 700, 1000, 1500, 2000, 3000, 5000, 7000, 10_000,
  15_000, 20_000, 30_000, 60_000, 120_000, 300_000, 600_000,
]);

/** Aggregates of one time bucket (and one group when grouped), summed from the rollups. */
export interface UsageBucket {
  /** Start of the bucket, epoch ms. */
  bucket: number;
  /** The key id or model of the group; `null` for calls without one, or when not grouped. */
  group: string | null;
  /** Latest key name seen in the bucket (for groups by key). */
  keyName: string | null;
  requests: number;
  errors: number;
  aborted: number;
  inputTokens: number;
  outputTokens: number;
  cachedTokens: number;
  durationMsSum: number;
  /** Counts per `USAGE_LATENCY_BOUNDS_MS` bucket, plus the overflow bucket last. */
  latency: number[];
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

/** A key's use over a span of time (budgets). */
export interface KeyUsageTotals {
  requests: number;
  tokens: number;
  gpuMs: number;
}

/**
 * One audit-log entry as stored (`AuditEntry` of the admin API, with epoch-ms time). Built from
 * names and ids only: the store never sees a secret, a key, a password or config text.
 */
export interface AuditRecord {
  /** Time-ordered (`newUsageId`: it begins with `at`), the tie-breaker of the (at, id) order. */
  id: string;
  at: number;
  actor: AuditActor;
  client: string | null;
  action: AuditAction;
  target: AuditTarget | null;
  outcome: AuditOutcome;
  reason: string | null;
  changes: AuditChanges | null;
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

/** What a user may do: `admin` everything, `member` their own keys and usage, `viewer` read-only. */
export type UserRole = 'admin' | 'member' | 'viewer';
export const USER_ROLES: readonly UserRole[] = Object.freeze(['admin', 'member', 'viewer']);

/** How a user signs in: a password kept here (scrypt), or an OpenID Connect provider. */
export type SignInMethod = 'password' | 'oidc';

/** One person who may sign in to the dashboard. */
export interface UserRecord {
  /** `usr_` + 12 base62 characters. */
  id: string;
  /**
   * Unique by its comparison key (`core/user-names.ts`: NFKC, invisible characters dropped, case
   * folded); what a password user types to sign in.
   */
  name: string;
  email: string | null;
  role: UserRole;
  signIn: SignInMethod;
  /** `scrypt$N$r$p$salt$hash`; null for OIDC users and for invited users who have not set one yet. */
  passwordHash: string | null;
  /** The OpenID Provider's issuer and the user's `sub` there; both null for password users. */
  oidcIssuer: string | null;
  oidcSubject: string | null;
  createdAt: number;
  /** Set while the user is disabled: no sign-in, no session, none of their keys work. */
  disabledAt: number | null;
  /**
   * Models a member may allow on their own keys (ids, aliases, `*` patterns); empty means every
   * model. Admin-set; unused for admins and viewers.
   */
  allowedModels: string[];
  /**
   * The most a member's non-revoked keys may hold in budgets together, per kind, in its period;
   * null: no cap. Admin-set; unused for admins and viewers.
   */
  maxBudget: KeyBudget | null;
}

/** What may change on a user. Absent fields stay as they are. */
export interface UserPatch {
  name?: string;
  email?: string | null;
  role?: UserRole;
  passwordHash?: string | null;
  disabledAt?: number | null;
  allowedModels?: string[];
  maxBudget?: KeyBudget | null;
  /** Links the user to an OpenID Provider's subject: from now on they sign in there (`signIn: 'oidc'`). */
  oidc?: { issuer: string; subject: string };
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

/** A pending invitation: the link's token is never stored, only its SHA-256 hex. */
export interface InviteRecord {
  tokenHash: string;
  /** The invited user (created with the invitation, without a password). */
  userId: string;
  createdAt: number;
  expiresAt: number;
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

/**
 * What `openStore` reads: `databaseUrl` (`postgres://...`) set means PostgreSQL, in
 * `databaseSchema` (default `public`); unset means SQLite in `dataDir`.
 */
export interface StoreSettings {
  dataDir: string;
  databaseUrl: string | undefined;
  databaseSchema?: string | undefined;
}

/** Opens the store the settings ask for, migrating it to the current schema. */
export async function openStore(settings: StoreSettings): Promise<Store> {
  if (settings.databaseUrl) {
    // Loaded on demand so the SQLite-only path never loads `pg`.
    const { openPostgresStore } = await import('./postgres.js');
    return openPostgresStore({
      url: settings.databaseUrl,
      ...(settings.databaseSchema ? { schema: settings.databaseSchema } : {}),
    });
  }
  const { openSqliteStore } = await import('./sqlite.js');
  return openSqliteStore({ dataDir: settings.dataDir });
}

/**
 * Where the store lives, for logs: the SQLite file, or PostgreSQL's host, port, database and
 * schema. Never the user, password or query string of the URL (it may carry a password).
 */
export function describeStoreLocation(settings: StoreSettings): string {
  if (!settings.databaseUrl) return `sqlite in ${settings.dataDir}`;
  return describePostgresUrl(settings.databaseUrl, settings.databaseSchema);
}

/** `postgres://host:5432/db (schema public)`: nothing that could be a credential. */
export function describePostgresUrl(url: string, schema?: string): string {
  let where: string;
  try {
    const parsed = new URL(url);
    const host = parsed.host || new URLSearchParams(parsed.search).get('host') || 'localhost';
    const database = decodeURIComponent(parsed.pathname.replace(/^\//, '')) || '(default database)';
    where = `postgres://${host}/${database}`;
  } catch {
    where = 'postgres://(unparseable URL)';
  }
  return `${where} (schema ${schema ?? 'public'})`;
}
