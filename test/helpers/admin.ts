/**
 * Talking to the admin API the way the dashboard does: JSON bodies, same-origin headers,
 * the session cookie. Every helper returns the raw response so tests assert exact statuses,
 * headers and bodies.
 */
import type { OutgoingHttpHeaders } from 'node:http';
import { expect } from 'vitest';
import type { Settings } from '../../src/settings/index.js';
import type { BuildAppInput } from '../../src/app.js';
import { startTestGateway, type TestGateway, type TestGatewayOptions } from './gateway.js';
import { json, rawRequest, type RawResponse } from './http.js';

export const PASSWORD = 'correct horse battery staple';
export const DAY = 86_400_000;

export interface ApiOptions {
  body?: unknown;
  /** Session token to send as the `gatehouse_session` cookie. */
  cookie?: string;
  /** Replaces the default same-origin browser headers (`Origin`, `Sec-Fetch-Site`) when given. */
  headers?: OutgoingHttpHeaders;
  /** Send the body as-is, without the JSON content type. */
  rawBody?: string;
}

/** A request as the dashboard sends it: same-origin, JSON, cookie when signed in. */
export function api(
  gateway: TestGateway,
  method: string,
  path: string,
  options: ApiOptions = {},
): Promise<RawResponse> {
  const headers: OutgoingHttpHeaders =
    options.headers ??
    (method === 'GET' ? { 'sec-fetch-site': 'same-origin' } : { origin: gateway.url, 'sec-fetch-site': 'same-origin' });
  if (options.body !== undefined && headers['content-type'] === undefined) headers['content-type'] = 'application/json';
  if (options.cookie !== undefined) headers.cookie = `gatehouse_session=${options.cookie}`;
  const body = options.rawBody ?? (options.body === undefined ? undefined : JSON.stringify(options.body));
  return rawRequest(`${gateway.url}${path}`, { method, headers, body });
}

/** The token of the last setup link the gateway printed. */
export function printedSetupToken(gateway: TestGateway): string {
  const match = [...gateway.logText().matchAll(/\/setup#token=([A-Za-z0-9_-]+)/g)].at(-1);
  if (!match) throw new Error(`no setup link in the log:\n${gateway.logText()}`);
  return match[1]!;
}

/** The `gatehouse_session` Set-Cookie line of a response, if any. */
export function sessionSetCookie(res: RawResponse): string | undefined {
  const lines = res.headers['set-cookie'] ?? [];
  return lines.find((l) => l.startsWith('gatehouse_session='));
}

/** The session token a response set (non-empty), or a failed expectation. */
export function sessionToken(res: RawResponse): string {
  const line = sessionSetCookie(res);
  const value = line ? /^gatehouse_session=([^;]*)/.exec(line)?.[1] : undefined;
  expect(value, `expected a session cookie, got ${JSON.stringify(res.headers['set-cookie'])}`).toMatch(
    /^[A-Za-z0-9_-]{43}$/,
  );
  return value!;
}

/** Signs in (as the first admin when `name` is absent); returns the session token. */
export async function login(gateway: TestGateway, password = PASSWORD, name?: string): Promise<string> {
  const res = await api(gateway, 'POST', '/api/login', {
    body: name === undefined ? { password } : { name, password },
  });
  expect(res.status, res.body.toString()).toBe(200);
  return sessionToken(res);
}

/** Completes first-run setup with the printed token; returns the session it opened. */
export async function completeSetup(gateway: TestGateway, password = PASSWORD): Promise<string> {
  const res = await api(gateway, 'POST', '/api/setup', { body: { token: printedSetupToken(gateway), password } });
  expect(res.status, res.body.toString()).toBe(200);
  return sessionToken(res);
}

export interface ManualClock {
  now: () => number;
  advance(ms: number): void;
}

export function manualClock(start = Date.UTC(2031, 0, 1)): ManualClock {
  let t = start;
  return { now: () => t, advance: (ms) => void (t += ms) };
}

/** A gateway with a store, on a fresh or given data dir. */
export function startAdminGateway(
  upstreamUrl: string,
  overrides: Partial<Settings> = {},
  extra: Partial<BuildAppInput> = {},
  options: Omit<TestGatewayOptions, 'withStore'> = {},
): Promise<TestGateway> {
  return startTestGateway(upstreamUrl, overrides, extra, { ...options, withStore: true });
}

export function errorCode(res: RawResponse): unknown {
  return (json(res.body) as { error?: { code?: unknown } }).error?.code;
}
