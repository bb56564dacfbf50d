/** The parsers the settings table shares: each reads one raw string or throws `SettingsError` naming the setting. */
import { isIPv4 } from 'node:net';
import {
  countCharacters,
  isTooLong,
  MAX_PASSWORD_LENGTH,
  MIN_PASSWORD_LENGTH,
  type ScryptCost,
} from '../auth/passwords.js';
import { parseTrustedProxies } from '../auth/proxy-trust.js';
import type { UpstreamKindSetting } from '../management-client/open-upstream.js';
import { SettingsError, type Parser, type Settings } from './types.js';

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

export const parseUrl: Parser<URL> = (raw, name) => {
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

export const parseConnections: Parser<number> = (raw, name) => {
  const n = Number(raw);
  if (!Number.isSafeInteger(n) || n < 1) throw new SettingsError(`${name}: "${raw}" is not a positive whole number`);
  return n;
};
export const parseCount: Parser<number> = (raw, name) => {
  const n = Number(raw);
  if (raw.trim() === '' || !Number.isSafeInteger(n) || n < 0)
    throw new SettingsError(`${name}: "${raw}" is not a whole number (0 or more)`);
  return n;
};
/** A duration, or `0` for off. */
export const parseDurationOrOff: Parser<number> = (raw, name) => (raw.trim() === '0' ? 0 : parseDuration(raw, name));
export const parseString: Parser<string> = (raw) => raw;
export const parseOptional: Parser<string | undefined> = (raw) => (raw === '' ? undefined : raw);

/** `host:port`, `[v6]:port` or a port alone (then on 127.0.0.1); empty = off. */
export const parseListen: Parser<{ host: string; port: number } | undefined> = (raw, name) => {
  const value = raw.trim();
  if (value === '') return undefined;
  if (/^\d+$/.test(value)) return { host: '127.0.0.1', port: parsePort(value, name) };
  const match = /^(?:\[([^\]]+)\]|([^:\s]+)):(\d+)$/.exec(value);
  if (!match) throw new SettingsError(`${name}: "${raw}" is not host:port or a port (e.g. 127.0.0.1:11434)`);
  return { host: match[1] ?? match[2]!, port: parsePort(match[3]!, name) };
};
export const parseProxyList: Parser<readonly string[]> = (raw, name) => {
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
export const parseAdminPassword: Parser<string | undefined> = (raw, name) => {
  if (raw === '') return undefined;
  if (isTooLong(raw)) throw new SettingsError(`${name}: must be at most ${MAX_PASSWORD_LENGTH} characters`);
  const length = countCharacters(raw);
  if (length < MIN_PASSWORD_LENGTH)
    throw new SettingsError(`${name}: must be at least ${MIN_PASSWORD_LENGTH} characters (it has ${length})`);
  return raw;
};
/** `N=32768,r=8,p=3`: scrypt's cost, block size and parallelism; N a power of two, at least 1024. */
export const parseScryptCost: Parser<Readonly<ScryptCost>> = (raw, name) => {
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
export const parseSessionTtl: Parser<number> = (raw, name) => {
  const ms = parseDuration(raw, name);
  if (ms < 5 * 60_000 || ms > 30 * 86_400_000) throw new SettingsError(`${name}: "${raw}" must be between 5m and 30d`);
  return ms;
};
/** A file path or an http(s)/file URL; relative paths are made absolute in loadSettings. */
export const parseSchemaSource: Parser<string | undefined> = (raw, name) => {
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
export const parseBoolean: Parser<boolean> = (raw, name) => {
  const value = raw.trim().toLowerCase();
  if (value === 'true' || value === '1' || value === 'yes' || value === 'on') return true;
  if (value === 'false' || value === '0' || value === 'no' || value === 'off') return false;
  throw new SettingsError(`${name}: "${raw}" is not true or false`);
};
export const parseRetention: Parser<number> = (raw, name) => {
  const ms = parseDuration(raw, name);
  if (ms < 3_600_000) throw new SettingsError(`${name}: "${raw}" must be at least 1h`);
  return ms;
};
export const parseCaptureSize: Parser<number> = (raw, name) => {
  const bytes = parseSize(raw, name);
  if (bytes > 1024 * 1024)
    throw new SettingsError(`${name}: "${raw}" is over the 1MiB cap (every captured call is stored)`);
  return bytes;
};
/** Never echoes the value: the URL may carry a password. */
export const parseDatabaseUrl: Parser<string | undefined> = (raw, name) => {
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
export const parseDatabaseSchema: Parser<string | undefined> = (raw, name) => {
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
export const parsePublicUrl: Parser<string | undefined> = (raw, name) => {
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
export const parseRedisUrl: Parser<string | undefined> = (raw, name) => {
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
export const parseTimeZone: Parser<string> = (raw, name) => {
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

export const parseRedisPrefix: Parser<string> = (raw, name) => {
  if (!/^[\x21-\x7e]{0,64}$/.test(raw))
    throw new SettingsError(`${name}: "${raw}" must be at most 64 printable ASCII characters without spaces`);
  return raw;
};
/** `*`, or a comma-separated list of origins (`https://app.example.com`); normalised as browsers send them. */
export const parseCorsOrigins: Parser<'*' | readonly string[]> = (raw, name) => {
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
export const parseIssuer: Parser<URL | undefined> = (raw, name) => {
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
export const parseScopes: Parser<readonly string[]> = (raw, name) => {
  const scopes = [...new Set(raw.split(/[\s,]+/).filter(Boolean))];
  if (!scopes.includes('openid')) throw new SettingsError(`${name}: "${raw}" must include openid`);
  return Object.freeze(scopes);
};
/** A comma-separated list; entries are trimmed (group names may contain spaces). */
export const parseValueList: Parser<readonly string[]> = (raw) =>
  Object.freeze(
    raw
      .split(',')
      .map((s) => s.trim())
      .filter(Boolean),
  );
export const parseClaimName: Parser<string> = (raw, name) => {
  const value = raw.trim();
  if (value === '') throw new SettingsError(`${name}: must name a claim, e.g. groups`);
  return value;
};
const LOG_LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'] as const;
const UPSTREAM_KIND_VALUES: readonly UpstreamKindSetting[] = ['auto', 'llama-swap', 'llama-server'];

export const parseUpstreamKind: Parser<UpstreamKindSetting> = (raw, name) => {
  const value = raw.trim();
  if ((UPSTREAM_KIND_VALUES as readonly string[]).includes(value)) return value as UpstreamKindSetting;
  throw new SettingsError(`${name}: "${raw}" is not one of ${UPSTREAM_KIND_VALUES.join(', ')}`);
};

export const parseLogLevel: Parser<Settings['logLevel']> = (raw, name) => {
  const level = raw.toLowerCase() as Settings['logLevel'];
  if (!LOG_LEVELS.includes(level)) throw new SettingsError(`${name}: "${raw}" is not one of ${LOG_LEVELS.join(', ')}`);
  return level;
};
