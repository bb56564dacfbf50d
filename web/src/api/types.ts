/**
 * Shapes of the admin API as docs/admin-api.md defines them. This file mirrors the contract
 * rather than importing the server's types: the contract is what both sides promise, and the
 * dashboard must not depend on the server's internals.
 */

export type Iso = string;

export interface SessionInfo {
  authenticated: boolean;
  setupRequired: boolean;
  via: 'session' | 'token' | null;
}

export interface AuthResult {
  authenticated: boolean;
}

export type KeyStatus = 'active' | 'revoked' | 'expired';

export interface KeyLimits {
  rpm: number | null;
  tpm: number | null;
  concurrent: number | null;
}

export interface ApiKey {
  id: string;
  name: string;
  prefix: string;
  status: KeyStatus;
  createdAt: Iso;
  lastUsedAt: Iso | null;
  expiresAt: Iso | null;
  revokedAt: Iso | null;
  /** Empty: every model is allowed. */
  models: string[];
  note: string;
  limits: KeyLimits;
}

export interface NewKeyInput {
  name: string;
  models?: string[];
  expiresAt?: Iso | null;
  note?: string;
  limits?: Partial<KeyLimits>;
}

export interface KeyPatch {
  name?: string;
  models?: string[];
  expiresAt?: Iso | null;
  note?: string;
  limits?: Partial<KeyLimits>;
  revoked?: true;
}

export interface CreatedKey {
  key: ApiKey;
  /** Shown once; the server keeps only a hash. */
  secret: string;
}

export interface DeletedKey {
  deleted: true;
  remaining: number;
  warning?: string;
}

export interface UpstreamVersion {
  version: string;
  commit: string;
  build_date: string;
}

export interface UpstreamInfo {
  reachable: boolean;
  url: string;
  version: UpstreamVersion | null;
  error: string | null;
}

export type ModelState = 'starting' | 'ready' | 'stopping' | 'stopped';
export type ModelKind = 'model' | 'alias' | 'peer';

export interface Model {
  id: string;
  name: string | null;
  description: string | null;
  kind: ModelKind;
  aliases: string[];
  peerId: string | null;
  unlisted: boolean;
  state: ModelState;
  ttl: number | null;
}

export interface ModelList {
  reachable: boolean;
  error: string | null;
  models: Model[];
}

export type LogSource = 'proxy' | 'upstream' | 'gateway' | `model:${string}`;

/** `GET /api/endpoints`. */
export interface EndpointsInfo {
  /** `GATEHOUSE_PUBLIC_URL`; null: use the address the browser used. */
  publicUrl: string | null;
  /** No key record exists: `/v1` needs no key. */
  apiOpen: boolean;
}

// ---- Config editor (docs/admin-api.md, "Config editor") ----------------------------------

export interface ConfigSchemaInfo {
  available: boolean;
  source: string | null;
  origin: 'setting' | 'modeline' | 'default';
  fetchedAt: Iso | null;
  fromCache: boolean;
  warning: string | null;
  reason: string | null;
}

export type ConfigIssueKind = 'yaml' | 'schema' | 'placeholder' | 'loader' | 'schema_unavailable';

export interface ConfigIssue {
  kind: ConfigIssueKind;
  message: string;
  /** JSON pointer into the config; "" for YAML syntax errors. */
  path: string;
  /** 1-based; null when the issue has no place in the text. */
  line: number | null;
  column: number | null;
  endLine: number | null;
  endColumn: number | null;
  /** Offsets in the text (UTF-16 code units, CodeMirror positions). */
  from: number | null;
  to: number | null;
}

export type ConfigLoad =
  | { enabled: false; path: string | null; reason: string }
  | {
      enabled: true;
      path: string;
      realPath: string;
      text: string;
      version: string;
      size: number;
      modifiedAt: Iso;
      lossless: boolean;
      writable: boolean;
      readOnlyReason: string | null;
      warnings: string[];
      schema: ConfigSchemaInfo & { document: Record<string, unknown> | null };
    };

export interface ConfigValidation {
  valid: boolean;
  errors: ConfigIssue[];
  warnings: ConfigIssue[];
  schema: ConfigSchemaInfo;
}

export type ReloadState = 'pending' | 'reloaded' | 'failed' | 'unknown';

export interface ReloadStatus {
  state: ReloadState;
  message: string;
  savedAt: Iso | null;
  settledAt: Iso | null;
}

export interface ConfigSaved {
  saved: true;
  changed: boolean;
  path: string;
  realPath: string;
  version: string;
  size: number;
  modifiedAt: Iso;
  method: 'rename' | 'in-place' | 'unchanged';
  warnings: ConfigIssue[];
  notices: string[];
  reload: ReloadStatus;
  schema: ConfigSchemaInfo;
}

/** `details` of `409 config_conflict`. */
export interface ConfigConflict {
  changed: Array<'mtime' | 'size' | 'content'>;
  currentVersion: string;
  currentText: string;
  modifiedAt: Iso;
}

/** `details` of `422 config_invalid`. */
export interface ConfigInvalid {
  errors: ConfigIssue[];
  warnings: ConfigIssue[];
  schema?: ConfigSchemaInfo;
}

// ---- Usage (docs/admin-api.md, "Usage") and where key limits are counted -----------------

export type UsageRange = '1h' | '24h' | '30d';
export type UsageGroupBy = 'key' | 'model';

export interface UsageLatency {
  avg: number;
  /** Estimated from a fixed histogram: within about ±20 %. */
  p50: number;
  p95: number;
  p99: number;
}

export interface UsageStats {
  requests: number;
  errors: number;
  aborted: number;
  /** Cached tokens included. */
  inputTokens: number;
  outputTokens: number;
  cachedTokens: number;
  /** null with no calls. */
  latencyMs: UsageLatency | null;
}

export interface UsagePoint extends UsageStats {
  /** Bucket start. */
  t: Iso;
}

export interface UsageGroup {
  /** groupBy=key: `id: null` for calls without a key (open mode, refused keys). */
  key?: { id: string | null; name: string | null };
  /** groupBy=model: null for calls that named no model. */
  model?: string | null;
  totals: UsageStats;
  series: UsagePoint[];
}

export interface UsageSummary {
  range: UsageRange;
  groupBy: UsageGroupBy | null;
  from: Iso;
  to: Iso;
  stepMs: number;
  totals: UsageStats;
  /** Zero-filled, oldest first; the last bucket holds "now". */
  series: UsagePoint[];
  /** Most requests first. */
  groups: UsageGroup[];
}

export type TokensSource = 'usage' | 'timings' | 'estimate';

export interface UsageRequest {
  id: string;
  at: Iso;
  requestId: string;
  key: { id: string; name: string | null } | null;
  model: string | null;
  method: string;
  endpoint: string;
  /** 499 when the client left before a status was sent. */
  status: number;
  streamed: boolean;
  inputTokens: number | null;
  outputTokens: number | null;
  cachedTokens: number | null;
  tokensSource: TokensSource | null;
  ttfbMs: number | null;
  ttftMs: number | null;
  durationMs: number | null;
  bytesIn: number | null;
  bytesOut: number | null;
  clientAborted: boolean;
  errorClass: string | null;
  captured: boolean;
}

export interface UsageRequestDetail extends UsageRequest {
  /** Only with GATEHOUSE_USAGE_CAPTURE_BYTES set. */
  requestBody: string | null;
  responseBody: string | null;
}

export interface UsageRequestPage {
  requests: UsageRequest[];
  nextCursor: string | null;
}

/** `GET /api/usage/requests` filters; every one optional. */
export interface UsageRequestFilters {
  key?: string;
  model?: string;
  /** A code (`429`) or a class (`2xx`). */
  status?: string;
  /** Inclusive, ISO. */
  from?: Iso;
  /** Exclusive, ISO. */
  to?: Iso;
}

/** `GET /api/limits`: where per-key limits are counted right now. */
export interface LimitsInfo {
  /** `shared`: in Redis, for every replica together; `replica`: by each gateway process alone. */
  limitsScope: 'replica' | 'shared';
  redis: 'off' | 'connected' | 'unavailable';
  unavailableSince: Iso | null;
}
