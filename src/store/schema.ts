/**
 * Row types as Kysely sees them, after every migration. Portable column types only:
 * timestamps are integer epoch milliseconds (`bigint`), lists are JSON text, booleans do not
 * exist (a nullable timestamp says when something happened).
 */
import type { ColumnType, Generated } from 'kysely';

/**
 * A `bigint` column: written as a JS number; read back as a number from SQLite but as a
 * string from `pg` (int8 can exceed 2^53). `kysely-store.ts` normalises with `Number()`;
 * epoch milliseconds stay far below 2^53.
 */
type Int8 = ColumnType<number | string, number, number>;
type NullableInt8 = ColumnType<number | string | null, number | null, number | null>;

export interface ApiKeysTable {
  id: string;
  name: string;
  prefix: string;
  hash: string;
  created_at: Int8;
  last_used_at: NullableInt8;
  expires_at: NullableInt8;
  revoked_at: NullableInt8;
  /** JSON array of model ids; `[]` means every model. */
  allowed_models: string;
  note: string;
  rpm: number | null;
  tpm: number | null;
  max_concurrent: number | null;
  priority: Generated<number>;
  /** 1: the key may manage models (`/models`, `/models/load`, `/models/unload`). */
  manage: Generated<number>;
  budget_tokens: NullableInt8;
  budget_requests: NullableInt8;
  budget_gpu_seconds: NullableInt8;
  budget_period: Generated<string>;
  /** `users.id` of the owner; null for keys made with the admin token or the CLI. */
  owner_id: string | null;
  /** What an admin set, which binds a member owning the key; null: no ceiling. */
  ceiling_rpm: number | null;
  ceiling_tpm: number | null;
  ceiling_concurrent: number | null;
  ceiling_expires_at: NullableInt8;
}

export interface MetaTable {
  key: string;
  value: string;
}

/** One signed-in dashboard browser. The session token itself is never stored. */
export interface AdminSessionsTable {
  id: string;
  /** SHA-256 hex of the session token (the `gatehouse_session` cookie). */
  token_hash: string;
  created_at: Int8;
  last_seen_at: Int8;
  /** Absolute end, whatever the activity. */
  expires_at: Int8;
  /** `users.id`; null only for sessions an older version started. */
  user_id: string | null;
}

/** One person who may sign in (`UserRecord`). */
export interface UsersTable {
  id: string;
  name: string;
  /** `userNameKey(name)`, unique; null only for an older look-alike of a name (migration 0014). */
  name_key: string | null;
  email: string | null;
  /** `admin` | `member` | `viewer` */
  role: string;
  /** `password` | `oidc` */
  sign_in: string;
  password_hash: string | null;
  oidc_issuer: string | null;
  oidc_subject: string | null;
  created_at: Int8;
  disabled_at: NullableInt8;
  /** JSON array of model ids a member may allow on their keys; `[]` means every model. */
  allowed_models: string;
  /** The cap on a member's key budgets together; `max_budget_period` null: no cap. */
  max_budget_tokens: NullableInt8;
  max_budget_requests: NullableInt8;
  max_budget_gpu_seconds: NullableInt8;
  max_budget_period: string | null;
}

/** A pending invitation link; only the SHA-256 hex of its token. */
export interface UserInvitesTable {
  token_hash: string;
  user_id: string;
  created_at: Int8;
  expires_at: Int8;
}

/** One proxied call (`UsageRecord`). Flags are integers 0/1: neither engine shares a boolean type. */
export interface UsageRequestsTable {
  id: string;
  at: Int8;
  request_id: string;
  key_id: string | null;
  key_name: string | null;
  model: string | null;
  method: string;
  endpoint: string;
  status: number;
  streamed: number;
  input_tokens: number | null;
  output_tokens: number | null;
  cached_tokens: number | null;
  tokens_source: string | null;
  ttfb_ms: number | null;
  ttft_ms: number | null;
  duration_ms: number;
  bytes_in: Int8;
  bytes_out: Int8;
  client_aborted: number;
  error_class: string | null;
  queue_ms: number | null;
  gpu_ms: number | null;
  request_body: string | null;
  response_body: string | null;
}

/**
 * Sums per (bucket, key, model): `usage_minutes` (bucket = start of a minute) and `usage_hours`.
 * `key_id`/`model` are `''` for calls without one (a primary key column cannot be NULL).
 * `lat_00`..`lat_31` count calls per latency bucket (`USAGE_LATENCY_BOUNDS_MS`, overflow last).
 */
export interface UsageRollupTable {
  bucket: Int8;
  key_id: string;
  key_name: string | null;
  model: string;
  requests: number;
  errors: number;
  aborted: number;
  input_tokens: Int8;
  output_tokens: Int8;
  cached_tokens: Int8;
  duration_ms_sum: number;
  [latencyColumn: `lat_${string}`]: number;
}

/** One audit-log entry (`AuditRecord`); the target's columns are all null when it has none. */
export interface AuditLogTable {
  id: string;
  at: Int8;
  actor_kind: string;
  actor_id: string | null;
  actor_name: string | null;
  client: string | null;
  action: string;
  target_kind: string | null;
  target_id: string | null;
  target_name: string | null;
  target_version: string | null;
  /** `success` or `failure` (a CHECK constraint). */
  outcome: string;
  reason: string | null;
  /** `AuditChanges` as JSON; null when the action changed no listed field. */
  changes: string | null;
}

export interface Database {
  api_keys: ApiKeysTable;
  meta: MetaTable;
  admin_sessions: AdminSessionsTable;
  users: UsersTable;
  user_invites: UserInvitesTable;
  usage_requests: UsageRequestsTable;
  usage_minutes: UsageRollupTable;
  usage_hours: UsageRollupTable;
  audit_log: AuditLogTable;
}
