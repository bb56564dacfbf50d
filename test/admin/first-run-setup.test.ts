import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { SETUP_TOKEN_META_KEY } from '../../src/auth/admin-account.js';
import { startRecordingUpstream, type RecordingUpstream } from '../fakes/recording-upstream.js';
import type { TestGateway } from '../helpers/gateway.js';
import { json } from '../helpers/http.js';
import {
  api,
  completeSetup,
  login,
  PASSWORD,
  printedSetupToken,
  sessionSetCookie,
  sessionToken,
  startAdminGateway,
} from '../helpers/admin.js';

let upstream: RecordingUpstream;
const gateways: TestGateway[] = [];
const start = async (...args: Parameters<typeof startAdminGateway> extends [string, ...infer R] ? R : never) => {
  const gateway = await startAdminGateway(upstream.url, ...args);
  gateways.push(gateway);
  return gateway;
};

beforeAll(async () => {
  upstream = await startRecordingUpstream();
});
afterEach(async () => {
  await Promise.all(gateways.splice(0).map((g) => g.close()));
});
afterAll(async () => {
  await upstream.close();
});

describe('first run: the one-time setup link', () => {
  it('prints the setup link once, at warn level, with the listening address and a fragment token', async () => {
    const gateway = await start();
    const lines = gateway.logLines().filter((l) => String(l.msg).includes('/setup#token='));
    expect(lines).toHaveLength(1);
    expect(lines[0]).toMatchObject({ level: 40, admin: 'setup_required' });
    expect(String(lines[0]!.msg)).toContain(`${gateway.url}/setup#token=${printedSetupToken(gateway)}`);
    expect(printedSetupToken(gateway)).toMatch(/^[A-Za-z0-9_-]{43}$/);
  });

  it('reports setupRequired until the password is set, and nobody as signed in', async () => {
    const gateway = await start();
    const res = await api(gateway, 'GET', '/api/session');
    expect(res.status).toBe(200);
    expect(json(res.body)).toEqual({
      authenticated: false,
      setupRequired: true,
      via: null,
      user: null,
      role: null,
      oidc: null,
    });
  });

  it('sets the password with the printed token and signs the browser in', async () => {
    const gateway = await start();
    const res = await api(gateway, 'POST', '/api/setup', {
      body: { token: printedSetupToken(gateway), password: PASSWORD },
    });
    expect(res.status).toBe(200);
    expect(json(res.body)).toEqual({ authenticated: true });
    const cookie = sessionToken(res);
    expect(json((await api(gateway, 'GET', '/api/session', { cookie })).body)).toEqual({
      authenticated: true,
      setupRequired: false,
      via: 'session',
      user: expect.objectContaining({ name: 'admin', role: 'admin', status: 'active' }),
      role: 'admin',
      oidc: null,
    });
    expect((await api(gateway, 'GET', '/api/keys', { cookie })).status).toBe(200);
    expect(await gateway.store!.meta.get(SETUP_TOKEN_META_KEY)).toBeUndefined();
  });

  it('refuses a wrong token with 403 admin_forbidden and sets nothing', async () => {
    const gateway = await start();
    const res = await api(gateway, 'POST', '/api/setup', { body: { token: 'A'.repeat(43), password: PASSWORD } });
    expect(res.status).toBe(403);
    expect(json(res.body)).toEqual({
      error: {
        code: 'admin_forbidden',
        message: 'The setup token is not valid. Use the link the gateway printed in its log at its last start.',
      },
    });
    expect(sessionSetCookie(res)).toBeUndefined();
    expect(json((await api(gateway, 'GET', '/api/session')).body)).toMatchObject({ setupRequired: true });
    // The right token still works afterwards: a stranger's guess does not burn it.
    await completeSetup(gateway);
  });

  it('refuses a password shorter than 12 characters with 422, without using up the token', async () => {
    const gateway = await start();
    const token = printedSetupToken(gateway);
    const res = await api(gateway, 'POST', '/api/setup', { body: { token, password: 'short-pass1' } });
    expect(res.status).toBe(422);
    expect(json(res.body)).toEqual({
      error: {
        code: 'validation_failed',
        message: 'The new password must be at least 12 characters.',
        details: [{ path: '/password', message: 'must be at least 12 characters' }],
      },
    });
    const ok = await api(gateway, 'POST', '/api/setup', { body: { token, password: 'exactly-12ch' } });
    expect(ok.status).toBe(200);
  });

  it('accepts the token once: a second setup with it is refused and the first password stays', async () => {
    const gateway = await start();
    const token = printedSetupToken(gateway);
    await completeSetup(gateway);
    const again = await api(gateway, 'POST', '/api/setup', { body: { token, password: 'an attacker password' } });
    expect(again.status).toBe(409);
    expect(json(again.body)).toMatchObject({ error: { code: 'conflict' } });
    expect((await api(gateway, 'POST', '/api/login', { body: { password: 'an attacker password' } })).status).toBe(401);
    await login(gateway);
  });

  it('answers 409 conflict once a password exists without reading the body: malformed or 1 MB, the answer is the same', async () => {
    const gateway = await start();
    await completeSetup(gateway);
    const conflict = { error: { code: 'conflict', message: 'An admin password already exists: sign in instead.' } };
    for (const body of [{}, { token: 'x', password: 'x'.repeat(1024 * 1024) }]) {
      const res = await api(gateway, 'POST', '/api/setup', { body });
      expect(res.status).toBe(409);
      expect(json(res.body)).toEqual(conflict);
    }
  });

  it('answers the 6th setup attempt after 5 wrong tokens with 429 and Retry-After, even with the right token', async () => {
    const gateway = await start();
    for (let i = 0; i < 5; i++)
      expect(
        (await api(gateway, 'POST', '/api/setup', { body: { token: `wrong-token-${i}`, password: PASSWORD } })).status,
      ).toBe(403);
    const blocked = await api(gateway, 'POST', '/api/setup', {
      body: { token: printedSetupToken(gateway), password: PASSWORD },
    });
    expect(blocked.status).toBe(429);
    expect(Number(blocked.headers['retry-after'])).toBeGreaterThan(890);
    expect(json(blocked.body)).toEqual({
      error: {
        code: 'rate_limited',
        message: 'Too many failed setup attempts from this address. Try again in 15 min.',
      },
    });
    expect(json((await api(gateway, 'GET', '/api/session')).body)).toMatchObject({ setupRequired: true });
  });

  it('does not count a weak password or a malformed body against the setup limit', async () => {
    const gateway = await start();
    for (let i = 0; i < 6; i++)
      expect(
        (await api(gateway, 'POST', '/api/setup', { body: { token: `wrong-token-${i}`, password: 'short' } })).status,
      ).toBe(422);
    for (let i = 0; i < 6; i++) expect((await api(gateway, 'POST', '/api/setup', { body: {} })).status).toBe(422);
    await completeSetup(gateway);
  });

  it('lets exactly one of two simultaneous setups with the right token win', async () => {
    const gateway = await start();
    const token = printedSetupToken(gateway);
    const results = await Promise.all(
      ['first racer password', 'second racer password'].map((password) =>
        api(gateway, 'POST', '/api/setup', { body: { token, password } }),
      ),
    );
    const statuses = results.map((r) => r.status).sort();
    expect(statuses[0]).toBe(200);
    expect([403, 409]).toContain(statuses[1]);
    const winner = results.findIndex((r) => r.status === 200) === 0 ? 'first racer password' : 'second racer password';
    const loser = winner === 'first racer password' ? 'second racer password' : 'first racer password';
    await login(gateway, winner);
    expect((await api(gateway, 'POST', '/api/login', { body: { password: loser } })).status).toBe(401);
  });

  it('prints a new token at every start before setup, and the old one stops working', async () => {
    const first = await start();
    const oldToken = printedSetupToken(first);
    await first.close();
    const second = await start({}, {}, { dataDir: first.dataDir });
    const newToken = printedSetupToken(second);
    expect(newToken).not.toBe(oldToken);
    const stale = await api(second, 'POST', '/api/setup', { body: { token: oldToken, password: PASSWORD } });
    expect(stale.status).toBe(403);
    expect((await api(second, 'POST', '/api/setup', { body: { token: newToken, password: PASSWORD } })).status).toBe(
      200,
    );
  });

  it('prints no link once a password exists', async () => {
    const first = await start();
    await completeSetup(first);
    await first.close();
    const second = await start({}, {}, { dataDir: first.dataDir });
    expect(second.logText()).not.toContain('/setup#token=');
    expect(json((await api(second, 'GET', '/api/session')).body)).toEqual({
      authenticated: false,
      setupRequired: false,
      via: null,
      user: null,
      role: null,
      oidc: null,
    });
  });

  it('refuses login before setup with 401 that points at the setup link', async () => {
    const gateway = await start();
    const res = await api(gateway, 'POST', '/api/login', { body: { password: PASSWORD } });
    expect(res.status).toBe(401);
    expect(json(res.body)).toEqual({
      error: {
        code: 'admin_unauthorized',
        message: "No admin password is set yet: open the setup link printed in the gateway's log.",
      },
    });
  });
});

describe('GATEHOUSE_ADMIN_PASSWORD', () => {
  const fromSettings = 'password from the environment';

  it('sets the password at start: no setup link, no setup, sign-in works', async () => {
    const gateway = await start({ adminPassword: fromSettings });
    expect(gateway.logText()).not.toContain('/setup#token=');
    expect(json((await api(gateway, 'GET', '/api/session')).body)).toEqual({
      authenticated: false,
      setupRequired: false,
      via: null,
      user: null,
      role: null,
      oidc: null,
    });
    const setup = await api(gateway, 'POST', '/api/setup', { body: { token: 'A'.repeat(43), password: PASSWORD } });
    expect(setup.status).toBe(409);
    await login(gateway, fromSettings);
  });

  it('replaces a password set through the dashboard and signs out its sessions', async () => {
    const first = await start();
    const cookie = await completeSetup(first);
    await first.close();
    const second = await start({ adminPassword: fromSettings }, {}, { dataDir: first.dataDir });
    expect((await api(second, 'GET', '/api/keys', { cookie })).status).toBe(401);
    expect((await api(second, 'POST', '/api/login', { body: { password: PASSWORD } })).status).toBe(401);
    await login(second, fromSettings);
  });

  it('keeps sessions across restarts while the password stays the same', async () => {
    const first = await start({ adminPassword: fromSettings });
    const cookie = await login(first, fromSettings);
    await first.close();
    const second = await start({ adminPassword: fromSettings }, {}, { dataDir: first.dataDir });
    expect((await api(second, 'GET', '/api/keys', { cookie })).status).toBe(200);
  });

  it('cannot be changed from the dashboard: 409 naming the setting', async () => {
    const gateway = await start({ adminPassword: fromSettings });
    const cookie = await login(gateway, fromSettings);
    const res = await api(gateway, 'POST', '/api/password', {
      cookie,
      body: { currentPassword: fromSettings, newPassword: 'another long password' },
    });
    expect(res.status).toBe(409);
    expect(json(res.body)).toMatchObject({
      error: { code: 'conflict', message: expect.stringContaining('GATEHOUSE_ADMIN_PASSWORD') },
    });
    await login(gateway, fromSettings);
  });
});
