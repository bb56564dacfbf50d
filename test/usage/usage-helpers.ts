/**
 * Shared by the usage tests: a gateway with a store in front of the simulator, reached with the
 * admin token the way a script would, and readers for the request log it keeps.
 */
import { expect } from 'vitest';
import type { BuildAppInput } from '../../src/app.js';
import type { RequestView } from '../../src/http/admin/usage-handlers.js';
import type { Settings } from '../../src/settings/index.js';
import { startTestGateway, type TestGateway } from '../helpers/gateway.js';
import { json, rawRequest, type RawResponse } from '../helpers/http.js';

export const ADMIN_TOKEN = 'usage-tests-admin-token';

export function startUsageGateway(
  upstreamUrl: string,
  overrides: Partial<Settings> = {},
  extra: Partial<BuildAppInput> = {},
): Promise<TestGateway> {
  return startTestGateway(upstreamUrl, { adminToken: ADMIN_TOKEN, logLevel: 'warn', ...overrides }, extra, {
    withStore: true,
  });
}

/** An admin API call with the Bearer token (no browser headers needed). */
export function adminApi(gateway: TestGateway, method: string, path: string, body?: unknown): Promise<RawResponse> {
  const headers: Record<string, string> = { authorization: `Bearer ${ADMIN_TOKEN}` };
  if (body !== undefined) headers['content-type'] = 'application/json';
  return rawRequest(`${gateway.url}${path}`, {
    method,
    headers,
    body: body === undefined ? undefined : JSON.stringify(body),
  });
}

export async function createKey(
  gateway: TestGateway,
  body: Record<string, unknown>,
): Promise<{ id: string; name: string; secret: string }> {
  const res = await adminApi(gateway, 'POST', '/api/keys', body);
  expect(res.status, res.body.toString()).toBe(201);
  const parsed = json(res.body) as { key: { id: string; name: string }; secret: string };
  return { id: parsed.key.id, name: parsed.key.name, secret: parsed.secret };
}

export async function listRequests(
  gateway: TestGateway,
  query = '',
): Promise<{ requests: RequestView[]; nextCursor: string | null }> {
  const res = await adminApi(gateway, 'GET', `/api/usage/requests${query ? `?${query}` : ''}`);
  expect(res.status, res.body.toString()).toBe(200);
  return json(res.body) as { requests: RequestView[]; nextCursor: string | null };
}

/**
 * The record of the call with this request id, once written. The record is made when the
 * server side of the exchange closes, which can be a moment after the client saw the end; the
 * bound is for a record that never comes, not a pace (a loaded machine can take seconds).
 */
export async function recordFor(gateway: TestGateway, requestId: string, timeoutMs = 20_000): Promise<RequestView> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const matches = (await listRequests(gateway, 'limit=500')).requests.filter((r) => r.requestId === requestId);
    if (matches.length > 1) throw new Error(`call ${requestId} was recorded ${matches.length} times`);
    if (matches[0]) return matches[0];
    if (Date.now() > deadline) throw new Error(`no usage record for ${requestId} after ${timeoutMs} ms`);
    await new Promise((r) => setTimeout(r, 25));
  }
}

let serial = 0;
/** A fresh request id to send as `x-request-id` and find the call's record by. */
export function requestId(what: string): string {
  serial++;
  return `${what}-${process.pid}-${serial}`;
}
