/**
 * The one reader of `process.env`. Every setting is declared once in `SETTINGS` (env name,
 * CLI flag, default, parser); `loadSettings` validates them all and returns a frozen object.
 * `docs/configuration.md` is checked against this table by a test.
 */
import { readFileSync } from 'node:fs';
import { isIPv4 } from 'node:net';
import { isAbsolute, resolve } from 'node:path';
import {
  countCharacters,
  isTooLong,
  MAX_PASSWORD_LENGTH,
  MIN_PASSWORD_LENGTH,
  type ScryptCost,
} from './auth/passwords.js';
import { parseTrustedProxies } from './auth/proxy-trust.js';
import type { UpstreamKindSetting } from './management-client/open-upstream.js';

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

type Parser<T> = (raw: string, name: string) => T;

interface SettingSpec<K extends keyof Settings> {
  key: K;
  env: string;
  flag?: string;
  default: string | undefined;
  parse: Parser<Settings[K]>;
  description: string;
  secret?: boolean;
}

const DURATION_UNITS: Record<string, number> = { ms: 1, s: 1000, m: 60_000, h: 3_600_000, d: 86_400_000 };
const SIZE_UNITS: Record<string, number> = {
  b: 1,
  kb: 1000,
  kib: 1024,
  mb: 1000 ** 2,
  mib: 1024 ** 2,
  gb: 1000 ** 3,
  gib: 1024 ** 3,
};

/** `"30s"`, `"500ms"`, `"10m"`. A bare number is refused: units are never guessed. */
export const parseDuration: Parser<number> = (raw, name) => {
  const match = /^(\d+(?:\.\d+)?)\s*(ms|s|m|h|d)$/i.exec(raw.trim());
  if (!match)
    throw new SettingsError(`${name}: "${raw}" is not a duration; use a number with a unit, e.g. 500ms, 30s, 10m, 1h`);
  return Math.round(Number(match[1]) * DURATION_UNITS[match[2]!.toLowerCase()]!);
};

/** `"50MiB"`, `"1048576"` (bytes), `"10MB"`. */
export const parseSize: Parser<number> = (raw, name) => {
  const match = /^(\d+(?:\.\d+)?)\s*([a-z]*)$/i.exec(raw.trim());
  const unit = SIZE_UNITS[(match?.[2] || 'b').toLowerCase()];
  if (!match || unit === undefined)
    throw new SettingsError(`${name}: "${raw}" is not a size; use e.g. 50MiB, 10MB or a number of bytes`);
  return Math.floor(Number(match[1]) * unit);
};

export const parsePort: Parser<number> = (raw, name) => {
  const port = Number(raw);
  if (!Number.isInteger(port) || port < 0 || port > 65535)
    throw new SettingsError(`${name}: "${raw}" is not a TCP port (0-65535)`);
  return port;
};

const parseUrl: Parser<URL> = (raw, name) => {
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    throw new SettingsError(`${name}: "${raw}" is not a URL (expected e.g. http://127.0.0.1:8080)`);
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:')
    throw new SettingsError(`${name}: only http:// and https:// are supported`);
  return url;
};

const parseConnections: Parser<number> = (raw, name) => {
  const n = Number(raw);
  if (!Number.isSafeInteger(n) || n < 1) throw new SettingsError(`${name}: "${raw}" is not a positive whole number`);
  return n;
};
const parseCount: Parser<number> = (raw, name) => {
  const n = Number(raw);
  if (raw.trim() === '' || !Number.isSafeInteger(n) || n < 0)
    throw new SettingsError(`${name}: "${raw}" is not a whole number (0 or more)`);
  return n;
};
/** A duration, or `0` for off. */
const parseDurationOrOff: Parser<number> = (raw, name) => (raw.trim() === '0' ? 0 : parseDuration(raw, name));
const parseString: Parser<string> = (raw) => raw;
const parseOptional: Parser<string | undefined> = (raw) => (raw === '' ? undefined : raw);

/** `host:port`, `[v6]:port` or a port alone (then on 127.0.0.1); empty = off. */
const parseListen: Parser<{ host: string; port: number } | undefined> = (raw, name) => {
  const value = raw.trim();
  if (value === '') return undefined;
  if (/^\d+$/.test(value)) return { host: '127.0.0.1', port: parsePort(value, name) };
  const match = /^(?:\[([^\]]+)\]|([^:\s]+)):(\d+)$/.exec(value);
  if (!match) throw new SettingsError(`${name}: "${raw}" is not host:port or a port (e.g. 127.0.0.1:11434)`);
  return { host: match[1] ?? match[2]!, port: parsePort(match[3]!, name) };
};
const parseProxyList: Parser<readonly string[]> = (raw, name) => {
  const entries = raw
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean);
  try {
    parseTrustedProxies(entries);
  } catch (error) {
    throw new SettingsError(`${name}: ${(error as Error).message}`);
  }
  return Object.freeze(entries);
};
/** Never echoes the value: it is a secret. */
const parseAdminPassword: Parser<string | undefined> = (raw, name) => {
  if (raw === '') return undefined;
  if (isTooLong(raw)) throw new SettingsError(`${name}: must be at most ${MAX_PASSWORD_LENGTH} characters`);
  const length = countCharacters(raw);
  if (length < MIN_PASSWORD_LENGTH)
    throw new SettingsError(`${name}: must be at least ${MIN_PASSWORD_LENGTH} characters (it has ${length})`);
  return raw;
};
/** `N=32768,r=8,p=3`: scrypt's cost, block size and parallelism; N a power of two, at least 1024. */
const parseScryptCost: Parser<Readonly<ScryptCost>> = (raw, name) => {
  const match = /^N=(\d+),r=(\d+),p=(\d+)$/.exec(raw.replace(/\s+/g, ''));
  if (!match) throw new SettingsError(`${name}: "${raw}" is not N=<power of two>,r=<n>,p=<n>, e.g. N=32768,r=8,p=3`);
  const [N, r, p] = [Number(match[1]), Number(match[2]), Number(match[3])];
  if (!Number.isInteger(Math.log2(N))) throw new SettingsError(`${name}: N must be a power of two`);
  if (N < 1024) throw new SettingsError(`${name}: N must be at least 1024`);
  if (r < 1 || p < 1) throw new SettingsError(`${name}: r and p must be at least 1`);
  // scrypt needs 128 * N * r bytes per hash.
  if (128 * N * r > 2 ** 30) throw new SettingsError(`${name}: N and r ask for more than 1 GiB per hash`);
  return Object.freeze({ N, r, p });
};
/** Sessions never outlive 30 days (`auth/admin-sessions.ts`), so a longer idle TTL would be a lie. */
const parseSessionTtl: Parser<number> = (raw, name) => {
  const ms = parseDuration(raw, name);
  if (ms < 5 * 60_000 || ms > 30 * 86_400_000) throw new SettingsError(`${name}: "${raw}" must be between 5m and 30d`);
  return ms;
};
/** A file path or an http(s)/file URL; relative paths are made absolute in loadSettings. */
const parseSchemaSource: Parser<string | undefined> = (raw, name) => {
  if (raw.trim() === '') return undefined;
  if (/^[a-z][a-z0-9+.-]+:/i.test(raw)) {
    let url: URL;
    try {
      url = new URL(raw);
    } catch {
      throw new SettingsError(`${name}: "${raw}" is not a URL`);
    }
    if (!['http:', 'https:', 'file:'].includes(url.protocol))
      throw new SettingsError(`${name}: use a file path or an http(s):// (or file://) URL`);
  }
  return raw;
};
const parseBoolean: Parser<boolean> = (raw, name) => {
  const value = raw.trim().toLowerCase();
  if (value === 'true' || value === '1' || value === 'yes' || value === 'on') return true;
  if (value === 'false' || value === '0' || value === 'no' || value === 'off') return false;
  throw new SettingsError(`${name}: "${raw}" is not true or false`);
};
const parseRetention: Parser<number> = (raw, name) => {
  const ms = parseDuration(raw, name);
  if (ms < 3_600_000) throw new SettingsError(`${name}: "${raw}" must be at least 1h`);
  return ms;
};
const parseCaptureSize: Parser<number> = (raw, name) => {
  const bytes = parseSize(raw, name);
  if (bytes > 1024 * 1024)
    throw new SettingsError(`${name}: "${raw}" is over the 1MiB cap (every captured call is stored)`);
  return bytes;
};
/** Never echoes the value: the URL may carry a password. */
const parseDatabaseUrl: Parser<string | undefined> = (raw, name) => {
  if (raw.trim() === '') return undefined;
  let url: URL;
  try {
    url = new URL(raw.trim());
  } catch {
    throw new SettingsError(
      `${name}: not a URL; expected postgres://user:password@host:5432/database (percent-encode special characters in the password)`,
    );
  }
  if (url.protocol !== 'postgres:' && url.protocol !== 'postgresql:')
    throw new SettingsError(
      `${name}: only postgres:// and postgresql:// URLs are supported (got ${url.protocol}//...)`,
    );
  return raw.trim();
};
/** Interpolated into DDL and LISTEN channel names, so only a plain lowercase identifier. */
const parseDatabaseSchema: Parser<string | undefined> = (raw, name) => {
  if (raw.trim() === '') return undefined;
  if (!/^[a-z_][a-z0-9_]{0,39}$/.test(raw))
    throw new SettingsError(
      `${name}: "${raw}" must be lowercase letters, digits and _ (at most 40 characters, not starting with a digit)`,
    );
  return raw;
};
/**
 * The gateway's address as clients see it: http(s), host, optional port and an optional path
 * prefix (a reverse proxy that serves Gatehouse under /llm and strips it). No query, fragment
 * or credentials, and no trailing `/v1`: the Endpoints page adds `/v1` for OpenAI-style clients
 * itself, and a base that already has it would give `/v1/v1`. Trailing slashes are dropped.
 */
const parsePublicUrl: Parser<string | undefined> = (raw, name) => {
  const value = raw.trim();
  if (value === '') return undefined;
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    throw new SettingsError(
      `${name}: "${raw}" is not a URL; expected e.g. https://llm.example.com or http://192.168.1.5:3000`,
    );
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:')
    throw new SettingsError(`${name}: only http:// and https:// are supported`);
  if (url.username !== '' || url.password !== '')
    throw new SettingsError(`${name}: must not contain a user or password`);
  if (url.search !== '' || url.hash !== '' || /[?#]/.test(value))
    throw new SettingsError(`${name}: must not have a query or fragment`);
  const path = url.pathname.replace(/\/+$/, '');
  if (/\/v1$/i.test(path)) {
    throw new SettingsError(
      `${name}: "${raw}" ends in /v1; give the address without it (the Endpoints page adds /v1 for ` +
        `OpenAI-style clients)`,
    );
  }
  return `${url.origin}${path}`;
};
/** Never echoes the value: the URL may carry a password. */
const parseRedisUrl: Parser<string | undefined> = (raw, name) => {
  const value = raw.trim();
  if (value === '') return undefined;
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    throw new SettingsError(
      `${name}: not a URL; expected redis://[:password@]host:6379[/db] (percent-encode special characters in the password)`,
    );
  }
  if (url.protocol !== 'redis:' && url.protocol !== 'rediss:')
    throw new SettingsError(`${name}: only redis:// and rediss:// (TLS) URLs are supported (got ${url.protocol}//...)`);
  if (url.hostname === '') throw new SettingsError(`${name}: the URL has no host`);
  if (!/^\/?\d*$/.test(url.pathname))
    throw new SettingsError(`${name}: the path must be a database number (redis://host:6379/0)`);
  return value;
};
/** Keys are `<prefix>limits:{<key id>}:...`; printable ASCII without spaces keeps them readable in redis-cli. */
/** An IANA zone the runtime's time-zone data knows (budgets compute their periods with Intl). */
const parseTimeZone: Parser<string> = (raw, name) => {
  const zone = raw.trim();
  if (!knownTimeZone(zone))
    throw new SettingsError(`${name} must be an IANA time zone name such as UTC or Europe/Berlin, got "${raw}"`);
  return zone;
};

function knownTimeZone(zone: string): boolean {
  try {
    new Intl.DateTimeFormat('en-US', { timeZone: zone });
    return zone !== '';
  } catch {
    return false;
  }
}

const parseRedisPrefix: Parser<string> = (raw, name) => {
  if (!/^[\x21-\x7e]{0,64}$/.test(raw))
    throw new SettingsError(`${name}: "${raw}" must be at most 64 printable ASCII characters without spaces`);
  return raw;
};
/** `*`, or a comma-separated list of origins (`https://app.example.com`); normalised as browsers send them. */
const parseCorsOrigins: Parser<'*' | readonly string[]> = (raw, name) => {
  if (raw.trim() === '*') return '*';
  const origins: string[] = [];
  for (const entry of raw
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean)) {
    let url: URL | undefined;
    try {
      url = new URL(entry);
    } catch {
      url = undefined;
    }
    if (
      !url ||
      (url.protocol !== 'http:' && url.protocol !== 'https:') ||
      url.origin !== entry.replace(/\/+$/, '').toLowerCase()
    ) {
      throw new SettingsError(
        `${name}: "${entry}" is not an origin; use * or scheme://host[:port] without a path, e.g. https://app.example.com`,
      );
    }
    origins.push(url.origin);
  }
  return Object.freeze(origins);
};
/**
 * The issuer as OpenID Connect Discovery compares it (no trailing slash added or removed). Plain
 * http only on loopback: the client secret and the ID token cross this connection.
 */
const parseIssuer: Parser<URL | undefined> = (raw, name) => {
  const value = raw.trim();
  if (value === '') return undefined;
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    throw new SettingsError(`${name}: "${raw}" is not a URL; expected e.g. https://auth.example.com/realms/lab`);
  }
  if (url.protocol !== 'https:' && !(url.protocol === 'http:' && isLoopback(url.hostname)))
    throw new SettingsError(
      `${name}: use https:// (plain http:// only for a provider on this machine, e.g. 127.0.0.1)`,
    );
  if (url.username !== '' || url.password !== '' || url.search !== '' || url.hash !== '')
    throw new SettingsError(`${name}: must not contain a user, password, query or fragment`);
  return url;
};
function isLoopback(hostname: string): boolean {
  const host = hostname.replace(/^\[|\]$/g, '');
  return host === 'localhost' || host === '::1' || (isIPv4(host) && host.startsWith('127.'));
}
/** Space- or comma-separated; `openid` is what makes it OpenID Connect, so it must be there. */
const parseScopes: Parser<readonly string[]> = (raw, name) => {
  const scopes = [...new Set(raw.split(/[\s,]+/).filter(Boolean))];
  if (!scopes.includes('openid')) throw new SettingsError(`${name}: "${raw}" must include openid`);
  return Object.freeze(scopes);
};
/** A comma-separated list; entries are trimmed (group names may contain spaces). */
const parseValueList: Parser<readonly string[]> = (raw) =>
  Object.freeze(
    raw
      .split(',')
      .map((s) => s.trim())
      .filter(Boolean),
  );
const parseClaimName: Parser<string> = (raw, name) => {
  const value = raw.trim();
  if (value === '') throw new SettingsError(`${name}: must name a claim, e.g. groups`);
  return value;
};
const LOG_LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'] as const;
const UPSTREAM_KIND_VALUES: readonly UpstreamKindSetting[] = ['auto', 'llama-swap', 'llama-server'];

const parseUpstreamKind: Parser<UpstreamKindSetting> = (raw, name) => {
  const value = raw.trim();
  if ((UPSTREAM_KIND_VALUES as readonly string[]).includes(value)) return value as UpstreamKindSetting;
  throw new SettingsError(`${name}: "${raw}" is not one of ${UPSTREAM_KIND_VALUES.join(', ')}`);
};

const parseLogLevel: Parser<Settings['logLevel']> = (raw, name) => {
  const level = raw.toLowerCase() as Settings['logLevel'];
  if (!LOG_LEVELS.includes(level)) throw new SettingsError(`${name}: "${raw}" is not one of ${LOG_LEVELS.join(', ')}`);
  return level;
};

export const SETTINGS: ReadonlyArray<SettingSpec<keyof Settings>> = [
  {
    key: 'host',
    env: 'HOST',
    flag: '--host',
    default: '0.0.0.0',
    parse: parseString,
    description: 'Address the gateway listens on.',
  },
  {
    key: 'port',
    env: 'PORT',
    flag: '--port',
    default: '3000',
    parse: parsePort,
    description: 'TCP port the gateway listens on (0 picks a free one).',
  },
  {
    key: 'upstreamUrl',
    env: 'GATEHOUSE_UPSTREAM_URL',
    flag: '--upstream',
    default: 'http://127.0.0.1:8080',
    parse: parseUrl,
    description: "llama-swap's base URL.",
  },
  {
    key: 'upstreamKind',
    env: 'GATEHOUSE_UPSTREAM_KIND',
    default: 'auto',
    parse: parseUpstreamKind,
    description:
      'What serves the models: `llama-swap`, `llama-server` (llama.cpp in router mode), or `auto` to ask the ' +
      'upstream at start and keep asking until it answers.',
  },
  {
    key: 'upstreamApiKey',
    env: 'GATEHOUSE_UPSTREAM_API_KEY',
    default: undefined,
    parse: parseOptional,
    secret: true,
    description:
      'Sent to llama-swap as `Authorization: Bearer` when llama-swap has `apiKeys` set. Client credentials ' +
      'are never forwarded.',
  },
  {
    key: 'connectTimeoutMs',
    env: 'GATEHOUSE_CONNECT_TIMEOUT',
    default: '10s',
    parse: parseDuration,
    description: 'Time allowed to open a connection to llama-swap (then 504; a refused connection is 502 at once).',
  },
  {
    key: 'headersTimeoutMs',
    env: 'GATEHOUSE_HEADERS_TIMEOUT',
    default: '10m',
    parse: parseDuration,
    description:
      "Time allowed until llama-swap's response headers arrive (then 504). Large models take minutes to load.",
  },
  {
    key: 'idleTimeoutMs',
    env: 'GATEHOUSE_IDLE_TIMEOUT',
    default: '5m',
    parse: parseDuration,
    description: 'Longest silence allowed inside a streamed response body (then one terminal error event).',
  },
  {
    key: 'upstreamConnections',
    env: 'GATEHOUSE_UPSTREAM_CONNECTIONS',
    default: '1024',
    parse: parseConnections,
    description:
      'Most connections open to llama-swap at once. Every stream holds one for its whole life; calls ' +
      'beyond wait for a free one.',
  },
  {
    key: 'bodyTimeoutMs',
    env: 'GATEHOUSE_BODY_TIMEOUT',
    flag: '--body-timeout',
    default: '60s',
    parse: parseDuration,
    description:
      'Longest pause between two bytes of a request body; then 408. Bodies are received whole before ' +
      'anything is forwarded.',
  },
  {
    key: 'spoolMaxBytes',
    env: 'GATEHOUSE_SPOOL_MAX_BYTES',
    default: '1GiB',
    parse: parseSize,
    description:
      'Most bytes of request bodies spooled to disk at once, all calls together; a call that would pass it ' +
      'gets 503 `spool_full` with Retry-After (413 when its body alone is larger).',
  },
  {
    key: 'spoolMaxPerKey',
    env: 'GATEHOUSE_SPOOL_MAX_PER_KEY',
    default: '8',
    parse: parseCount,
    description:
      'Most request bodies one API key may have spooled to disk at once; one more gets 503 `spool_full`. ' +
      '0 = no per-key cap.',
  },
  {
    key: 'bodyLimitBytes',
    env: 'GATEHOUSE_BODY_LIMIT',
    flag: '--body-limit',
    default: '50MiB',
    parse: parseSize,
    description: 'Largest request body accepted (then 413), counted as it arrives.',
  },
  {
    key: 'maxInflight',
    env: 'GATEHOUSE_MAX_INFLIGHT',
    default: '0',
    parse: parseCount,
    description:
      'Calls forwarded to llama-swap at once, all models together; more wait their turn in the admission ' +
      'queue. 0 = no cap.',
  },
  {
    key: 'maxInflightPerModel',
    env: 'GATEHOUSE_MAX_INFLIGHT_PER_MODEL',
    default: '0',
    parse: parseCount,
    description: 'Calls forwarded at once per model (aliases count as their model); more wait. 0 = no cap.',
  },
  {
    key: 'swapFairnessMs',
    env: 'GATEHOUSE_SWAP_FAIRNESS',
    default: '30s',
    parse: parseDuration,
    description:
      'Waiting calls for the model llama-swap has loaded go before calls that would make it swap, until the ' +
      'oldest waiting call has waited this long; then it goes first.',
  },
  {
    key: 'queueTimeoutMs',
    env: 'GATEHOUSE_QUEUE_TIMEOUT',
    default: '10m',
    parse: parseDuration,
    description: 'Longest wait in the admission queue; then 503 `queue_timeout` (never sent to llama-swap).',
  },
  {
    key: 'queueMax',
    env: 'GATEHOUSE_QUEUE_MAX',
    default: '1000',
    parse: parseCount,
    description: 'Most calls waiting at once; one more gets 503 `queue_full` at once.',
  },
  {
    key: 'queueMaxPerKey',
    env: 'GATEHOUSE_QUEUE_MAX_PER_KEY',
    default: undefined,
    parse: parseCount,
    description:
      "Most calls of one API key waiting at once, so one key cannot fill the queue; one more of that key's gets " +
      '503 `queue_full` at once while other keys still queue. Unset: half of `GATEHOUSE_QUEUE_MAX` (at least 1); ' +
      '`0`: no share, only `GATEHOUSE_QUEUE_MAX`. Counted per replica.',
  },
  {
    key: 'sseKeepAliveMs',
    env: 'GATEHOUSE_SSE_KEEPALIVE',
    default: '10s',
    parse: parseDurationOrOff,
    description:
      'A streaming call still without an answer from llama-swap after this long (queued, or its model ' +
      'loading) gets 200 and an SSE comment line at once, then one per interval until the first byte. ' +
      '0 = off. See docs/queue.md.',
  },
  {
    key: 'ollamaListen',
    env: 'GATEHOUSE_OLLAMA_LISTEN',
    default: undefined,
    parse: parseListen,
    description:
      'Serve the Ollama API on a listener of its own: `host:port` or a port (on 127.0.0.1), e.g. ' +
      "`127.0.0.1:11434`, Ollama's own port. Unset: off. Calls go through the same keys, limits, budgets, " +
      'queue and usage as `/v1`. See docs/ollama.md.',
  },
  {
    key: 'ollamaKey',
    env: 'GATEHOUSE_OLLAMA_KEY',
    default: undefined,
    parse: parseOptional,
    description:
      'The name of a key that calls to the Ollama listener without a key act as (its models, limits, budget, ' +
      'priority and usage), for clients that cannot send headers (Home Assistant, Copilot). A wrong key is ' +
      'still refused. Unset: such calls get 401 once any key exists.',
  },
  {
    key: 'shutdownGraceMs',
    env: 'GATEHOUSE_SHUTDOWN_GRACE',
    default: '30s',
    parse: parseDuration,
    description: 'On SIGTERM/SIGINT, how long in-flight requests and streams may run before the process exits.',
  },
  {
    key: 'logLevel',
    env: 'GATEHOUSE_LOG_LEVEL',
    flag: '--log-level',
    default: 'info',
    parse: parseLogLevel,
    description: 'pino log level: fatal, error, warn, info, debug, trace, silent.',
  },
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

/** Settings names that point at a file holding the value (`X_FILE=/run/secrets/x`). */
export const FILE_INDIRECTIONS: Readonly<Record<string, string>> = {
  GATEHOUSE_ADMIN_PASSWORD: 'GATEHOUSE_ADMIN_PASSWORD_FILE',
  GATEHOUSE_DATABASE_URL: 'GATEHOUSE_DATABASE_URL_FILE',
  GATEHOUSE_REDIS_URL: 'GATEHOUSE_REDIS_URL_FILE',
  GATEHOUSE_OIDC_CLIENT_SECRET: 'GATEHOUSE_OIDC_CLIENT_SECRET_FILE',
};

export type FlagValues = Partial<Record<string, string>>;

/**
 * Builds settings from the environment and CLI flags (flags win). Throws `SettingsError`
 * listing every invalid value at once, so an operator fixes them in one go.
 */
export function loadSettings(
  env: NodeJS.ProcessEnv = process.env,
  flags: FlagValues = {},
  cwd = process.cwd(),
): Readonly<Settings> {
  const out: Partial<Record<keyof Settings, unknown>> = {};
  const problems: string[] = [];
  for (const spec of SETTINGS) {
    let raw: string | undefined = (spec.flag ? flags[spec.flag] : undefined) ?? env[spec.env];
    const fileVar = FILE_INDIRECTIONS[spec.env];
    if (fileVar && env[fileVar] && env[spec.env] !== undefined) {
      problems.push(`${spec.env} and ${fileVar} are both set; set one of them`);
      continue;
    }
    if (raw === undefined && fileVar && env[fileVar]) {
      try {
        raw = readFileSync(env[fileVar], 'utf8').replace(/\r?\n$/, '');
      } catch (error) {
        problems.push(`${fileVar}: cannot read ${env[fileVar]}: ${(error as Error).message}`);
        continue;
      }
    }
    raw ??= spec.default;
    if (raw === undefined) {
      out[spec.key] = undefined;
      continue;
    }
    try {
      out[spec.key] = spec.parse(raw, spec.flag ? `${spec.env} (${spec.flag})` : spec.env);
    } catch (error) {
      problems.push((error as Error).message);
    }
  }
  // A schema without a URL would silently mean SQLite: most likely the URL was forgotten.
  if (
    out.databaseSchema !== undefined &&
    out.databaseUrl === undefined &&
    !problems.some((p) => p.startsWith('GATEHOUSE_DATABASE_URL'))
  ) {
    problems.push(
      'GATEHOUSE_DATABASE_SCHEMA is set but GATEHOUSE_DATABASE_URL is not; the schema applies to PostgreSQL only',
    );
  }
  problems.push(...oidcProblems(out, problems));
  if (problems.length > 0) throw new SettingsError(`Invalid settings:\n  - ${problems.join('\n  - ')}`);
  const settings = out as Settings;
  settings.dataDir = isAbsolute(settings.dataDir) ? settings.dataDir : resolve(cwd, settings.dataDir);
  // INFERENCE_CONFIG_FILE stays as set: a relative value must reach the editor so it can say why it is off.
  const schema = settings.inferenceConfigSchema;
  if (schema !== undefined && !/^[a-z][a-z0-9+.-]+:/i.test(schema) && !isAbsolute(schema))
    settings.inferenceConfigSchema = resolve(cwd, schema);
  return Object.freeze(settings);
}

/** OpenID Connect needs its client ID and the public URL (the redirect URI is built from it). */
function oidcProblems(out: Partial<Record<keyof Settings, unknown>>, problems: readonly string[]): string[] {
  if (problems.some((p) => p.startsWith('GATEHOUSE_OIDC_'))) return [];
  const found: string[] = [];
  if (out.oidcIssuer === undefined) {
    for (const [key, env] of [
      ['oidcClientId', 'GATEHOUSE_OIDC_CLIENT_ID'],
      ['oidcClientSecret', 'GATEHOUSE_OIDC_CLIENT_SECRET'],
    ] as const) {
      if (out[key] !== undefined) found.push(`${env} is set but GATEHOUSE_OIDC_ISSUER is not`);
    }
    return found;
  }
  if (out.oidcClientId === undefined) found.push('GATEHOUSE_OIDC_ISSUER is set but GATEHOUSE_OIDC_CLIENT_ID is not');
  if (out.publicUrl === undefined && !problems.some((p) => p.startsWith('GATEHOUSE_PUBLIC_URL')))
    found.push(
      'GATEHOUSE_OIDC_ISSUER is set but GATEHOUSE_PUBLIC_URL is not; the redirect URI is ' +
        '<GATEHOUSE_PUBLIC_URL>/api/oidc/callback',
    );
  return found;
}

/** Test and embedding helper: defaults plus explicit overrides, without touching `process.env`. */
export function settingsFor(overrides: Partial<Settings> = {}, env: NodeJS.ProcessEnv = {}): Readonly<Settings> {
  return Object.freeze({ ...loadSettings(env), ...overrides });
}
