/**
 * OpenID Connect sign-in against a real OpenID Provider (oidc-provider on a loopback port):
 * who gets in and as what, and every way a sign-in that was tampered with, replayed or aged
 * is refused. The browser is a cookie jar posting the provider's own login form.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { SessionInfo } from '../../src/admin-api/types.js';
import { TRANSACTION_COOKIE } from '../../src/http/admin/oidc-handlers.js';
import type { Settings } from '../../src/settings/index.js';
import { startRecordingUpstream, type RecordingUpstream } from '../fakes/recording-upstream.js';
import { api, login, PASSWORD, sessionToken, startAdminGateway } from '../helpers/admin.js';
import type { TestGateway } from '../helpers/gateway.js';
import { json, rawRequest, type RawResponse } from '../helpers/http.js';
import { startTestProvider, type TestProvider } from '../helpers/oidc-provider.js';
import { browse, CookieJar, location, loginAtProvider } from '../helpers/oidc-sign-in.js';
import { freePort } from '../helpers/ports.js';

/** ID tokens live a minute; the gateway's clock is moved past that to see one expire. */
const ID_TOKEN_TTL_SECONDS = 60;

let upstream: RecordingUpstream;
let provider: TestProvider;
/** Gateways by name, each with its own OIDC settings; all registered at the one provider. */
const ports: Record<'invited' | 'mapped', number> = { invited: 0, mapped: 0 };
let clockOffsetMs = 0;
const now = () => Date.now() + clockOffsetMs;

beforeAll(async () => {
  upstream = await startRecordingUpstream();
  ports.invited = await freePort();
  ports.mapped = await freePort();
  provider = await startTestProvider({
    redirectUris: Object.values(ports).map((port) => `http://127.0.0.1:${port}/api/oidc/callback`),
    idTokenTtlSeconds: ID_TOKEN_TTL_SECONDS,
  });
});
afterAll(async () => {
  await provider?.close();
  await upstream?.close();
});

function startGateway(name: keyof typeof ports, overrides: Partial<Settings>): Promise<TestGateway> {
  return startAdminGateway(
    upstream.url,
    {
      adminPassword: PASSWORD,
      publicUrl: `http://127.0.0.1:${ports[name]}`,
      oidcIssuer: new URL(provider.issuer),
      oidcClientId: provider.clientId,
      oidcClientSecret: provider.clientSecret,
      oidcName: 'Test ID',
      ...overrides,
    },
    { now },
    { port: ports[name] },
  );
}

interface Started {
  jar: CookieJar;
  /** The provider's authorization URL the gateway sent the browser to. */
  authorizationUrl: string;
}

async function startSignIn(gateway: TestGateway, jar = new CookieJar()): Promise<Started> {
  const res = await browse(jar, `${gateway.url}/api/oidc/login`);
  expect(res.status).toBe(302);
  return { jar, authorizationUrl: location(res, gateway.url) };
}

/** The whole sign-in as `sub`; returns the gateway's answer to the callback. */
async function signInAs(gateway: TestGateway, sub: string): Promise<RawResponse> {
  const { jar, authorizationUrl } = await startSignIn(gateway);
  const callback = await loginAtProvider(jar, authorizationUrl, sub);
  return browse(jar, callback.href);
}

/** The sign-in page a refused callback sends the browser to, with its code. */
function refusal(gateway: TestGateway, res: RawResponse): string | null {
  const target = new URL(location(res, gateway.url));
  expect(target.origin + target.pathname).toBe(`${gateway.url}/sign-in`);
  const sessions = (res.headers['set-cookie'] ?? []).filter((c) => /^gatehouse_session=[^;]/.test(c));
  expect(sessions).toEqual([]);
  return target.searchParams.get('oidc_error');
}

async function sessionOf(gateway: TestGateway, res: RawResponse): Promise<SessionInfo> {
  expect(res.status, res.body.toString()).toBe(303);
  expect(location(res, gateway.url)).toBe(`${gateway.url}/`);
  const info = await api(gateway, 'GET', '/api/session', { cookie: sessionToken(res) });
  return json(info.body) as SessionInfo;
}

function lastRefusalReason(gateway: TestGateway): Record<string, unknown> {
  const line = gateway.logLines().findLast((l) => l.event === 'oidc_sign_in_refused');
  expect(line, 'a refusal was logged').toBeDefined();
  return line!;
}

describe('OpenID Connect sign-in with auto-create off (the default)', () => {
  let gateway: TestGateway;
  let admin: string;

  beforeAll(async () => {
    gateway = await startGateway('invited', {});
    admin = await login(gateway);
  });
  afterAll(async () => {
    await gateway?.close();
  });

  async function invite(name: string, email: string, role: 'admin' | 'member' | 'viewer' = 'member') {
    const res = await api(gateway, 'POST', '/api/users/invite', { cookie: admin, body: { name, email, role } });
    expect(res.status, res.body.toString()).toBe(201);
    return (json(res.body) as { user: { id: string } }).user;
  }

  it('tells the sign-in page the provider name', async () => {
    const info = json((await api(gateway, 'GET', '/api/session')).body) as SessionInfo;
    expect(info.oidc).toEqual({ name: 'Test ID' });
  });

  it('refuses a person no admin added, and makes no user', async () => {
    provider.setAccount('stranger', { email: 'stranger@example.com', email_verified: true, name: 'Stranger' });
    const before = await gateway.store!.users.count();
    expect(refusal(gateway, await signInAs(gateway, 'stranger'))).toBe('oidc_not_invited');
    expect(await gateway.store!.users.count()).toBe(before);
  });

  it("links an invited person by the provider's verified email at the first sign-in, then by subject", async () => {
    const invited = await invite('Ann', 'ann@example.com', 'member');
    provider.setAccount('ann-sub', { email: 'ANN@example.com', email_verified: true, name: 'Ann at the provider' });
    const first = await sessionOf(gateway, await signInAs(gateway, 'ann-sub'));
    expect(first.user).toMatchObject({ id: invited.id, name: 'Ann', role: 'member', signIn: 'oidc' });
    expect(first.role).toBe('member');
    // A changed email at the provider keeps the account: the link is the subject now.
    provider.setAccount('ann-sub', { email: 'ann.new@example.com', email_verified: true });
    expect((await sessionOf(gateway, await signInAs(gateway, 'ann-sub'))).user?.id).toBe(invited.id);
  });

  it('does not link an invited person whose invitation expired; a new link can be claimed again', async () => {
    // Invited eight days ago (the gateway's clock then), so the seven-day link is a day past its end.
    clockOffsetMs = -8 * 86_400_000;
    let late: { id: string };
    try {
      late = await invite('Lena', 'lena@example.com', 'admin');
    } finally {
      clockOffsetMs = 0;
    }
    provider.setAccount('lena-sub', { email: 'lena@example.com', email_verified: true, name: 'Lena' });
    expect(refusal(gateway, await signInAs(gateway, 'lena-sub'))).toBe('oidc_not_invited');
    expect(await gateway.store!.users.get(late.id)).toMatchObject({ role: 'admin', oidcSubject: null });

    const again = await api(gateway, 'POST', '/api/users/invite', { cookie: admin, body: { userId: late.id } });
    expect(again.status, again.body.toString()).toBe(200);
    const info = await sessionOf(gateway, await signInAs(gateway, 'lena-sub'));
    expect(info.user).toMatchObject({ id: late.id, name: 'Lena', signIn: 'oidc' });
  });

  it('does not hand an invitation to an unverified email', async () => {
    await invite('Bob', 'bob@example.com');
    provider.setAccount('bob-impostor', { email: 'bob@example.com', email_verified: false });
    expect(refusal(gateway, await signInAs(gateway, 'bob-impostor'))).toBe('oidc_not_invited');
  });

  it('refuses a disabled user, and their sessions are gone', async () => {
    const carol = await invite('Carol', 'carol@example.com');
    provider.setAccount('carol-sub', { email: 'carol@example.com', email_verified: true });
    const signedIn = await signInAs(gateway, 'carol-sub');
    const session = sessionToken(signedIn);
    const disabled = await api(gateway, 'PATCH', `/api/users/${carol.id}`, { cookie: admin, body: { disabled: true } });
    expect(disabled.status, disabled.body.toString()).toBe(200);
    expect((await api(gateway, 'GET', '/api/me', { cookie: session })).status).toBe(401);
    expect(refusal(gateway, await signInAs(gateway, 'carol-sub'))).toBe('user_disabled');
  });

  it('refuses a callback whose state was changed, before the code is spent', async () => {
    provider.setAccount('dan', { email: 'dan@example.com', email_verified: true });
    await invite('Dan', 'dan@example.com');
    const { jar, authorizationUrl } = await startSignIn(gateway);
    const callback = await loginAtProvider(jar, authorizationUrl, 'dan');
    const sealed = jar.get(gateway.url, TRANSACTION_COOKIE)!;
    const tampered = new URL(callback);
    tampered.searchParams.set('state', `${callback.searchParams.get('state')}x`);
    expect(refusal(gateway, await browse(jar, tampered.href))).toBe('oidc_failed');
    expect(lastRefusalReason(gateway).detail).toMatch(/"state"/);
    // The code was not spent: the untouched callback, with the transaction, still signs in.
    jar.set(gateway.url, TRANSACTION_COOKIE, sealed);
    expect((await sessionOf(gateway, await browse(jar, callback.href))).user?.name).toBe('Dan');
  });

  it('refuses a callback without the transaction cookie this browser got', async () => {
    const { jar, authorizationUrl } = await startSignIn(gateway);
    const callback = await loginAtProvider(jar, authorizationUrl, 'dan');
    const otherBrowser = new CookieJar();
    expect(refusal(gateway, await browse(otherBrowser, callback.href))).toBe('oidc_failed');
    expect(lastRefusalReason(gateway).reason).toBe('transaction cookie missing');
  });

  it('refuses a transaction cookie that was changed, or that outlived its ten minutes', async () => {
    const forged = await startSignIn(gateway);
    const forgedCallback = await loginAtProvider(forged.jar, forged.authorizationUrl, 'dan');
    const [body, mac] = forged.jar.get(gateway.url, TRANSACTION_COOKIE)!.split('.');
    const changed = JSON.parse(Buffer.from(body!, 'base64url').toString()) as Record<string, unknown>;
    changed.next = '/config';
    forged.jar.set(
      gateway.url,
      TRANSACTION_COOKIE,
      `${Buffer.from(JSON.stringify(changed)).toString('base64url')}.${mac}`,
    );
    expect(refusal(gateway, await browse(forged.jar, forgedCallback.href))).toBe('oidc_failed');
    expect(lastRefusalReason(gateway).reason).toBe('transaction cookie invalid');

    const slow = await startSignIn(gateway);
    const slowCallback = await loginAtProvider(slow.jar, slow.authorizationUrl, 'dan');
    clockOffsetMs = 10 * 60_000;
    try {
      expect(refusal(gateway, await browse(slow.jar, slowCallback.href))).toBe('oidc_failed');
    } finally {
      clockOffsetMs = 0;
    }
    expect(lastRefusalReason(gateway).reason).toBe('transaction cookie expired');
  });

  it('refuses a replayed code, even with the transaction cookie copied along', async () => {
    const { jar, authorizationUrl } = await startSignIn(gateway);
    const callback = await loginAtProvider(jar, authorizationUrl, 'dan');
    const sealed = jar.get(gateway.url, TRANSACTION_COOKIE)!;
    expect((await sessionOf(gateway, await browse(jar, callback.href))).user?.name).toBe('Dan');
    const attacker = new CookieJar();
    attacker.set(gateway.url, TRANSACTION_COOKIE, sealed);
    expect(refusal(gateway, await browse(attacker, callback.href))).toBe('oidc_failed');
    expect(lastRefusalReason(gateway).oauth_error).toBe('invalid_grant');
  });

  it('refuses an ID token that carries another nonce than this sign-in made', async () => {
    const { jar, authorizationUrl } = await startSignIn(gateway);
    const swapped = new URL(authorizationUrl);
    swapped.searchParams.set('nonce', 'a-nonce-this-gateway-never-made');
    const callback = await loginAtProvider(jar, swapped.href, 'dan');
    expect(refusal(gateway, await browse(jar, callback.href))).toBe('oidc_failed');
    expect(lastRefusalReason(gateway).detail).toMatch(/"nonce"/);
  });

  it('refuses an ID token that expired before the callback reached the gateway', async () => {
    const { jar, authorizationUrl } = await startSignIn(gateway);
    const callback = await loginAtProvider(jar, authorizationUrl, 'dan');
    // The provider issues the ID token during the callback, for ID_TOKEN_TTL_SECONDS from its own
    // clock; the gateway's clock says five minutes later (the transaction lives ten).
    clockOffsetMs = 5 * 60_000;
    try {
      expect(refusal(gateway, await browse(jar, callback.href))).toBe('oidc_failed');
    } finally {
      clockOffsetMs = 0;
    }
    expect(lastRefusalReason(gateway).detail).toMatch(/"exp"/);
  });

  it('never writes the client secret, the code or the tokens to the log', () => {
    const log = gateway.logText();
    expect(log).not.toContain(provider.clientSecret);
    expect(log).not.toMatch(/code=[A-Za-z0-9_-]{20,}/);
    expect(log).not.toMatch(/eyJ[A-Za-z0-9_-]{10,}\./);
  });
});

describe('OpenID Connect sign-in with roles from the groups claim and auto-create on', () => {
  let gateway: TestGateway;

  beforeAll(async () => {
    gateway = await startGateway('mapped', {
      oidcAutoCreate: true,
      oidcAdminValues: ['llm-admins'],
      oidcMemberValues: ['llm-users', 'staff'],
      oidcViewerValues: ['llm-viewers'],
    });
  });
  afterAll(async () => {
    await gateway?.close();
  });

  it("makes a user at the first sign-in, with the role the person's groups map to", async () => {
    provider.setAccount('erin', { email: 'erin@example.com', email_verified: true, name: 'Erin', groups: ['staff'] });
    const info = await sessionOf(gateway, await signInAs(gateway, 'erin'));
    expect(info.user).toMatchObject({ name: 'Erin', email: 'erin@example.com', role: 'member', signIn: 'oidc' });
  });

  it("makes a provider's look-alike of a taken name a name of its own, without invisible characters", async () => {
    provider.setAccount('mallory', { name: 'ＡＤＭＩＮ\u200b', groups: ['staff'] });
    const info = await sessionOf(gateway, await signInAs(gateway, 'mallory'));
    expect(info.user).toMatchObject({ name: 'ADMIN 2', role: 'member', signIn: 'oidc' });
    provider.setAccount('trudy', { name: 'Tru\u202edy', groups: ['staff'] });
    expect((await sessionOf(gateway, await signInAs(gateway, 'trudy'))).user?.name).toBe('Trudy');
  });

  it('gives the highest role matched, and applies a change at the provider at the next sign-in', async () => {
    provider.setAccount('finn', { name: 'Finn', groups: ['llm-viewers', 'llm-admins'] });
    expect((await sessionOf(gateway, await signInAs(gateway, 'finn'))).role).toBe('admin');
    provider.setAccount('finn', { name: 'Finn', groups: ['llm-viewers'] });
    const again = await sessionOf(gateway, await signInAs(gateway, 'finn'));
    expect(again.role).toBe('viewer');
    expect(again.user?.name).toBe('Finn');
  });

  it("binds an admin's keys by their allowance as soon as the provider makes them a member", async () => {
    provider.setAccount('ida', { name: 'Ida', groups: ['llm-admins'] });
    const asAdmin = await signInAs(gateway, 'ida');
    const ida = (await sessionOf(gateway, asAdmin)).user!;
    const made = await api(gateway, 'POST', '/api/keys', { cookie: sessionToken(asAdmin), body: { name: 'ida' } });
    expect(made.status, made.body.toString()).toBe(201);
    const secret = (json(made.body) as { secret: string }).secret;
    const admin = await login(gateway);
    const narrowed = await api(gateway, 'PATCH', `/api/users/${ida.id}`, {
      cookie: admin,
      body: { allowedModels: ['m1'] },
    });
    expect(narrowed.status, narrowed.body.toString()).toBe(200);
    const call = () =>
      rawRequest(`${gateway.url}/v1/chat/completions`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', authorization: `Bearer ${secret}` },
        body: JSON.stringify({ model: 'm2', messages: [{ role: 'user', content: 'hi' }] }),
      });
    // An admin's keys are bound by no allowance.
    expect((await call()).status).toBe(200);
    provider.setAccount('ida', { name: 'Ida', groups: ['staff'] });
    expect((await sessionOf(gateway, await signInAs(gateway, 'ida'))).role).toBe('member');
    const refused = await call();
    expect(refused.status, refused.body.toString()).toBe(403);
    expect((json(refused.body) as { error: { code: string } }).error.code).toBe('model_not_allowed');
  });

  it('refuses a person in none of the groups', async () => {
    provider.setAccount('gus', { name: 'Gus', groups: ['accounting'] });
    expect(refusal(gateway, await signInAs(gateway, 'gus'))).toBe('oidc_no_role');
    provider.setAccount('hal', { name: 'Hal' });
    expect(refusal(gateway, await signInAs(gateway, 'hal'))).toBe('oidc_no_role');
  });

  it('sends the browser back to the page it asked for', async () => {
    const jar = new CookieJar();
    const start = await browse(jar, `${gateway.url}/api/oidc/login?next=${encodeURIComponent('/usage?range=7d')}`);
    const callback = await loginAtProvider(jar, location(start, gateway.url), 'erin');
    const back = await browse(jar, callback.href);
    expect(location(back, gateway.url)).toBe(`${gateway.url}/usage?range=7d`);
  });

  it('says the provider is unavailable when its discovery document cannot be read', async () => {
    const port = await freePort();
    const offline = await startAdminGateway(
      upstream.url,
      {
        publicUrl: `http://127.0.0.1:${port}`,
        oidcIssuer: new URL(`http://127.0.0.1:${await freePort()}`),
        oidcClientId: 'gatehouse',
      },
      {},
      { port },
    );
    try {
      const res = await browse(new CookieJar(), `${offline.url}/api/oidc/login`);
      expect(refusal(offline, res)).toBe('oidc_unavailable');
    } finally {
      await offline.close();
    }
  });
});
