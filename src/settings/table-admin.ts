/**
 * Settings of what the gateway keeps and who manages it: storage, admin access, usage, Redis,
 * sign-in, the config editor.
 */
import {
  parseDuration,
  parseString,
  parseOptional,
  parseProxyList,
  parseAdminPassword,
  parseScryptCost,
  parseSessionTtl,
  parseSchemaSource,
  parseBoolean,
  parseRetention,
  parseCaptureSize,
  parseDatabaseUrl,
  parseDatabaseSchema,
  parsePublicUrl,
  parseRedisUrl,
  parseTimeZone,
  parseRedisPrefix,
  parseCorsOrigins,
  parseIssuer,
  parseScopes,
  parseValueList,
  parseClaimName,
} from './parsers.js';
import type { Settings, SettingSpec } from './types.js';

export const ADMIN_SETTINGS: ReadonlyArray<SettingSpec<keyof Settings>> = [
  {
    key: 'dataDir',
    env: 'GATEHOUSE_DATA_DIR',
    flag: '--data-dir',
    default: './data',
    parse: parseString,
    description: 'Directory for the embedded SQLite store (created if missing).',
  },
  {
    key: 'databaseUrl',
    env: 'GATEHOUSE_DATABASE_URL',
    default: undefined,
    parse: parseDatabaseUrl,
    secret: true,
    description:
      'PostgreSQL connection URL (`postgres://user:password@host:5432/db`); set, keys, sessions and usage live there and several replicas can share them. Unset: the SQLite file in the data dir. Only host and database are ever logged. `GATEHOUSE_DATABASE_URL_FILE` reads it from a file instead.',
  },
  {
    key: 'databaseSchema',
    env: 'GATEHOUSE_DATABASE_SCHEMA',
    default: undefined,
    parse: parseDatabaseSchema,
    description:
      'PostgreSQL schema for the tables (created if missing), to share one database with other ' +
      'applications. Unset: `public`. Needs `GATEHOUSE_DATABASE_URL`.',
  },
  {
    key: 'adminToken',
    env: 'GATEHOUSE_ADMIN_TOKEN',
    default: undefined,
    parse: parseOptional,
    secret: true,
    description: 'Bearer token for scripts calling the admin API (`/api/*`). Unset: no token access.',
  },
  {
    key: 'adminPassword',
    env: 'GATEHOUSE_ADMIN_PASSWORD',
    default: undefined,
    parse: parseAdminPassword,
    secret: true,
    description:
      'Sets the dashboard admin password at start (at least 12 characters), for containers; no setup link ' +
      'is printed and the password cannot be changed from the dashboard. `GATEHOUSE_ADMIN_PASSWORD_FILE` ' +
      'reads it from a file instead.',
  },
  {
    key: 'passwordHashCost',
    env: 'GATEHOUSE_PASSWORD_HASH_COST',
    default: 'N=32768,r=8,p=3',
    parse: parseScryptCost,
    description:
      'scrypt parameters for new admin and user password hashes, `N=<power of two>,r=<n>,p=<n>` (N at least ' +
      '1024). Each stored hash keeps its own, so changing this never locks anyone out. Leave it in production; ' +
      'the test suite lowers it.',
  },
  {
    key: 'trustedProxies',
    env: 'GATEHOUSE_TRUSTED_PROXIES',
    default: '',
    parse: parseProxyList,
    description:
      'Comma-separated IP addresses/CIDRs of reverse proxies whose `X-Forwarded-For`, `-Proto` and `-Host` ' +
      'are believed (client address for the login rate limit, HTTPS for the `Secure` cookie, origin check, ' +
      'and the `X-Forwarded-Proto`/`-For` passed on to llama-swap). Unset: none.',
  },
  {
    key: 'corsOrigins',
    env: 'GATEHOUSE_CORS_ORIGINS',
    default: '*',
    parse: parseCorsOrigins,
    description:
      'Web origins whose pages may call `/v1` from a browser (CORS): `*` for any, or a comma-separated list of origins (`https://app.example.com,http://localhost:5173`). API keys are bearer tokens, not cookies, so `*` gives a page nothing without a key. `/api/*` never answers another origin.',
  },
  {
    key: 'readyTimeoutMs',
    env: 'GATEHOUSE_READY_TIMEOUT',
    default: '2s',
    parse: parseDuration,
    description: "How long `GET /readyz` waits for llama-swap's `/health` before answering 503.",
  },
  {
    key: 'sessionTtlMs',
    env: 'GATEHOUSE_SESSION_TTL',
    default: '7d',
    parse: parseSessionTtl,
    description:
      'A dashboard session ends after this long without a request (sliding; 5m to 30d). Whatever the ' +
      'activity, a session ends 30 days after sign-in.',
  },
  {
    key: 'usageRecording',
    env: 'GATEHOUSE_USAGE_RECORDING',
    default: 'true',
    parse: parseBoolean,
    description:
      'Record every /v1 call (time, key, model, tokens, latency...) in the request log. `false`: no record ' +
      'is written and responses are not tapped for tokens (metrics still count calls and latency; TPM ' +
      'limits cannot be enforced).',
  },
  {
    key: 'usageRetentionMs',
    env: 'GATEHOUSE_USAGE_RETENTION',
    default: '30d',
    parse: parseRetention,
    description: 'How long usage records are kept (pruned hourly, in small batches). At least 1h.',
  },
  {
    key: 'auditRetentionMs',
    env: 'GATEHOUSE_AUDIT_RETENTION',
    default: '365d',
    parse: parseRetention,
    description:
      'How long audit-log entries (who changed what in the admin API) are kept (pruned daily, in small ' +
      'batches). At least 1h.',
  },
  {
    key: 'usageCaptureBytes',
    env: 'GATEHOUSE_USAGE_CAPTURE_BYTES',
    default: '0',
    parse: parseCaptureSize,
    description:
      'Keep the first N bytes of every request and response body in the request log (JSON and text only), ' +
      'e.g. `16KiB`; at most `1MiB`. `0`: bodies are never stored.',
  },
  {
    key: 'metricsToken',
    env: 'GATEHOUSE_METRICS_TOKEN',
    default: undefined,
    parse: parseOptional,
    secret: true,
    description: '`GET /metrics` requires `Authorization: Bearer <token>` (else 401). Unset: /metrics is open.',
  },
  {
    key: 'publicUrl',
    env: 'GATEHOUSE_PUBLIC_URL',
    default: undefined,
    parse: parsePublicUrl,
    description:
      'The address clients reach Gatehouse at (e.g. `https://llm.example.com`, or with a path prefix a reverse proxy strips), shown on the Endpoints page. Unset: the address the browser used for the dashboard.',
  },
  {
    key: 'redisUrl',
    env: 'GATEHOUSE_REDIS_URL',
    default: undefined,
    parse: parseRedisUrl,
    secret: true,
    description:
      'Redis URL (`redis://:password@host:6379/0`, `rediss://` for TLS); set, per-key rpm/tpm/concurrency limits are counted in Redis and shared by every replica. Unset: each replica counts its own. Only host, port and database are ever logged. `GATEHOUSE_REDIS_URL_FILE` reads it from a file instead.',
  },
  {
    key: 'redisPrefix',
    env: 'GATEHOUSE_REDIS_PREFIX',
    default: 'gatehouse:',
    parse: parseRedisPrefix,
    description:
      'Prefix of every Redis key Gatehouse writes, to share one Redis with other applications or installations.',
  },
  {
    key: 'timeZone',
    env: 'GATEHOUSE_TIMEZONE',
    default: 'UTC',
    parse: parseTimeZone,
    description:
      'IANA time zone (`Europe/Berlin`) of the calendar periods of key budgets: a day starts at local ' +
      'midnight, a week on Monday, a month on the 1st; daylight saving time is followed.',
  },
  {
    key: 'oidcIssuer',
    env: 'GATEHOUSE_OIDC_ISSUER',
    default: undefined,
    parse: parseIssuer,
    description:
      "OpenID Connect sign-in: the provider's issuer URL (`https://auth.example.com/realms/lab`); its " +
      '`/.well-known/openid-configuration` is read at the first sign-in. Needs `GATEHOUSE_OIDC_CLIENT_ID` and ' +
      '`GATEHOUSE_PUBLIC_URL`. Unset: password sign-in only.',
  },
  {
    key: 'oidcClientId',
    env: 'GATEHOUSE_OIDC_CLIENT_ID',
    default: undefined,
    parse: parseOptional,
    description: 'The client ID registered at the provider for Gatehouse.',
  },
  {
    key: 'oidcClientSecret',
    env: 'GATEHOUSE_OIDC_CLIENT_SECRET',
    default: undefined,
    parse: parseOptional,
    secret: true,
    description:
      'The client secret registered at the provider; never logged or shown. `GATEHOUSE_OIDC_CLIENT_SECRET_FILE` ' +
      'reads it from a file instead. Unset: a public client (PKCE only).',
  },
  {
    key: 'oidcScopes',
    env: 'GATEHOUSE_OIDC_SCOPES',
    default: 'openid profile email',
    parse: parseScopes,
    description: 'Scopes asked for at sign-in, space-separated; must include `openid`.',
  },
  {
    key: 'oidcRoleClaim',
    env: 'GATEHOUSE_OIDC_ROLE_CLAIM',
    default: 'groups',
    parse: parseClaimName,
    description:
      "The claim (ID token or userinfo) listing the person's groups or roles; a dotted path reaches into an " +
      'object (`realm_access.roles`).',
  },
  {
    key: 'oidcAdminValues',
    env: 'GATEHOUSE_OIDC_ADMIN_VALUES',
    default: '',
    parse: parseValueList,
    description: 'Comma-separated values of the role claim that make a person an admin.',
  },
  {
    key: 'oidcMemberValues',
    env: 'GATEHOUSE_OIDC_MEMBER_VALUES',
    default: '',
    parse: parseValueList,
    description: 'Comma-separated values of the role claim that make a person a member.',
  },
  {
    key: 'oidcViewerValues',
    env: 'GATEHOUSE_OIDC_VIEWER_VALUES',
    default: '',
    parse: parseValueList,
    description:
      'Comma-separated values of the role claim that make a person a viewer. With any of the three lists set, ' +
      'the claim decides the role at every sign-in and a person in none of them is refused; with none set, ' +
      'admins set roles in Gatehouse.',
  },
  {
    key: 'oidcAutoCreate',
    env: 'GATEHOUSE_OIDC_AUTO_CREATE',
    default: 'false',
    parse: parseBoolean,
    description:
      'People the provider signs in but no admin added get a user at their first sign-in (a member, or the ' +
      'role their claim maps to). `false`: only users an admin added (matched by email at their first sign-in, ' +
      "then by the provider's subject) may sign in.",
  },
  {
    key: 'oidcName',
    env: 'GATEHOUSE_OIDC_NAME',
    default: undefined,
    parse: parseOptional,
    description: 'The provider\'s name on the sign-in page ("Sign in with <name>"). Unset: the issuer\'s host.',
  },
  {
    key: 'inferenceConfigFile',
    env: 'INFERENCE_CONFIG_FILE',
    default: undefined,
    parse: parseOptional,
    description:
      "Absolute path of llama-swap's config.yaml (its -config file), to edit it from the dashboard. Unset, " +
      'relative, missing or a directory: the config editor is off and says why. A symlink is followed; its ' +
      'target is written.',
  },
  {
    key: 'inferenceConfigSchema',
    env: 'INFERENCE_CONFIG_SCHEMA',
    default: undefined,
    parse: parseSchemaSource,
    description:
      "llama-swap's config-schema.json for the config editor: a file path or an http(s) URL. Unset: the " +
      "config file's `# yaml-language-server: $schema=` line, else llama-swap's published schema " +
      '(downloaded with a 10 s timeout, cached in the data dir for offline use).',
  },
];
