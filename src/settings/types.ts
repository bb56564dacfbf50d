/** The shape of Gatehouse's settings and of the table that declares them (`table.ts`). */
import type { ScryptCost } from '../auth/passwords.js';
import type { UpstreamKindSetting } from '../management-client/open-upstream.js';

export interface Settings {
  host: string;
  port: number;
  upstreamUrl: URL;
  /** What serves the models; `auto` asks the upstream (docs/llama-server.md, "Detection"). */
  upstreamKind: UpstreamKindSetting;
  upstreamApiKey: string | undefined;
  connectTimeoutMs: number;
  headersTimeoutMs: number;
  idleTimeoutMs: number;
  /** Keep-alive connections to llama-swap at most (each stream holds one for its whole life). */
  upstreamConnections: number;
  bodyLimitBytes: number;
  /** Longest pause between two bytes of a request body before it is answered 408. */
  bodyTimeoutMs: number;
  /** Bytes of request bodies spooled to disk at once, all calls together (then 503 `spool_full`). */
  spoolMaxBytes: number;
  /** Bodies one key may have spooled to disk at once (then 503 `spool_full`); 0 = no per-key cap. */
  spoolMaxPerKey: number;
  shutdownGraceMs: number;
  /** Calls forwarded to llama-swap at once, all models together; 0 = no cap. */
  maxInflight: number;
  /** Calls forwarded at once per model (aliases count as their model); 0 = no cap. */
  maxInflightPerModel: number;
  /** How long a waiting call may be passed over for calls to the loaded model. */
  swapFairnessMs: number;
  /** Longest wait in the admission queue (then 503 queue_timeout). */
  queueTimeoutMs: number;
  /** Most calls waiting at once (one more: 503 queue_full). */
  queueMax: number;
  /** Most calls of one key waiting at once; unset: half of `queueMax` (at least 1); 0: no share. */
  queueMaxPerKey: number | undefined;
  /** A streaming call without llama-swap's answer this long gets 200 and SSE comments; 0 = off. */
  sseKeepAliveMs: number;
  /** Where the Ollama API listens (docs/ollama.md); undefined = off. */
  ollamaListen: { host: string; port: number } | undefined;
  /** The name of the key that Ollama calls without a key act as; undefined = they need one. */
  ollamaKey: string | undefined;
  logLevel: 'fatal' | 'error' | 'warn' | 'info' | 'debug' | 'trace' | 'silent';
  dataDir: string;
  /** PostgreSQL connection URL (a secret: may hold a password); unset means SQLite in `dataDir`. */
  databaseUrl: string | undefined;
  /** PostgreSQL schema holding Gatehouse's tables; unset means `public`. */
  databaseSchema: string | undefined;
  adminToken: string | undefined;
  /**
   * llama-swap's config.yaml for the config editor, as set: the editor itself reports
   * unset/relative/missing/directory.
   */
  inferenceConfigFile: string | undefined;
  /** llama-swap's config-schema.json for the editor: absolute path or http(s) URL. */
  inferenceConfigSchema: string | undefined;
  adminPassword: string | undefined;
  /** scrypt parameters for new admin and user password hashes (a stored hash keeps its own). */
  passwordHashCost: Readonly<ScryptCost>;
  /** Addresses/CIDRs whose X-Forwarded-* headers are believed; validated at load. */
  trustedProxies: readonly string[];
  /** Web origins allowed to call `/v1` from a browser: `*` (any) or a list of exact origins. */
  corsOrigins: '*' | readonly string[];
  /** How long `/readyz` waits for llama-swap's `/health`. */
  readyTimeoutMs: number;
  sessionTtlMs: number;
  /** Write a usage record per `/v1` call (and tap responses for tokens). */
  usageRecording: boolean;
  usageRetentionMs: number;
  /** How long audit-log entries are kept. */
  auditRetentionMs: number;
  /** Bytes of each request and response body kept in the request log; 0 = none. */
  usageCaptureBytes: number;
  /** Bearer token `GET /metrics` requires; unset = open. */
  metricsToken: string | undefined;
  /**
   * The address clients reach the gateway at (scheme, host, port, optional path prefix; no trailing slash), for the
   * Endpoints page.
   */
  publicUrl: string | undefined;
  /** Redis URL (a secret: may hold a password); set, per-key limits are shared by every replica. */
  redisUrl: string | undefined;
  /** Prefix of every Redis key Gatehouse writes. */
  redisPrefix: string;
  /** IANA time zone whose calendar days, weeks and months budgets count in. */
  timeZone: string;
  /** OpenID Provider's issuer URL; set, the sign-in page offers "Sign in with <oidcName>". */
  oidcIssuer: URL | undefined;
  oidcClientId: string | undefined;
  /** A secret: never logged, never shown. Unset: a public client (PKCE only). */
  oidcClientSecret: string | undefined;
  /** Scopes asked for at sign-in; always includes `openid`. */
  oidcScopes: readonly string[];
  /** The ID token or userinfo claim that holds the person's groups or roles. */
  oidcRoleClaim: string;
  /** Claim values that make a person an admin, a member, a viewer; all empty: the provider sets no role. */
  oidcAdminValues: readonly string[];
  oidcMemberValues: readonly string[];
  oidcViewerValues: readonly string[];
  /** People the provider vouches for but no admin added may sign in (a new user is made). */
  oidcAutoCreate: boolean;
  /** The provider's name on the sign-in button; unset: the issuer's host. */
  oidcName: string | undefined;
}

export class SettingsError extends Error {
  override name = 'SettingsError';
}

export type Parser<T> = (raw: string, name: string) => T;

export interface SettingSpec<K extends keyof Settings> {
  key: K;
  env: string;
  flag?: string;
  default: string | undefined;
  parse: Parser<Settings[K]>;
  description: string;
  secret?: boolean;
}
