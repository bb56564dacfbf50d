/**
 * Users and roles through the real admin API: every `/api/*` route answers each role as the
 * route table declares (iterated from the table itself, so a new route is covered), a member's
 * keys and usage are theirs alone, invitations work once and for seven days, and a disabled user
 * is out at once.
 */
import { request } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { INVITE_TTL_MS } from '../../src/auth/users.js';
import { adminRouteAccess, type AdminRouteAccess } from '../../src/http/admin-route-guard.js';
import { USER_ROLES, type UserRole } from '../../src/store/records.js';
import { DEMO_CONFIG, startSimulator, type Simulator } from '../fakes/llama-swap/index.js';
import { api, errorCode, login, manualClock, sessionToken, startAdminGateway } from '../helpers/admin.js';
import type { TestGateway } from '../helpers/gateway.js';
import { json, rawRequest, type RawResponse } from '../helpers/http.js';
import { adminApi, createKey, recordFor, requestId, startUsageGateway } from '../usage/usage-helpers.js';

const USER_PASSWORD = 'a password for a person';

let sim: Simulator;
beforeAll(async () => {
  sim = await startSimulator({ config: DEMO_CONFIG, knobs: { tokens: 2 } });
});
afterAll(async () => {
  await sim?.close();
});

interface CreatedUser {
  user: { id: string; name: string; role: UserRole; status: string };
  invite: { url: string; expiresAt: string } | null;
}

async function createUser(gateway: TestGateway, body: Record<string, unknown>): Promise<CreatedUser> {
  const res = await adminApi(gateway, 'POST', '/api/users', body);
  expect(res.status, res.body.toString()).toBe(201);
  return json(res.body) as CreatedUser;
}

/**
 * Status and body of an admin call, as soon as it is known: an event stream is cut after its
 * headers (its body never ends), anything else is read whole.
 */
function firstAnswer(gateway: TestGateway, method: string, path: string, cookie: string): Promise<RawResponse> {
  const body = method === 'GET' || method === 'HEAD' || method === 'DELETE' ? undefined : '{}';
  const headers: Record<string, string> = {
    'sec-fetch-site': 'same-origin',
    origin: gateway.url,
    cookie: `gatehouse_session=${cookie}`,
    ...(body ? { 'content-type': 'application/json' } : {}),
  };
  return new Promise((resolve, reject) => {
    const req = request(`${gateway.url}${path}`, { method, headers, agent: false }, (res) => {
      const status = res.statusCode ?? 0;
      if (String(res.headers['content-type']).startsWith('text/event-stream')) {
        res.destroy();
        resolve({ status, headers: res.headers, body: Buffer.alloc(0) });
        return;
      }
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => resolve({ status, headers: res.headers, body: Buffer.concat(chunks) }));
      res.on('error', reject);
    });
    req.on('error', reject);
    req.end(body);
  });
}

function chat(gateway: TestGateway, secret: string, id: string, model = 'qwen'): Promise<RawResponse> {
  return rawRequest(`${gateway.url}/v1/chat/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: `Bearer ${secret}`, 'x-request-id': id },
    body: JSON.stringify({ model, messages: [{ role: 'user', content: 'hi' }] }),
  });
}

describe('roles on the admin API', () => {
  let gateway: TestGateway;
  let routes: AdminRouteAccess[];
  const cookies = {} as Record<UserRole, string>;

  beforeAll(async () => {
    gateway = await startUsageGateway(sim.url);
    for (const role of USER_ROLES) {
      await createUser(gateway, { name: `${role} person`, role, password: USER_PASSWORD });
      cookies[role] = await login(gateway, USER_PASSWORD, `${role} person`);
    }
    routes = adminRouteAccess(gateway.app.fastify).filter((r) => r.roles !== 'public');
  });
  afterAll(async () => {
    await gateway?.close();
  });

  it('answers every signed-in route as its declared roles say, and 403 admin_forbidden to any other role', async () => {
    expect(routes.length).toBeGreaterThan(25);
    // Signing out ends the session the remaining calls use: last.
    const ordered = [...routes].sort((x, y) => Number(x.url === '/api/logout') - Number(y.url === '/api/logout'));
    for (const route of ordered) {
      const path = route.url.replace(/:\w+/g, 'nobody');
      for (const role of USER_ROLES) {
        const res = await firstAnswer(gateway, route.method, path, cookies[role]);
        const what = `${role} ${route.method} ${path}: ${res.status} ${res.body.toString()}`;
        if (route.roles.includes(role)) {
          expect([401, 403], what).not.toContain(res.status);
        } else {
          expect(res.status, what).toBe(403);
          if (route.method !== 'HEAD') expect(errorCode(res), what).toBe('admin_forbidden');
        }
      }
    }
  });

  it('lets a viewer change nothing, and a member reach only keys, usage, endpoints and their own session', () => {
    const ownSession = ['/api/logout', '/api/password', '/api/me'];
    for (const { method, url, roles } of routes) {
      if (roles === 'public') continue;
      if (roles.includes('viewer') && method !== 'GET' && method !== 'HEAD') expect(ownSession).toContain(url);
      if (roles.includes('member'))
        expect(url).toMatch(
          /^\/api\/((keys|usage)(\/.*)?|endpoints|me|logout|password|limits|models|budgets|openapi\.json)$/,
        );
      if (
        url.startsWith('/api/config') ||
        /^\/api\/models\/.+/.test(url) ||
        (url.startsWith('/api/users') && method !== 'GET' && method !== 'HEAD')
      )
        expect(roles, `${method} ${url}`).toEqual(['admin']);
    }
  });
});

describe('a member and their keys', () => {
  let gateway: TestGateway;
  let member: CreatedUser['user'];
  let cookie: string;

  beforeAll(async () => {
    gateway = await startUsageGateway(sim.url);
    ({ user: member } = await createUser(gateway, {
      name: 'mo',
      role: 'member',
      password: USER_PASSWORD,
      allowedModels: ['qwen'],
    }));
    cookie = await login(gateway, USER_PASSWORD, 'mo');
  });
  afterAll(async () => {
    await gateway?.close();
  });

  it('keeps keys inside the allowance an admin set, and leaves the queue priority to admins', async () => {
    for (const body of [
      { name: 'wide' },
      { name: 'other', models: ['llama-3.2-3b'] },
      { name: 'q', models: ['qwen'], priority: 5 },
    ]) {
      const res = await api(gateway, 'POST', '/api/keys', { cookie, body });
      expect(res.status, JSON.stringify(body)).toBe(403);
      expect(errorCode(res)).toBe('admin_forbidden');
    }
  });

  it('owns the keys they make, sees only those, and cannot touch anyone else’s', async () => {
    const made = await api(gateway, 'POST', '/api/keys', { cookie, body: { name: 'mo laptop', models: ['qwen'] } });
    expect(made.status, made.body.toString()).toBe(201);
    const own = json(made.body) as { key: { id: string; ownerId: string; ownerName: string }; secret: string };
    expect(own.key).toMatchObject({ ownerId: member.id, ownerName: 'mo' });
    const script = await createKey(gateway, { name: 'made by a script' });
    const scriptView = (
      json((await adminApi(gateway, 'GET', '/api/keys')).body) as { keys: Array<{ id: string; ownerId: unknown }> }
    ).keys.find((k) => k.id === script.id);
    expect(scriptView?.ownerId).toBeNull();

    const listed = json((await api(gateway, 'GET', '/api/keys', { cookie })).body) as { keys: Array<{ id: string }> };
    expect(listed.keys.map((k) => k.id)).toEqual([own.key.id]);
    expect((await api(gateway, 'PATCH', `/api/keys/${script.id}`, { cookie, body: { name: 'mine now' } })).status).toBe(
      404,
    );
    expect((await api(gateway, 'DELETE', `/api/keys/${script.id}`, { cookie })).status).toBe(404);
    const renamed = await api(gateway, 'PATCH', `/api/keys/${own.key.id}`, { cookie, body: { name: 'mo desktop' } });
    expect(renamed.status, renamed.body.toString()).toBe(200);

    // Usage: the member sees their call only; the admin sees both, each naming its key's owner.
    const mine = requestId('member');
    const theirs = requestId('script');
    expect((await chat(gateway, own.secret, mine)).status).toBe(200);
    expect((await chat(gateway, script.secret, theirs)).status).toBe(200);
    expect((await recordFor(gateway, mine)).owner).toEqual({ id: member.id, name: 'mo' });
    const scriptCall = await recordFor(gateway, theirs);
    expect(scriptCall.owner).toBeNull();

    const page = json((await api(gateway, 'GET', '/api/usage/requests', { cookie })).body) as {
      requests: Array<{ requestId: string }>;
    };
    expect(page.requests.map((r) => r.requestId)).toEqual([mine]);
    expect((await api(gateway, 'GET', `/api/usage/requests/${scriptCall.id}`, { cookie })).status).toBe(404);
    const summary = json((await api(gateway, 'GET', '/api/usage/summary?groupBy=key', { cookie })).body) as {
      totals: { requests: number };
      groups: Array<{ key?: { id: string | null } }>;
    };
    expect(summary.totals.requests).toBe(1);
    expect(summary.groups.map((g) => g.key?.id)).toEqual([own.key.id]);
    const all = json((await adminApi(gateway, 'GET', '/api/usage/summary')).body) as { totals: { requests: number } };
    expect(all.totals.requests).toBe(2);

    // Disabled: signed out and the key refused at once.
    const disabled = await adminApi(gateway, 'PATCH', `/api/users/${member.id}`, { disabled: true });
    expect(disabled.status, disabled.body.toString()).toBe(200);
    expect((json(disabled.body) as CreatedUser).user.status).toBe('disabled');
    expect((await api(gateway, 'GET', '/api/keys', { cookie })).status).toBe(401);
    expect((await chat(gateway, own.secret, requestId('after'))).status).toBe(401);
    expect((await chat(gateway, script.secret, requestId('script after'))).status).toBe(200);
  });
});

describe('invitations', () => {
  const clock = manualClock();
  let gateway: TestGateway;
  const ADMIN_TOKEN = 'invite-tests-admin-token';
  const invite = async (name: string, role: UserRole) => {
    const res = await api(gateway, 'POST', '/api/users/invite', {
      headers: { authorization: `Bearer ${ADMIN_TOKEN}`, 'content-type': 'application/json' },
      body: { name, role, email: `${name}@example.org` },
    });
    expect(res.status, res.body.toString()).toBe(201);
    return json(res.body) as CreatedUser;
  };
  const tokenOf = (url: string) => new URL(url).hash.replace(/^#token=/, '');
  const accept = (token: string) =>
    api(gateway, 'POST', '/api/invite/accept', { body: { token, password: USER_PASSWORD } });

  beforeAll(async () => {
    gateway = await startAdminGateway(sim.url, { adminToken: ADMIN_TOKEN }, { now: clock.now });
  });
  afterAll(async () => {
    await gateway?.close();
  });

  it('gives a one-time link in the fragment; accepting it sets the password and signs in with the role', async () => {
    const { user, invite: link } = await invite('ivy', 'viewer');
    expect(user).toMatchObject({ name: 'ivy', role: 'viewer', status: 'invited' });
    expect(link!.url).toMatch(new RegExp(`^${gateway.url}/invite#token=[A-Za-z0-9_-]{43}$`));
    expect(Date.parse(link!.expiresAt)).toBe(clock.now() + INVITE_TTL_MS);
    expect((await api(gateway, 'POST', '/api/login', { body: { name: 'ivy', password: USER_PASSWORD } })).status).toBe(
      401,
    );

    const accepted = await accept(tokenOf(link!.url));
    expect(accepted.status, accepted.body.toString()).toBe(200);
    const session = json((await api(gateway, 'GET', '/api/session', { cookie: sessionToken(accepted) })).body);
    expect(session).toMatchObject({ authenticated: true, role: 'viewer', user: { name: 'ivy', status: 'active' } });
    await login(gateway, USER_PASSWORD, 'ivy');

    const again = await accept(tokenOf(link!.url));
    expect(again.status).toBe(403);
    expect(errorCode(again)).toBe('admin_forbidden');
  });

  it('works until seven days have passed, and not from then on', async () => {
    const early = await invite('ed', 'member');
    const late = await invite('eve', 'member');
    clock.advance(INVITE_TTL_MS - 1);
    expect((await accept(tokenOf(early.invite!.url))).status).toBe(200);
    clock.advance(1);
    const expired = await accept(tokenOf(late.invite!.url));
    expect(expired.status).toBe(403);
    expect(JSON.stringify(json(expired.body))).toContain('expired');
  });
});
