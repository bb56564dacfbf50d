import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { startRecordingUpstream, type RecordingUpstream } from '../fakes/recording-upstream.js';
import type { TestGateway } from '../helpers/gateway.js';
import { rawRequest } from '../helpers/http.js';
import { api, PASSWORD, sessionSetCookie, startAdminGateway } from '../helpers/admin.js';

let upstream: RecordingUpstream;
const gateways: TestGateway[] = [];

beforeAll(async () => {
  upstream = await startRecordingUpstream();
});
afterEach(async () => {
  await Promise.all(gateways.splice(0).map((g) => g.close()));
});
afterAll(async () => {
  await upstream.close();
});

async function start(trustedProxies: string[] = []): Promise<TestGateway> {
  const gateway = await startAdminGateway(upstream.url, { adminPassword: PASSWORD, trustedProxies });
  gateways.push(gateway);
  return gateway;
}

const signIn = (gateway: TestGateway, headers: Record<string, string> = {}) =>
  rawRequest(`${gateway.url}/api/login`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...headers },
    body: JSON.stringify({ password: PASSWORD }),
  });

/** `name=value; Attr; Attr=x` → attribute names (lowercase) to values. */
function attributes(line: string): Map<string, string> {
  const [, ...attrs] = line.split(';').map((p) => p.trim());
  return new Map(attrs.map((a) => [a.split('=')[0]!.toLowerCase(), a.split('=')[1] ?? '']));
}

describe('the gatehouse_session cookie', () => {
  it('is HttpOnly, SameSite=Strict, Path=/, lives 30 days, and is not Secure over plain HTTP', async () => {
    const gateway = await start();
    const line = sessionSetCookie(await signIn(gateway))!;
    expect(line).toMatch(/^gatehouse_session=[A-Za-z0-9_-]{43}; Max-Age=2592000; Path=\/; HttpOnly; SameSite=Strict$/);
    expect(attributes(line).has('secure')).toBe(false);
  });

  it('is Secure when a trusted proxy says the browser came over HTTPS', async () => {
    const gateway = await start(['127.0.0.1']);
    const line = sessionSetCookie(await signIn(gateway, { 'x-forwarded-proto': 'https' }))!;
    expect(attributes(line)).toEqual(
      new Map([
        ['max-age', '2592000'],
        ['path', '/'],
        ['httponly', ''],
        ['samesite', 'Strict'],
        ['secure', ''],
      ]),
    );
  });

  it('is not Secure when a trusted proxy says HTTP', async () => {
    const gateway = await start(['127.0.0.0/8']);
    const line = sessionSetCookie(await signIn(gateway, { 'x-forwarded-proto': 'http' }))!;
    expect(attributes(line).has('secure')).toBe(false);
  });

  it('is not Secure when an untrusted peer claims X-Forwarded-Proto: https', async () => {
    const gateway = await start(['10.0.0.0/8']);
    const line = sessionSetCookie(await signIn(gateway, { 'x-forwarded-proto': 'https' }))!;
    expect(attributes(line).has('secure')).toBe(false);
  });

  it('is cleared at sign-out with the same attributes, Secure included behind an HTTPS proxy', async () => {
    const gateway = await start(['127.0.0.1']);
    const token = /^gatehouse_session=([^;]+)/.exec(
      sessionSetCookie(await signIn(gateway, { 'x-forwarded-proto': 'https' }))!,
    )![1]!;
    const res = await api(gateway, 'POST', '/api/logout', {
      cookie: token,
      body: {},
      headers: { 'x-forwarded-proto': 'https' },
    });
    expect(res.status).toBe(200);
    expect(sessionSetCookie(res)).toBe(
      'gatehouse_session=; Max-Age=0; Path=/; Expires=Thu, 01 Jan 1970 00:00:00 GMT; HttpOnly; Secure; SameSite=Strict',
    );
  });
});
