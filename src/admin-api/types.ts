/**
 * The admin API's request and response shapes (docs/admin-api.md), defined once: the handlers in
 * `src/http/admin` and the dashboard in `web/` both import them. Types only, so browser-safe;
 * shapes with a route schema (`common.ts` and one file per feature) are derived from it.
 */
import type { Static } from 'typebox';
import type * as common from './common.js';
import type * as keys from './keys.js';
import type * as limits from './limits.js';
import type * as queue from './queue.js';
import type * as usage from './usage.js';
import type * as users from './users.js';

export type Iso = string;

// User shapes come from the route schemas Fastify validates with (`users.ts`).
export type UserRole = Static<typeof users.UserRole>;
export type User = Static<typeof users.User>;

export interface SessionInfo {
  authenticated: boolean;
  setupRequired: boolean;
  via: 'session' | 'token' | null;
  /** The signed-in user; null for the admin token and when signed out. */
  user: User | null;
  /** What the caller may do: the user's role, `admin` for the admin token, null when signed out. */
  role: UserRole | null;
  /** Sign-in through an OpenID Provider, offered beside the password form; null when not set up. */
  oidc: { name: string } | null;
}

/** `GET /api/me`. */
export interface Me {
  user: User | null;
  role: UserRole;
}

/** `GET /api/users`. */
export type UserList = Static<typeof users.UserList>;
/** `POST /api/users` and `POST /api/users/invite`. */
export type NewUserInput = Static<typeof users.NewUserInput>;
/** An invitation link: shown once; the server keeps only its hash. */
export type Invitation = Static<typeof users.Invitation>;
/** `POST /api/users`, `POST /api/users/invite`. `invite` is null when a password was set. */
export type CreatedUser = Static<typeof users.CreatedUser>;
/** `PATCH /api/users/:id`. */
export type UserPatch = Static<typeof users.UserPatch>;

/** `POST /api/invite/accept`: the token from the link's fragment and the new password. */
export interface InviteAcceptInput {
  token: string;
  password: string;
}

export interface AuthResult {
  authenticated: boolean;
}

// Key shapes come from the route schemas Fastify validates with (`keys.ts`, `common.ts`).
export type KeyLimits = Static<typeof keys.KeyLimits>;
export type BudgetPeriod = Static<typeof common.BudgetPeriod>;
/** A key's budget per calendar period (`GATEHOUSE_TIMEZONE`); null: no budget of that kind. */
export type KeyBudget = Static<typeof common.KeyBudget>;

// Budget and limit shapes come from their route schemas (`limits.ts`).
export type BudgetUse = Static<typeof limits.BudgetUse>;
export type KeyBudgetUse = Static<typeof limits.KeyBudgetUse>;
/** `GET /api/budgets`: every active key with a budget. */
export type BudgetList = Static<typeof limits.BudgetList>;

export type ApiKey = Static<typeof keys.ApiKey>;
/** `POST /api/keys`. */
export type NewKeyInput = Static<typeof keys.NewKeyInput>;
/** `PATCH /api/keys/:id`. */
export type KeyPatch = Static<typeof keys.KeyPatch>;
/** `GET /api/keys`. */
export type KeyList = Static<typeof keys.KeyList>;
/** `PATCH /api/keys/:id`. */
export type UpdatedKey = Static<typeof keys.UpdatedKey>;
/** `POST /api/keys`: the secret is shown once; the server keeps only a hash. */
export type CreatedKey = Static<typeof keys.CreatedKey>;
/** `DELETE /api/keys/:id`. */
export type DeletedKey = Static<typeof keys.DeletedKey>;

export interface UpstreamVersion {
  version: string;
  commit: string;
  build_date: string;
}

/** What serves the models: llama-swap, or llama.cpp's llama-server in router mode (docs/llama-server.md). */
export type UpstreamKindName = 'llama-swap' | 'llama-server';

export interface UpstreamInfo {
  reachable: boolean;
  url: string;
  /** Null until Gatehouse has found out (`GATEHOUSE_UPSTREAM_KIND=auto`). */
  kind: UpstreamKindName | null;
  version: UpstreamVersion | null;
  error: string | null;
}

export type ModelState = 'starting' | 'ready' | 'stopping' | 'stopped';
export type ModelKind = 'model' | 'alias' | 'peer';

/** What llama-swap's config declares under a model's `capabilities`, as its `/v1/models` shows it. */
export interface ModelCapabilities {
  /** Modalities the model reads and writes (`text`, `image`, `audio`); empty when not declared. */
  input: string[];
  output: string[];
  /** Function calling (`capabilities.tools`). */
  tools: boolean;
  reranker: boolean;
}

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
  /** Null when the config declares no modalities, tools or reranker for the model. */
  capabilities?: ModelCapabilities | null;
  /** Context window in tokens (`capabilities.context`); null when the config declares none. */
  contextLength?: number | null;
}

/** `POST /api/models/:id/load` and `/unload`. */
export interface ModelStateChange {
  state: ModelState;
}

export interface ModelList {
  reachable: boolean;
  error: string | null;
  models: Model[];
}

export type LogSource = 'proxy' | 'upstream' | 'gateway' | `model:${string}`;

// ---- Live view (`GET /api/live`, docs/admin-api.md, "Live events") -----------------------

/**
 * How Gatehouse follows llama-swap: `connecting` before the first answer, `live` while it is
 * followed, `reconnecting` after a loss, `unavailable` when retries keep failing.
 */
export type UpstreamLinkState = 'connecting' | 'live' | 'reconnecting' | 'unavailable';

export interface LiveUpstream extends UpstreamInfo {
  state: UpstreamLinkState;
  /** `events`: llama-swap's `/api/events`; `polling`: an older llama-swap without it, or llama-server. */
  mode: 'events' | 'polling' | null;
  /** Why the upstream's own logs cannot be shown (llama-server has no log stream); null when they can. */
  logsUnavailable: string | null;
}

/** The logs `GET /api/live` carries; a model's own log has its own stream (`/api/logs/stream`). */
export type LiveLogSource = 'proxy' | 'upstream' | 'gateway';

/** Why a log's flow was interrupted: llama-swap restarted the stream, was lost, or came back. */
export type LiveGapKind = 'restart' | 'lost' | 'back';

/**
 * `GET /api/live`: one Server-Sent Events stream per browser with these named events (`data` is
 * JSON). On connect: `upstream`, `models` (once known) and one `history` per log; then changes.
 */
export interface LiveEventMap {
  upstream: LiveUpstream;
  /** The whole list on every change: it is small. */
  models: ModelList;
  /** A log's held text; replaces what the page holds for that source. */
  history: { source: LiveLogSource; text: string };
  /** New text of a log, not line-aligned. */
  log: { source: LiveLogSource; text: string };
  /** `source: null`: every llama-swap log. */
  gap: { source: LiveLogSource | null; kind: LiveGapKind; reason: string };
  /** The admission queue: on connect, then after changes, a few times a second at most. */
  queue: QueueView;
}

export type LiveEventName = keyof LiveEventMap;

/** `GET /api/endpoints`. */
export interface EndpointsInfo {
  /** `GATEHOUSE_PUBLIC_URL`; null: use the address the browser used. */
  publicUrl: string | null;
  /** No key record exists: `/v1` needs no key. */
  apiOpen: boolean;
  /**
   * The Ollama door (`GATEHOUSE_OLLAMA_LISTEN`): its port, and whether calls without a key act as
   * a key (`GATEHOUSE_OLLAMA_KEY` is set); null when the door is off.
   */
  ollama: { port: number; keyless: boolean } | null;
}

// ---- Config editor (docs/admin-api.md, "Config editor") ----------------------------------

/** The schema the config is checked against (`schema` in config answers). */
export interface ConfigSchemaInfo {
  available: boolean;
  /** URL or path of the schema used (or wanted, when unavailable). */
  source: string | null;
  origin: 'setting' | 'modeline' | 'default';
  /** When it was downloaded (remote) or last modified (local file). */
  fetchedAt: Iso | null;
  /** Read from Gatehouse's cache in the data dir rather than from `source` itself. */
  fromCache: boolean;
  /** Set when the schema in use is not the one asked for, or may be out of date. */
  warning: string | null;
  /**
   * Which llama-swap schema validated: `llama-swap <commit> (<date>)` for a known release (plus the
   * later keys Gatehouse added, for the bundled copy), else `sha256 <first 12 hex>`; null when unavailable.
   */
  version: string | null;
  /** The copy bundled with Gatehouse was used (nothing downloaded or cached). */
  bundled: boolean;
  /** Why there is no schema and how to provide one; null when available. */
  reason: string | null;
}

/**
 * `yaml`: syntax; `schema`: llama-swap's JSON schema; `loader`: a check llama-swap's loader
 * makes beyond the schema (warning); `placeholder`: a schema type error on a `${...}` value
 * llama-swap substitutes first (warning); `schema_unavailable`: no schema to check against.
 */
export type ConfigIssueKind = 'yaml' | 'schema' | 'placeholder' | 'loader' | 'schema_unavailable';

export interface ConfigIssue {
  kind: ConfigIssueKind;
  message: string;
  /** JSON pointer into the config (`""` for the document or a YAML syntax error). */
  path: string;
  /** 1-based; null when the issue has no place in the text. */
  line: number | null;
  column: number | null;
  endLine: number | null;
  endColumn: number | null;
  /** Offsets in the text (UTF-16 code units, as JavaScript strings and CodeMirror count). */
  from: number | null;
  to: number | null;
}

/** `GET /api/config`. */
export type ConfigLoad =
  | { enabled: false; path: string | null; reason: string }
  | {
      enabled: true;
      /** As configured; `realPath` is what is read and written (differs for a symlink). */
      path: string;
      realPath: string;
      /** The file's exact contents (BOM as U+FEFF, CRLF kept). */
      text: string;
      /** Opaque; send it back with PUT. */
      version: string;
      size: number;
      modifiedAt: Iso;
      /** False when the file is not valid UTF-8: saving would replace the invalid bytes. */
      lossless: boolean;
      writable: boolean;
      readOnlyReason: string | null;
      warnings: string[];
      schema: ConfigSchemaInfo & { document: Record<string, unknown> | null };
    };

/** `POST /api/config/validate`. */
export interface ConfigValidation {
  valid: boolean;
  errors: ConfigIssue[];
  warnings: ConfigIssue[];
  schema: ConfigSchemaInfo;
}

/** `POST /api/config/format`. */
export interface ConfigFormatted {
  text: string;
  changed: boolean;
}

export type ReloadState = 'pending' | 'reloaded' | 'failed' | 'unknown';

/** `GET /api/config/reload-status`, and `reload` of a save. */
export interface ReloadStatus {
  state: ReloadState;
  message: string;
  /** When the save this status is about was written; null when there was none. */
  savedAt: Iso | null;
  /** When the state stopped being `pending`. */
  settledAt: Iso | null;
}

/** `PUT /api/config`. */
export interface ConfigSaved {
  saved: true;
  /** False when the text equals the file: nothing was written and llama-swap does not reload. */
  changed: boolean;
  path: string;
  realPath: string;
  version: string;
  size: number;
  modifiedAt: Iso;
  method: 'rename' | 'in-place' | 'unchanged';
  warnings: ConfigIssue[];
  /** Operator-facing notes: the reload restarts every model; an in-place fallback... */
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

// Usage shapes come from the route schemas Fastify validates with (`usage.ts`).
export type UsageRange = Static<typeof usage.UsageRange>;
export type UsageGroupBy = Static<typeof usage.UsageGroupBy>;
export type UsageStats = Static<typeof usage.UsageStats>;
export type UsagePoint = Static<typeof usage.UsagePoint>;
export type UsageGroup = Static<typeof usage.UsageGroup>;
/** `GET /api/usage/summary`. */
export type UsageSummary = Static<typeof usage.UsageSummary>;
export type UsageRequest = Static<typeof usage.UsageRequest>;
export type UsageRequestDetail = Static<typeof usage.UsageRequestDetail>;
/** `GET /api/usage/requests/:id`. */
export type UsageRequestFound = Static<typeof usage.UsageRequestFound>;
/** `GET /api/usage/requests`. */
export type UsageRequestPage = Static<typeof usage.UsageRequestPage>;

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

/** `GET /api/usage/export`: the request log (`call`) or its sums per key, model or UTC day. */
export type UsageExportGroup = (typeof usage.USAGE_EXPORT_GROUPS)[number];
export type UsageExportFormat = (typeof usage.USAGE_EXPORT_FORMATS)[number];

/** `GET /api/limits`: where per-key limits are counted right now. */
export type LimitsInfo = Static<typeof limits.LimitsInfo>;
// Queue shapes come from the route schema (`queue.ts`).
export type QueuedCallView = Static<typeof queue.QueuedCallView>;
/** `GET /api/queue`. */
export type QueueView = Static<typeof queue.QueueView>;

// ---- Audit log (docs/admin-api.md, "Audit log") ----------------------------------------------

// The audit log's shapes (`GET /api/audit`).
export type {
  AuditAction,
  AuditActor,
  AuditChanges,
  AuditEntry,
  AuditOutcome,
  AuditPage,
  AuditTarget,
  AuditValue,
} from './audit.js';
