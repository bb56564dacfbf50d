/**
 * What the store keeps, as its callers see it: keys, sessions, usage, audit entries, users and
 * invitations, with epoch-millisecond timestamps and plain JS arrays. Plain data, no storage.
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

/** A pending invitation: the link's token is never stored, only its SHA-256 hex. */
export interface InviteRecord {
  tokenHash: string;
  /** The invited user (created with the invitation, without a password). */
  userId: string;
  createdAt: number;
  expiresAt: number;
}
