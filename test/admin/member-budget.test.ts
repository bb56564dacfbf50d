/**
 * A member's maximum budget through the real admin API on a real SQLite store: admins set and
 * clear it on the user; a member's non-revoked keys must each carry a budget of every capped kind
 * in the cap's period, adding up to at most the cap; admins are not bound by it.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DEMO_CONFIG, startSimulator, type Simulator } from '../fakes/llama-swap/index.js';
import { api, errorCode, login } from '../helpers/admin.js';
import type { TestGateway } from '../helpers/gateway.js';
import { json, rawRequest, type RawResponse } from '../helpers/http.js';
import { adminApi, requestId, startUsageGateway } from '../usage/usage-helpers.js';

const PASSWORD = 'a password for a person';

interface UserView {
  id: string;
  maxBudget: { tokens: number | null; requests: number | null; gpuSeconds: number | null; period: string } | null;
}
interface KeyView {
  key: { id: string; budget: Record<string, unknown> };
  secret: string;
}

let sim: Simulator;
let gateway: TestGateway;
beforeAll(async () => {
  sim = await startSimulator({ config: DEMO_CONFIG, knobs: { tokens: 2 } });
  gateway = await startUsageGateway(sim.url);
});
afterAll(async () => {
  await gateway?.close();
  await sim?.close();
});

async function newMember(name: string, maxBudget?: unknown): Promise<{ user: UserView; cookie: string }> {
  const res = await adminApi(gateway, 'POST', '/api/users', {
    name,
    role: 'member',
    password: PASSWORD,
    ...(maxBudget === undefined ? {} : { maxBudget }),
  });
  expect(res.status, res.body.toString()).toBe(201);
  return { user: (json(res.body) as { user: UserView }).user, cookie: await login(gateway, PASSWORD, name) };
}

const setCap = async (user: UserView, maxBudget: unknown): Promise<RawResponse> =>
  adminApi(gateway, 'PATCH', `/api/users/${user.id}`, { maxBudget });

function createKey(cookie: string, body: Record<string, unknown>): Promise<RawResponse> {
  return api(gateway, 'POST', '/api/keys', { cookie, body });
}

function patchKey(cookie: string, id: string, body: Record<string, unknown>): Promise<RawResponse> {
  return api(gateway, 'PATCH', `/api/keys/${id}`, { cookie, body });
}

async function created(res: Promise<RawResponse>): Promise<KeyView> {
  const answer = await res;
  expect(answer.status, answer.body.toString()).toBe(201);
  return json(answer.body) as KeyView;
}

/** The refusal's details, after checking it is a 403 admin_forbidden. */
function refusal(res: RawResponse): { message: string; details: Array<{ path: string; message: string }> } {
  expect(res.status, res.body.toString()).toBe(403);
  expect(errorCode(res)).toBe('admin_forbidden');
  return (json(res.body) as { error: { message: string; details: Array<{ path: string; message: string }> } }).error;
}

describe('an admin and a member’s maximum budget', () => {
  it('sets it on a new user, changes what a PATCH names, clears it, and shows it in the list', async () => {
    const { user } = await newMember('capped at birth', { tokens: 100_000, period: 'week' });
    expect(user.maxBudget).toEqual({ tokens: 100_000, requests: null, gpuSeconds: null, period: 'week' });

    const changed = await setCap(user, { requests: 500, period: 'day' });
    expect(changed.status, changed.body.toString()).toBe(200);
    expect((json(changed.body) as { user: UserView }).user.maxBudget).toEqual({
      tokens: 100_000,
      requests: 500,
      gpuSeconds: null,
      period: 'day',
    });
    const listed = json((await adminApi(gateway, 'GET', '/api/users')).body) as { users: UserView[] };
    expect(listed.users.find((u) => u.id === user.id)?.maxBudget).toEqual({
      tokens: 100_000,
      requests: 500,
      gpuSeconds: null,
      period: 'day',
    });

    // A cap left without amounts is no cap; null clears it outright.
    const emptied = await setCap(user, { tokens: null, requests: null });
    expect((json(emptied.body) as { user: UserView }).user.maxBudget).toBeNull();
    await setCap(user, { gpuSeconds: 60 });
    const cleared = await setCap(user, null);
    expect(cleared.status).toBe(200);
    expect((json(cleared.body) as { user: UserView }).user.maxBudget).toBeNull();
    const plain = await adminApi(gateway, 'POST', '/api/users', { name: 'no cap', role: 'member', password: PASSWORD });
    expect((json(plain.body) as { user: UserView }).user.maxBudget).toBeNull();
  });

  it('refuses a cap the key budget rules refuse, with a path per problem', async () => {
    const { user } = await newMember('badly capped');
    const res = await setCap(user, { tokens: 0, requests: 1.5, period: 'year', dollars: 3 });
    expect(res.status).toBe(422);
    expect((json(res.body) as { error: { details: unknown } }).error.details).toEqual([
      { path: '/maxBudget/tokens', message: 'must be a whole number from 1 to 1000000000000, or null for no budget' },
      { path: '/maxBudget/requests', message: 'must be a whole number from 1 to 1000000000000, or null for no budget' },
      { path: '/maxBudget/period', message: 'must be one of day, week, month' },
      { path: '/maxBudget/dollars', message: 'unknown field; expected one of tokens, requests, gpuSeconds, period' },
    ]);
    const created = await adminApi(gateway, 'POST', '/api/users', {
      name: 'capped with a string',
      role: 'member',
      maxBudget: 'lots',
    });
    expect(created.status).toBe(422);
    expect((json(created.body) as { error: { details: Array<{ path: string }> } }).error.details[0]?.path).toBe(
      '/maxBudget',
    );
    expect((await adminApi(gateway, 'GET', '/api/users')).body.toString()).not.toContain('capped with a string');
  });

  it('leaves setting it to admins: a member cannot lift their own', async () => {
    const { user, cookie } = await newMember('self lifter', { tokens: 10, period: 'day' });
    const res = await api(gateway, 'PATCH', `/api/users/${user.id}`, { cookie, body: { maxBudget: null } });
    expect(res.status).toBe(403);
    expect(errorCode(res)).toBe('admin_forbidden');
    const listed = json((await adminApi(gateway, 'GET', '/api/users')).body) as { users: UserView[] };
    expect(listed.users.find((u) => u.id === user.id)?.maxBudget?.tokens).toBe(10);
  });
});

describe('a member’s keys under a maximum budget', () => {
  let cookie: string;
  beforeAll(async () => {
    ({ cookie } = await newMember('mo', { tokens: 1000, requests: 100, period: 'day' }));
  });

  it('refuses a key without a budget, saying it needs one of at most what remains', async () => {
    const error = refusal(await createKey(cookie, { name: 'no budget' }));
    expect(error).toEqual({
      code: 'admin_forbidden',
      message:
        'Your keys may hold at most 1000 tokens, 100 requests per day together (your maximum budget); ' +
        '1000 tokens, 100 requests remain, so this key needs a budget of at most that per day.',
      details: [
        { path: '/budget/tokens', message: 'required: at most 1000 tokens per day' },
        { path: '/budget/requests', message: 'required: at most 100 requests per day' },
      ],
    });
    // A budget of only one capped kind still lacks the other.
    expect(refusal(await createKey(cookie, { name: 'half', budget: { tokens: 10, period: 'day' } })).details).toEqual([
      { path: '/budget/requests', message: 'required: at most 100 requests per day' },
    ]);
  });

  it('refuses a budget in another period than the cap’s', async () => {
    const error = refusal(
      await createKey(cookie, { name: 'weekly', budget: { tokens: 10, requests: 1, period: 'week' } }),
    );
    expect(error.details).toEqual([{ path: '/budget/period', message: 'must be day: your maximum budget is per day' }]);
  });

  it('adds up every non-revoked key: the next key gets only what remains, and a revoked key frees its share', async () => {
    const over = refusal(
      await createKey(cookie, { name: 'greedy', budget: { tokens: 1001, requests: 1, period: 'day' } }),
    );
    expect(over.details).toEqual([
      { path: '/budget/tokens', message: 'at most 1000 tokens per day remain of your maximum of 1000 tokens' },
    ]);

    const first = await created(
      createKey(cookie, { name: 'first', budget: { tokens: 600, requests: 60, period: 'day' } }),
    );
    const second = refusal(
      await createKey(cookie, { name: 'second', budget: { tokens: 500, requests: 40, period: 'day' } }),
    );
    expect(second.message).toContain('400 tokens, 40 requests remain');
    expect(second.details).toEqual([
      { path: '/budget/tokens', message: 'at most 400 tokens per day remain of your maximum of 1000 tokens' },
    ]);
    const fitting = await created(
      createKey(cookie, { name: 'second', budget: { tokens: 400, requests: 40, period: 'day' } }),
    );

    // Raising a key is checked against the others; lowering it fits.
    const raised = refusal(await patchKey(cookie, first.key.id, { budget: { tokens: 601 } }));
    expect(raised.details).toEqual([
      { path: '/budget/tokens', message: 'at most 600 tokens per day remain of your maximum of 1000 tokens' },
    ]);
    const lowered = await patchKey(cookie, first.key.id, { budget: { tokens: 500 } });
    expect(lowered.status, lowered.body.toString()).toBe(200);
    expect(refusal(await patchKey(cookie, first.key.id, { budget: null })).details).toHaveLength(2);

    const revoked = await patchKey(cookie, fitting.key.id, { revoked: true });
    expect(revoked.status, revoked.body.toString()).toBe(200);
    await created(createKey(cookie, { name: 'third', budget: { tokens: 500, requests: 40, period: 'day' } }));
  });
});

describe('keys made before the cap, or changed by an admin', () => {
  it('keeps them working, and asks the member’s next budget change to fit them all', async () => {
    const { user, cookie } = await newMember('early', null);
    const free = await created(createKey(cookie, { name: 'free' }));
    const budgeted = await created(createKey(cookie, { name: 'budgeted', budget: { tokens: 800, period: 'day' } }));
    expect((await setCap(user, { tokens: 500, period: 'day' })).status).toBe(200);

    // Nothing stops the keys already made.
    for (const key of [free, budgeted]) {
      const res = await rawRequest(`${gateway.url}/v1/chat/completions`, {
        method: 'POST',
        headers: {
          'content-type': 'application/json',
          authorization: `Bearer ${key.secret}`,
          'x-request-id': requestId('early'),
        },
        body: JSON.stringify({ model: 'qwen', messages: [{ role: 'user', content: 'hi' }] }),
      });
      expect(res.status, res.body.toString()).toBe(200);
    }
    // Renaming is not a budget change.
    expect((await patchKey(cookie, free.key.id, { name: 'still free' })).status).toBe(200);

    const blocked = refusal(await createKey(cookie, { name: 'new', budget: { tokens: 1, period: 'day' } }));
    expect(blocked.message).toMatch(/Give your other keys such a budget, or revoke them, first\.$/);
    expect(blocked.details).toEqual([
      { path: '/budget/tokens', message: 'your key "still free" has no tokens budget per day' },
      {
        path: '/budget/tokens',
        message: 'your other keys hold 800 tokens per day, more than your maximum of 500 tokens',
      },
    ]);

    // An admin is not bound by the cap, even on the member's own keys.
    const widened = await adminApi(gateway, 'PATCH', `/api/keys/${free.key.id}`, { budget: { tokens: 10_000 } });
    expect(widened.status, widened.body.toString()).toBe(200);
    const adminKey = await adminApi(gateway, 'POST', '/api/keys', {
      name: 'admin spends freely',
      budget: { tokens: 1_000_000, period: 'month' },
    });
    expect(adminKey.status).toBe(201);

    // The member brings their keys back under the cap, one budget change at a time.
    expect((await patchKey(cookie, free.key.id, { revoked: true })).status).toBe(200);
    const fixed = await patchKey(cookie, budgeted.key.id, { budget: { tokens: 300 } });
    expect(fixed.status, fixed.body.toString()).toBe(200);
    await created(createKey(cookie, { name: 'new', budget: { tokens: 200, period: 'day' } }));
  });
});
