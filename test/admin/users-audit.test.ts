/**
 * User management in the audit log, through the real gateway (route table, admin chain, real
 * SQLite store) and a real OpenID Provider: creating, inviting and re-inviting, accepting an
 * invitation (by password or by an OIDC sign-in), OIDC auto-create, role changes, disabling and
 * enabling, allowed models and maximum budgets each leave one exact entry naming the actor, the
 * user and what changed from → to; no entry holds a password, a hash or an invitation token.
 */
import BetterSqlite3 from 'better-sqlite3';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { AuditEntry, AuditPage } from '../../src/admin-api/types.js';
import { sqliteFileIn } from '../../src/store/sqlite.js';
import { startRecordingUpstream, type RecordingUpstream } from '../fakes/recording-upstream.js';
import { api, errorCode, login, PASSWORD, sessionToken, startAdminGateway } from '../helpers/admin.js';
import type { TestGateway } from '../helpers/gateway.js';
import { json, type RawResponse } from '../helpers/http.js';
import { startTestProvider, type TestProvider } from '../helpers/oidc-provider.js';
import { browse, CookieJar, location, loginAtProvider } from '../helpers/oidc-sign-in.js';
import { freePort } from '../helpers/ports.js';

const ADMIN_TOKEN = 'users-audit-admin-token-0123456789';
const PAT_PASSWORD = 'pat picked a long passphrase';
const PAT_NEW_PASSWORD = 'pat picked another long passphrase';
const ANN_PASSWORD = 'ann chose this passphrase herself';

let upstream: RecordingUpstream;
let provider: TestProvider;
let gateway: TestGateway;
let admin = '';
/** Every secret the actions below handle; none may reach the audit log. */
const secrets: string[] = [PASSWORD, ADMIN_TOKEN, PAT_PASSWORD, PAT_NEW_PASSWORD, ANN_PASSWORD];
const ids: Record<string, string> = {};

beforeAll(async () => {
  upstream = await startRecordingUpstream();
  const port = await freePort();
  provider = await startTestProvider({ redirectUris: [`http://127.0.0.1:${port}/api/oidc/callback`] });
  secrets.push(provider.clientSecret);
  gateway = await startAdminGateway(
    upstream.url,
    {
      adminPassword: PASSWORD,
      adminToken: ADMIN_TOKEN,
      publicUrl: `http://127.0.0.1:${port}`,
      oidcIssuer: new URL(provider.issuer),
      oidcClientId: provider.clientId,
      oidcClientSecret: provider.clientSecret,
      oidcAutoCreate: true,
      oidcAdminValues: ['llm-admins'],
      oidcMemberValues: ['staff'],
      oidcViewerValues: ['llm-viewers'],
    },
    {},
    { port },
  );
  admin = await login(gateway);
  secrets.push(admin);
  ids.admin = (await gateway.store!.users.findByName('admin'))!.id;
}, 60_000);

afterAll(async () => {
  await gateway?.close();
  await provider?.close();
  await upstream?.close();
});

type Entry = Omit<AuditEntry, 'id' | 'at'>;

async function auditPage(): Promise<AuditPage> {
  const res = await api(gateway, 'GET', '/api/audit?limit=500', {
    headers: { authorization: `Bearer ${ADMIN_TOKEN}` },
  });
  expect(res.status, res.body.toString()).toBe(200);
  return json(res.body) as AuditPage;
}

async function entryCount(): Promise<number> {
  return (await auditPage()).entries.length;
}

/** The entries written since `count` entries existed, oldest first, without their id and time. */
async function entriesSince(count: number): Promise<Entry[]> {
  const { entries } = await auditPage();
  return entries
    .slice(0, entries.length - count)
    .reverse()
    .map(({ id: _id, at: _at, ...rest }) => rest);
}

function expectStatus(res: RawResponse, status: number): void {
  expect(res.status, res.body.toString()).toBe(status);
}

const asAdmin = (method: string, path: string, body?: unknown) =>
  api(gateway, method, path, { cookie: admin, ...(body === undefined ? {} : { body }) });

const browser = { kind: 'session', id: null, name: null } as const;
const user = (name: string) => ({ kind: 'user', id: ids[name]!, name }) as const;
const target = (name: string) => ({ kind: 'user', id: ids[name]!, name, version: null }) as const;
const entry = (fields: Partial<Entry> & Pick<Entry, 'action'>): Entry => ({
  actor: user('admin'),
  client: '127.0.0.1',
  target: null,
  outcome: 'success',
  reason: null,
  changes: null,
  ...fields,
});

/** The invitation token of a link, kept as a secret to look for. */
function keepInvite(res: RawResponse): string {
  const url = (json(res.body) as { invite: { url: string } }).invite.url;
  const token = /#token=([A-Za-z0-9_-]{43})$/.exec(url)![1]!;
  secrets.push(url, token);
  return token;
}

async function signInWithProvider(sub: string): Promise<RawResponse> {
  const jar = new CookieJar();
  const start = await browse(jar, `${gateway.url}/api/oidc/login`);
  const callback = await loginAtProvider(jar, location(start, gateway.url), sub);
  const res = await browse(jar, callback.href);
  expect(res.status, res.body.toString()).toBe(303);
  secrets.push(sessionToken(res));
  return res;
}

describe('the audit entry of every user action', () => {
  let annToken = '';

  it('records creating a user, inviting one, a new link, and the refused duplicate and link', async () => {
    const before = await entryCount();
    const pat = await asAdmin('POST', '/api/users', {
      name: 'Pat',
      role: 'member',
      password: PAT_PASSWORD,
      allowedModels: ['qwen'],
      maxBudget: { tokens: 1000, period: 'day' },
    });
    expectStatus(pat, 201);
    ids.Pat = (json(pat.body) as { user: { id: string } }).user.id;
    const ann = await asAdmin('POST', '/api/users/invite', { name: 'Ann', email: 'ann@example.com', role: 'viewer' });
    expectStatus(ann, 201);
    ids.Ann = (json(ann.body) as { user: { id: string } }).user.id;
    keepInvite(ann);
    expectStatus(await asAdmin('POST', '/api/users', { name: 'Pat', role: 'viewer' }), 409);
    const again = await asAdmin('POST', '/api/users/invite', { userId: ids.Ann });
    expectStatus(again, 200);
    annToken = keepInvite(again);
    expectStatus(await asAdmin('POST', '/api/users/invite', { userId: ids.Pat }), 409);

    expect(await entriesSince(before)).toEqual([
      entry({
        action: 'user.create',
        target: target('Pat'),
        changes: {
          name: { from: null, to: 'Pat' },
          role: { from: null, to: 'member' },
          status: { from: null, to: 'active' },
          signIn: { from: null, to: 'password' },
          allowedModels: { from: [], to: ['qwen'] },
          maxBudget: { from: null, to: { tokens: 1000, requests: null, gpuSeconds: null, period: 'day' } },
        },
      }),
      entry({
        action: 'user.invite',
        target: target('Ann'),
        changes: {
          name: { from: null, to: 'Ann' },
          email: { from: null, to: 'ann@example.com' },
          role: { from: null, to: 'viewer' },
          status: { from: null, to: 'invited' },
          signIn: { from: null, to: 'password' },
        },
      }),
      entry({ action: 'user.create', outcome: 'failure', reason: 'conflict' }),
      entry({ action: 'user.reinvite', target: target('Ann') }),
      entry({ action: 'user.reinvite', target: target('Pat'), outcome: 'failure', reason: 'conflict' }),
    ]);
  });

  it('records accepting an invitation as the invited person, and a used link refused', async () => {
    const before = await entryCount();
    const accepted = await api(gateway, 'POST', '/api/invite/accept', {
      body: { token: annToken, password: ANN_PASSWORD },
    });
    expectStatus(accepted, 200);
    secrets.push(sessionToken(accepted));
    const used = await api(gateway, 'POST', '/api/invite/accept', {
      body: { token: annToken, password: ANN_PASSWORD },
    });
    expectStatus(used, 403);

    expect(await entriesSince(before)).toEqual([
      entry({
        action: 'user.invite_accept',
        actor: user('Ann'),
        target: target('Ann'),
        changes: { status: { from: 'invited', to: 'active' } },
      }),
      entry({ action: 'user.invite_accept', actor: browser, outcome: 'failure', reason: 'admin_forbidden' }),
    ]);
  });

  it('records role changes, disabling, enabling, models and budget from → to, and refusals', async () => {
    const before = await entryCount();
    expectStatus(await asAdmin('PATCH', `/api/users/${ids.Pat}`, { role: 'admin' }), 200);
    expectStatus(await asAdmin('PATCH', `/api/users/${ids.Pat}`, { role: 'member' }), 200);
    expectStatus(
      await asAdmin('PATCH', `/api/users/${ids.Ann}`, {
        role: 'member',
        allowedModels: ['qwen', 'llama'],
        maxBudget: { requests: 50 },
      }),
      200,
    );
    expectStatus(await asAdmin('PATCH', `/api/users/${ids.Pat}`, { maxBudget: null, allowedModels: [] }), 200);
    expectStatus(await asAdmin('PATCH', `/api/users/${ids.Ann}`, { disabled: true }), 200);
    expectStatus(await asAdmin('PATCH', `/api/users/${ids.Ann}`, { disabled: false }), 200);
    expectStatus(await asAdmin('PATCH', `/api/users/${ids.admin}`, { disabled: true }), 409);
    expectStatus(await asAdmin('PATCH', '/api/users/usr_nobodyhere00', { role: 'admin' }), 404);

    expect(await entriesSince(before)).toEqual([
      entry({ action: 'user.role_change', target: target('Pat'), changes: { role: { from: 'member', to: 'admin' } } }),
      entry({ action: 'user.role_change', target: target('Pat'), changes: { role: { from: 'admin', to: 'member' } } }),
      entry({
        action: 'user.role_change',
        target: target('Ann'),
        changes: {
          role: { from: 'viewer', to: 'member' },
          allowedModels: { from: [], to: ['qwen', 'llama'] },
          maxBudget: { from: null, to: { tokens: null, requests: 50, gpuSeconds: null, period: 'day' } },
        },
      }),
      entry({
        action: 'user.update',
        target: target('Pat'),
        changes: {
          allowedModels: { from: ['qwen'], to: [] },
          maxBudget: { from: { tokens: 1000, requests: null, gpuSeconds: null, period: 'day' }, to: null },
        },
      }),
      entry({ action: 'user.disable', target: target('Ann'), changes: { status: { from: 'active', to: 'disabled' } } }),
      entry({ action: 'user.enable', target: target('Ann'), changes: { status: { from: 'disabled', to: 'active' } } }),
      entry({ action: 'user.disable', target: target('admin'), outcome: 'failure', reason: 'conflict' }),
      entry({ action: 'user.role_change', outcome: 'failure', reason: 'not_found' }),
    ]);
  });

  it('names the user whose password changed, never the password', async () => {
    const before = await entryCount();
    const pat = await login(gateway, PAT_PASSWORD, 'Pat');
    secrets.push(pat);
    const changed = await api(gateway, 'POST', '/api/password', {
      cookie: pat,
      body: { currentPassword: PAT_PASSWORD, newPassword: PAT_NEW_PASSWORD },
    });
    expectStatus(changed, 200);
    expect((await entriesSince(before)).slice(1)).toEqual([
      entry({ action: 'password.change', actor: user('Pat'), target: target('Pat') }),
    ]);
  });

  it('records an OIDC sign-in claiming an invitation, an auto-created user and a role from the provider', async () => {
    const invited = await asAdmin('POST', '/api/users/invite', {
      name: 'Olga',
      email: 'olga@example.com',
      role: 'viewer',
    });
    expectStatus(invited, 201);
    ids.Olga = (json(invited.body) as { user: { id: string } }).user.id;
    keepInvite(invited);
    const before = await entryCount();
    provider.setAccount('olga-sub', { email: 'olga@example.com', email_verified: true, groups: ['staff'] });
    await signInWithProvider('olga-sub');
    provider.setAccount('erin-sub', {
      email: 'erin@example.com',
      email_verified: true,
      name: 'Erin',
      groups: ['staff'],
    });
    await signInWithProvider('erin-sub');
    ids.Erin = (await gateway.store!.users.findByName('Erin'))!.id;
    provider.setAccount('erin-sub', { email: 'erin@example.com', email_verified: true, groups: ['llm-admins'] });
    await signInWithProvider('erin-sub');
    await signInWithProvider('erin-sub');

    const signIn = (name: string) => entry({ action: 'session.sign_in', actor: user(name) });
    expect(await entriesSince(before)).toEqual([
      entry({
        action: 'user.invite_accept',
        actor: user('Olga'),
        target: target('Olga'),
        changes: {
          role: { from: 'viewer', to: 'member' },
          status: { from: 'invited', to: 'active' },
          signIn: { from: 'password', to: 'oidc' },
        },
      }),
      signIn('Olga'),
      entry({
        action: 'user.create',
        actor: user('Erin'),
        target: target('Erin'),
        changes: {
          name: { from: null, to: 'Erin' },
          email: { from: null, to: 'erin@example.com' },
          role: { from: null, to: 'member' },
          status: { from: null, to: 'active' },
          signIn: { from: null, to: 'oidc' },
        },
      }),
      signIn('Erin'),
      entry({
        action: 'user.role_change',
        actor: user('Erin'),
        target: target('Erin'),
        changes: { role: { from: 'member', to: 'admin' } },
      }),
      signIn('Erin'),
      // Nothing changed at the provider: only the sign-in.
      signIn('Erin'),
    ]);
  });

  it('keeps passwords, hashes and invitation tokens out of every stored entry and of the API', async () => {
    for (const person of await gateway.store!.users.list())
      if (person.passwordHash !== null) secrets.push(person.passwordHash, person.passwordHash.split('$').at(-1)!);
    const db = new BetterSqlite3(sqliteFileIn(gateway.dataDir), { readonly: true });
    let rows: string;
    try {
      rows = JSON.stringify(db.prepare('select * from audit_log').all());
    } finally {
      db.close();
    }
    const served = JSON.stringify(await auditPage());
    expect(rows).toContain('user.invite_accept');
    expect(served).toContain('user.invite_accept');
    expect(secrets.length).toBeGreaterThanOrEqual(20);
    for (const secret of secrets) {
      expect(rows.includes(secret), 'a secret is in the stored audit log').toBe(false);
      expect(served.includes(secret), 'a secret is in GET /api/audit').toBe(false);
    }
  });
});

describe('a user change whose entry cannot be written', () => {
  it('fails with 500 audit_write_failed and leaves the role as it was', async () => {
    const db = new BetterSqlite3(sqliteFileIn(gateway.dataDir));
    db.pragma('busy_timeout = 5000');
    db.exec(`create trigger refuse_audit before insert on audit_log begin select raise(abort, 'audit refused'); end`);
    let res: RawResponse;
    try {
      res = await asAdmin('PATCH', `/api/users/${ids.Pat}`, { role: 'admin' });
    } finally {
      db.exec('drop trigger refuse_audit');
      db.close();
    }
    expect(res.status).toBe(500);
    expect(errorCode(res)).toBe('audit_write_failed');
    expect((await gateway.store!.users.get(ids.Pat!))?.role).toBe('member');
  });
});
