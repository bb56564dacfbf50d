import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { hashSessionToken } from '../../src/auth/admin-sessions.js';
import { startRecordingUpstream, type RecordingUpstream } from '../fakes/recording-upstream.js';
import type { TestGateway } from '../helpers/gateway.js';
import { json, rawRequest } from '../helpers/http.js';
import {
  api,
  completeSetup,
  errorCode,
  login,
  manualClock,
  PASSWORD,
  sessionSetCookie,
  sessionToken,
  startAdminGateway,
  type ManualClock,
} from '../helpers/admin.js';

const ADMIN_TOKEN = 'admin-token-for-scripts';
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

/** A set-up gateway (password = PASSWORD) on a manual clock. */
async function ready(
  overrides: Parameters<typeof startAdminGateway>[1] = {},
): Promise<{ gateway: TestGateway; clock: ManualClock }> {
  const clock = manualClock();
  const gateway = await startAdminGateway(upstream.url, { adminToken: ADMIN_TOKEN, ...overrides }, { now: clock.now });
  gateways.push(gateway);
  await completeSetup(gateway);
  return { gateway, clock };
}

const attempt = (gateway: TestGateway, password: string, headers: Record<string, string> = {}) =>
  api(gateway, 'POST', '/api/login', { body: { password }, headers: { origin: gateway.url, ...headers } });

describe('sign-in', () => {
  it('signs in with the right password: 200, a session cookie, and the admin API opens', async () => {
    const { gateway } = await ready();
    const res = await attempt(gateway, PASSWORD);
    expect(res.status).toBe(200);
    expect(json(res.body)).toEqual({ authenticated: true });
    const cookie = sessionToken(res);
    expect(await gateway.store!.sessions.findByTokenHash(hashSessionToken(cookie))).toBeDefined();
    expect((await api(gateway, 'GET', '/api/keys', { cookie })).status).toBe(200);
  });

  it('refuses a wrong password with 401 admin_unauthorized and no cookie', async () => {
    const { gateway } = await ready();
    const res = await attempt(gateway, 'not the password at all');
    expect(res.status).toBe(401);
    expect(json(res.body)).toEqual({ error: { code: 'admin_unauthorized', message: 'Wrong password.' } });
    expect(sessionSetCookie(res)).toBeUndefined();
  });

  it('refuses a body without a password with 422, and does not count it as a failure', async () => {
    const { gateway } = await ready();
    for (let i = 0; i < 6; i++) {
      const res = await api(gateway, 'POST', '/api/login', { body: { pass: PASSWORD } });
      expect(res.status).toBe(422);
      expect(json(res.body)).toMatchObject({
        error: { code: 'validation_failed', details: [{ path: '/password', message: 'is required (a string)' }] },
      });
    }
    await login(gateway);
  });

  it('answers the 6th attempt after 5 wrong passwords with 429 and Retry-After, even with the right password', async () => {
    const { gateway, clock } = await ready();
    for (let i = 0; i < 5; i++) {
      expect((await attempt(gateway, `wrong guess ${i}`)).status).toBe(401);
      clock.advance(1000);
    }
    const blocked = await attempt(gateway, PASSWORD);
    expect(blocked.status).toBe(429);
    // The first failure leaves the 15-minute window 900 - 5 = 895 s from now.
    expect(blocked.headers['retry-after']).toBe('895');
    expect(json(blocked.body)).toEqual({
      error: {
        code: 'rate_limited',
        message: 'Too many failed sign-in attempts from this address. Try again in 15 min.',
      },
    });
    expect(sessionSetCookie(blocked)).toBeUndefined();

    clock.advance(894_000);
    expect((await attempt(gateway, PASSWORD)).status).toBe(429);
    clock.advance(1000);
    expect((await attempt(gateway, PASSWORD)).status).toBe(200);
  });

  it('forgets the failures of an address after a successful sign-in', async () => {
    const { gateway } = await ready();
    for (let i = 0; i < 4; i++) expect((await attempt(gateway, 'wrong guess')).status).toBe(401);
    expect((await attempt(gateway, PASSWORD)).status).toBe(200);
    for (let i = 0; i < 5; i++) expect((await attempt(gateway, 'wrong guess')).status).toBe(401);
    expect((await attempt(gateway, 'wrong guess')).status).toBe(429);
  });

  it('counts parallel guesses before their answers arrive, so a burst cannot exceed the limit', async () => {
    const { gateway } = await ready();
    const results = await Promise.all(Array.from({ length: 8 }, (_, i) => attempt(gateway, `parallel guess ${i}`)));
    const statuses = results.map((r) => r.status).sort();
    expect(statuses).toEqual([401, 401, 401, 401, 401, 429, 429, 429]);
  });

  it('limits each client address separately behind a trusted proxy (first untrusted X-Forwarded-For hop)', async () => {
    const { gateway } = await ready({ trustedProxies: ['127.0.0.1', '10.0.0.0/8'] });
    const from = (chain: string) => ({ 'x-forwarded-for': chain });
    for (let i = 0; i < 5; i++)
      expect((await attempt(gateway, 'wrong', from('203.0.113.7, 10.1.2.3'))).status).toBe(401);
    expect((await attempt(gateway, 'wrong', from('203.0.113.7, 10.1.2.3'))).status).toBe(429);
    // A spoofed left-most entry does not make a new client: the proxy saw 203.0.113.7.
    expect((await attempt(gateway, 'wrong', from('198.51.100.1, 203.0.113.7, 10.9.9.9'))).status).toBe(429);
    // Another client behind the same proxy is not blocked.
    expect((await attempt(gateway, PASSWORD, from('203.0.113.8'))).status).toBe(200);
  });

  it('ignores X-Forwarded-For from a peer that is not a trusted proxy', async () => {
    const { gateway } = await ready();
    for (let i = 0; i < 5; i++)
      expect((await attempt(gateway, 'wrong', { 'x-forwarded-for': `198.51.100.${i}` })).status).toBe(401);
    expect((await attempt(gateway, PASSWORD, { 'x-forwarded-for': '198.51.100.200' })).status).toBe(429);
  });

  it('rate-limits wrong current passwords on the change-password route too', async () => {
    const { gateway } = await ready();
    const cookie = await login(gateway);
    const change = (currentPassword: string) =>
      api(gateway, 'POST', '/api/password', { cookie, body: { currentPassword, newPassword: 'a brand new password' } });
    for (let i = 0; i < 5; i++) {
      const res = await change('wrong current password');
      expect(res.status).toBe(401);
      expect(json(res.body)).toEqual({
        error: {
          code: 'admin_unauthorized',
          message: 'The current password is wrong.',
          details: [{ path: '/currentPassword', message: 'does not match' }],
        },
      });
    }
    expect((await change(PASSWORD)).status).toBe(429);
    // The session itself is still good: a wrong current password does not sign anyone out.
    expect((await api(gateway, 'GET', '/api/keys', { cookie })).status).toBe(200);
  });
});

describe('sign-in limits per account', () => {
  const BOB_PASSWORD = 'the password bob chose';
  /** A set-up gateway behind a trusted proxy (so tests pick client addresses) with a member, bob. */
  async function withBob(): Promise<{ gateway: TestGateway; clock: ManualClock }> {
    const ready_ = await ready({ trustedProxies: ['127.0.0.1'] });
    const res = await api(ready_.gateway, 'POST', '/api/users', {
      headers: { authorization: `Bearer ${ADMIN_TOKEN}`, 'content-type': 'application/json' },
      body: { name: 'bob', role: 'member', password: BOB_PASSWORD },
    });
    expect(res.status, res.body.toString()).toBe(201);
    return ready_;
  }
  const from = (address: string) => ({ 'x-forwarded-for': address });
  /** Wrong without running scrypt (over the length limit), so many guesses stay cheap; still a 401. */
  const guess = (n: number | string) => `wrong guess ${n} `.padEnd(1025, 'x');
  const named = (gateway: TestGateway, name: string, password: string, address = '203.0.113.1') =>
    api(gateway, 'POST', '/api/login', {
      body: { name, password },
      headers: { origin: gateway.url, ...from(address) },
    });

  it('keeps counting guesses at another account when the guesser signs in to their own in between', async () => {
    const { gateway } = await withBob();
    const statuses: number[] = [];
    for (let round = 0; round < 2; round++) {
      for (let i = 0; i < 4; i++) statuses.push((await named(gateway, 'bob', guess(`${round}.${i}`))).status);
      statuses.push((await named(gateway, 'admin', PASSWORD)).status);
    }
    expect(statuses).toEqual([401, 401, 401, 401, 200, 401, 429, 429, 429, 429]);
  });

  it('forgets only the signed-in account’s failures from that address', async () => {
    const { gateway } = await withBob();
    for (let i = 0; i < 2; i++) expect((await named(gateway, 'bob', guess(0))).status).toBe(401);
    for (let i = 0; i < 2; i++) expect((await named(gateway, 'admin', guess(0))).status).toBe(401);
    expect((await named(gateway, 'admin', PASSWORD)).status).toBe(200);
    // bob's two remain: three more failures fill the address's five.
    for (let i = 0; i < 3; i++) expect((await named(gateway, 'bob', guess(0))).status).toBe(401);
    expect((await named(gateway, 'admin', PASSWORD)).status).toBe(429);
  });

  it('refuses an account guessed at from 20 addresses after 10 failures, from any address, even with its password', async () => {
    const { gateway, clock } = await withBob();
    const statuses: number[] = [];
    for (let i = 0; i < 20; i++) {
      statuses.push((await named(gateway, 'bob', guess(i), `198.51.100.${i + 1}`)).status);
      clock.advance(1000);
    }
    expect(statuses).toEqual([...Array<number>(10).fill(401), ...Array<number>(10).fill(429)]);
    const owner = await named(gateway, 'bob', BOB_PASSWORD, '192.0.2.77');
    expect(owner.status).toBe(429);
    // The first failure leaves the 15-minute window 900 - 20 = 880 s from now.
    expect(owner.headers['retry-after']).toBe('880');
    expect(json(owner.body)).toEqual({
      error: {
        code: 'rate_limited',
        message: 'Too many failed sign-in attempts for this account. Try again in 15 min.',
      },
    });
    // Other accounts are not held up, and bob gets in once the window has passed.
    expect((await named(gateway, 'admin', PASSWORD, '192.0.2.77')).status).toBe(200);
    clock.advance(880_000);
    expect((await named(gateway, 'bob', BOB_PASSWORD, '192.0.2.77')).status).toBe(200);
  });

  it('counts and refuses an unknown name exactly as a known one, so the answer tells nothing', async () => {
    const { gateway, clock } = await withBob();
    for (let i = 0; i < 10; i++) {
      expect((await named(gateway, 'bob', guess(0), `198.51.100.${i + 1}`)).status).toBe(401);
      expect((await named(gateway, 'nobody-here', guess(0), `192.0.2.${i + 1}`)).status).toBe(401);
      clock.advance(1000);
    }
    const known = await named(gateway, 'bob', guess(0), '203.0.113.50');
    const unknown = await named(gateway, 'nobody-here', guess(0), '203.0.113.51');
    expect(known.status).toBe(429);
    const shape = (res: typeof known) => ({
      status: res.status,
      retryAfter: res.headers['retry-after'],
      contentType: res.headers['content-type'],
      body: res.body.toString(),
    });
    expect(shape(unknown)).toEqual(shape(known));
  });
});

describe('sign-out', () => {
  it('ends the session: 200, the cookie is cleared, and the old cookie no longer opens anything', async () => {
    const { gateway } = await ready();
    const cookie = await login(gateway);
    const res = await api(gateway, 'POST', '/api/logout', { cookie, body: {} });
    expect(res.status).toBe(200);
    expect(json(res.body)).toEqual({ authenticated: false });
    expect(sessionSetCookie(res)).toMatch(
      /^gatehouse_session=; Max-Age=0; Path=\/; Expires=Thu, 01 Jan 1970 00:00:00 GMT; HttpOnly; SameSite=Strict$/,
    );
    expect(await gateway.store!.sessions.findByTokenHash(hashSessionToken(cookie))).toBeUndefined();
    const after = await api(gateway, 'GET', '/api/keys', { cookie });
    expect(after.status).toBe(401);
    expect(errorCode(after)).toBe('admin_unauthorized');
  });

  it('signs out only the browser that asked', async () => {
    const { gateway } = await ready();
    const laptop = await login(gateway);
    const phone = await login(gateway);
    expect((await api(gateway, 'POST', '/api/logout', { cookie: laptop, body: {} })).status).toBe(200);
    expect((await api(gateway, 'GET', '/api/keys', { cookie: phone })).status).toBe(200);
  });

  it('needs a session: 401 without one', async () => {
    const { gateway } = await ready();
    expect((await api(gateway, 'POST', '/api/logout', { body: {} })).status).toBe(401);
  });
});

describe('who may open the admin API', () => {
  it('answers 401 admin_unauthorized without credentials, with a message naming both ways in', async () => {
    const { gateway } = await ready();
    const res = await api(gateway, 'GET', '/api/keys');
    expect(res.status).toBe(401);
    expect(json(res.body)).toEqual({
      error: {
        code: 'admin_unauthorized',
        message:
          'Admin authentication required. Sign in to the dashboard, or send Authorization: Bearer ' +
          '<GATEHOUSE_ADMIN_TOKEN>.',
      },
    });
  });

  it('accepts the admin Bearer token for scripts, and reports it as such', async () => {
    const { gateway } = await ready();
    const headers = { authorization: `Bearer ${ADMIN_TOKEN}` };
    expect((await api(gateway, 'GET', '/api/keys', { headers })).status).toBe(200);
    expect(json((await api(gateway, 'GET', '/api/session', { headers })).body)).toEqual({
      authenticated: true,
      setupRequired: false,
      via: 'token',
      user: null,
      role: 'admin',
      oidc: null,
    });
    const created = await api(gateway, 'POST', '/api/keys', { headers, body: { name: 'from a script' } });
    expect(created.status).toBe(201);
  });

  it('never lets a client API key in, whichever way it is sent', async () => {
    const { gateway } = await ready();
    const created = await api(gateway, 'POST', '/api/keys', {
      headers: { authorization: `Bearer ${ADMIN_TOKEN}` },
      body: { name: 'client' },
    });
    const { secret } = json(created.body) as { secret: string };
    for (const headers of [
      { authorization: `Bearer ${secret}` },
      { 'x-api-key': secret },
      { cookie: `gatehouse_session=${secret}` },
    ]) {
      const res = await rawRequest(`${gateway.url}/api/keys`, { headers });
      expect(res.status, JSON.stringify(Object.keys(headers))).toBe(401);
      expect(errorCode(res)).toBe('admin_unauthorized');
    }
    expect(
      json((await rawRequest(`${gateway.url}/api/session`, { headers: { authorization: `Bearer ${secret}` } })).body),
    ).toMatchObject({ authenticated: false, via: null });
  });

  it("lets a valid cookie through even next to an unrelated Authorization header (a proxy's Basic auth)", async () => {
    const { gateway } = await ready();
    const cookie = await login(gateway);
    const res = await api(gateway, 'GET', '/api/keys', { cookie, headers: { authorization: 'Basic dXNlcjpwYXNz' } });
    expect(res.status).toBe(200);
  });

  it('reports the session, and keeps its cookie, when a browser sends both a session and the token', async () => {
    const { gateway } = await ready();
    const cookie = await login(gateway);
    const res = await api(gateway, 'GET', '/api/session', {
      cookie,
      headers: { authorization: `Bearer ${ADMIN_TOKEN}` },
    });
    expect(json(res.body)).toEqual({
      authenticated: true,
      setupRequired: false,
      via: 'session',
      user: expect.objectContaining({ name: 'admin', role: 'admin', status: 'active' }),
      role: 'admin',
      oidc: null,
    });
    expect(sessionSetCookie(res)).toBeUndefined();
  });

  it('drops a dead cookie when the dashboard asks for the session state', async () => {
    const { gateway } = await ready();
    const res = await api(gateway, 'GET', '/api/session', { cookie: 'x'.repeat(43) });
    expect(json(res.body)).toEqual({
      authenticated: false,
      setupRequired: false,
      via: null,
      user: null,
      role: null,
      oidc: null,
    });
    expect(sessionSetCookie(res)).toMatch(/^gatehouse_session=; Max-Age=0;/);
  });

  it('keeps the admin API closed to tokens when GATEHOUSE_ADMIN_TOKEN is unset', async () => {
    const { gateway } = await ready({ adminToken: undefined });
    const res = await api(gateway, 'GET', '/api/keys', { headers: { authorization: 'Bearer anything' } });
    expect(res.status).toBe(401);
    expect(json(res.body)).toMatchObject({ error: { message: expect.stringContaining('set GATEHOUSE_ADMIN_TOKEN') } });
    await login(gateway);
  });
});
