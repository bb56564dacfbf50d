import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { hashSessionToken } from '../../src/auth/admin-sessions.js';
import { startRecordingUpstream, type RecordingUpstream } from '../fakes/recording-upstream.js';
import type { TestGateway } from '../helpers/gateway.js';
import { json } from '../helpers/http.js';
import {
  api,
  completeSetup,
  DAY,
  login,
  manualClock,
  PASSWORD,
  sessionSetCookie,
  startAdminGateway,
  type ManualClock,
} from '../helpers/admin.js';

const ADMIN_TOKEN = 'admin-token-for-scripts';
const MINUTE = 60_000;
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

async function start(
  clock: ManualClock,
  overrides: Parameters<typeof startAdminGateway>[1] = {},
  dataDir?: string,
): Promise<TestGateway> {
  const gateway = await startAdminGateway(
    upstream.url,
    { adminToken: ADMIN_TOKEN, ...overrides },
    { now: clock.now },
    dataDir ? { dataDir } : {},
  );
  gateways.push(gateway);
  return gateway;
}

const keys = (gateway: TestGateway, cookie: string) => api(gateway, 'GET', '/api/keys', { cookie });

describe('sessions', () => {
  it('survive a restart of the gateway on the same data directory', async () => {
    const clock = manualClock();
    const first = await start(clock);
    const cookie = await completeSetup(first);
    await first.close();
    const second = await start(clock, {}, first.dataDir);
    expect((await keys(second, cookie)).status).toBe(200);
    expect(json((await api(second, 'GET', '/api/session', { cookie })).body)).toEqual({
      authenticated: true,
      setupRequired: false,
      via: 'session',
      user: expect.objectContaining({ name: 'admin', role: 'admin', status: 'active' }),
      role: 'admin',
      oidc: null,
    });
  });

  it('end after the idle TTL without requests, and the row is deleted', async () => {
    const clock = manualClock();
    const gateway = await start(clock);
    const cookie = await completeSetup(gateway);
    clock.advance(7 * DAY - MINUTE);
    expect((await keys(gateway, cookie)).status).toBe(200);
    clock.advance(7 * DAY);
    const res = await keys(gateway, cookie);
    expect(res.status).toBe(401);
    expect(await gateway.store!.sessions.findByTokenHash(hashSessionToken(cookie))).toBeUndefined();
  });

  it('slide with activity, recording it at most once a minute', async () => {
    const clock = manualClock();
    const gateway = await start(clock);
    const cookie = await completeSetup(gateway);
    const lastSeen = async () => (await gateway.store!.sessions.findByTokenHash(hashSessionToken(cookie)))?.lastSeenAt;
    const signedInAt = clock.now();
    clock.advance(30_000);
    expect((await keys(gateway, cookie)).status).toBe(200);
    expect(await lastSeen()).toBe(signedInAt);
    clock.advance(31_000);
    expect((await keys(gateway, cookie)).status).toBe(200);
    expect(await lastSeen()).toBe(clock.now());
    // Three idle gaps of 6 days each: well past one TTL in total, never past it at once.
    for (let i = 0; i < 3; i++) {
      clock.advance(6 * DAY);
      expect((await keys(gateway, cookie)).status).toBe(200);
    }
  });

  it('end 30 days after sign-in whatever the activity', async () => {
    const clock = manualClock();
    const gateway = await start(clock);
    const cookie = await completeSetup(gateway);
    for (let day = 1; day < 30; day++) {
      clock.advance(DAY);
      expect((await keys(gateway, cookie)).status, `day ${day}`).toBe(200);
    }
    clock.advance(DAY);
    expect((await keys(gateway, cookie)).status).toBe(401);
  });

  it('follow GATEHOUSE_SESSION_TTL', async () => {
    const clock = manualClock();
    const gateway = await start(clock, { sessionTtlMs: 10 * MINUTE });
    const cookie = await completeSetup(gateway);
    clock.advance(9 * MINUTE);
    expect((await keys(gateway, cookie)).status).toBe(200);
    clock.advance(10 * MINUTE);
    expect((await keys(gateway, cookie)).status).toBe(401);
  });

  it('are cleared out of the store when someone signs in', async () => {
    const clock = manualClock();
    const gateway = await start(clock);
    await completeSetup(gateway);
    await login(gateway);
    expect(await gateway.store!.sessions.count()).toBe(2);
    clock.advance(8 * DAY);
    await login(gateway);
    expect(await gateway.store!.sessions.count()).toBe(1);
  });
});

describe('changing the password', () => {
  const NEW_PASSWORD = 'a brand new password';

  it('keeps the session that changed it and signs out every other session', async () => {
    const clock = manualClock();
    const gateway = await start(clock);
    const here = await completeSetup(gateway);
    const elsewhere = await login(gateway);
    const res = await api(gateway, 'POST', '/api/password', {
      cookie: here,
      body: { currentPassword: PASSWORD, newPassword: NEW_PASSWORD },
    });
    expect(res.status).toBe(200);
    expect(json(res.body)).toEqual({});
    expect(sessionSetCookie(res)).toBeUndefined();
    expect((await keys(gateway, here)).status).toBe(200);
    expect((await keys(gateway, elsewhere)).status).toBe(401);
    expect(await gateway.store!.sessions.count()).toBe(1);
  });

  it('replaces the password: the old one is refused, the new one signs in', async () => {
    const clock = manualClock();
    const gateway = await start(clock);
    const here = await completeSetup(gateway);
    expect(
      (
        await api(gateway, 'POST', '/api/password', {
          cookie: here,
          body: { currentPassword: PASSWORD, newPassword: NEW_PASSWORD },
        })
      ).status,
    ).toBe(200);
    expect((await api(gateway, 'POST', '/api/login', { body: { password: PASSWORD } })).status).toBe(401);
    await login(gateway, NEW_PASSWORD);
  });

  it('refuses a weak new password with 422 and keeps the old one', async () => {
    const clock = manualClock();
    const gateway = await start(clock);
    const here = await completeSetup(gateway);
    const res = await api(gateway, 'POST', '/api/password', {
      cookie: here,
      body: { currentPassword: PASSWORD, newPassword: 'too short' },
    });
    expect(res.status).toBe(422);
    expect(json(res.body)).toEqual({
      error: {
        code: 'validation_failed',
        message: 'The new password must be at least 12 characters.',
        details: [{ path: '/newPassword', message: 'must be at least 12 characters' }],
      },
    });
    await login(gateway, PASSWORD);
  });

  it('signs out every session when a script changes it with the admin token', async () => {
    const clock = manualClock();
    const gateway = await start(clock);
    const browser = await completeSetup(gateway);
    const res = await api(gateway, 'POST', '/api/password', {
      headers: { authorization: `Bearer ${ADMIN_TOKEN}` },
      body: { currentPassword: PASSWORD, newPassword: NEW_PASSWORD },
    });
    expect(res.status).toBe(200);
    expect((await keys(gateway, browser)).status).toBe(401);
    expect(await gateway.store!.sessions.count()).toBe(0);
  });

  it('needs a session: 401 without one, and nothing changes', async () => {
    const clock = manualClock();
    const gateway = await start(clock);
    await completeSetup(gateway);
    const res = await api(gateway, 'POST', '/api/password', {
      body: { currentPassword: PASSWORD, newPassword: NEW_PASSWORD },
    });
    expect(res.status).toBe(401);
    await login(gateway, PASSWORD);
  });
});
