/**
 * Limits and expiry an admin set on a member's key are ceilings: through the real admin API on a
 * real SQLite store, the member may tighten them (and loosen back up to the ceiling), never raise
 * or clear them; limits the member set alone stay theirs to loosen; an admin moves the ceiling.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DEMO_CONFIG, startSimulator, type Simulator } from '../fakes/llama-swap/index.js';
import { api, errorCode, login } from '../helpers/admin.js';
import type { TestGateway } from '../helpers/gateway.js';
import { json, type RawResponse } from '../helpers/http.js';
import { adminApi, startUsageGateway } from '../usage/usage-helpers.js';

const PASSWORD = 'a password for a person';
const EXPIRY = '2099-01-01T00:00:00.000Z';

interface KeyView {
  id: string;
  limits: { rpm: number | null; tpm: number | null; concurrent: number | null };
  expiresAt: string | null;
}

let sim: Simulator;
let gateway: TestGateway;
let cookie: string;
beforeAll(async () => {
  sim = await startSimulator({ config: DEMO_CONFIG });
  gateway = await startUsageGateway(sim.url);
  const res = await adminApi(gateway, 'POST', '/api/users', { name: 'meg', role: 'member', password: PASSWORD });
  expect(res.status, res.body.toString()).toBe(201);
  cookie = await login(gateway, PASSWORD, 'meg');
});
afterAll(async () => {
  await gateway?.close();
  await sim?.close();
});

async function memberKey(body: Record<string, unknown> = {}): Promise<KeyView> {
  const res = await api(gateway, 'POST', '/api/keys', { cookie, body: { name: 'mine', ...body } });
  expect(res.status, res.body.toString()).toBe(201);
  return (json(res.body) as { key: KeyView }).key;
}

const patchAsMember = (id: string, body: Record<string, unknown>) =>
  api(gateway, 'PATCH', `/api/keys/${id}`, { cookie, body });

function accepted(res: RawResponse): KeyView {
  expect(res.status, res.body.toString()).toBe(200);
  return (json(res.body) as { key: KeyView }).key;
}

function refusedAt(res: RawResponse): Array<{ path: string; message: string }> {
  expect(res.status, res.body.toString()).toBe(403);
  expect(errorCode(res)).toBe('admin_forbidden');
  return (json(res.body) as { error: { details: Array<{ path: string; message: string }> } }).error.details;
}

describe('limits an admin set on a member’s key', () => {
  let key: KeyView;
  beforeAll(async () => {
    key = await memberKey();
    const set = await adminApi(gateway, 'PATCH', `/api/keys/${key.id}`, {
      limits: { rpm: 10, tpm: 1000, concurrent: 2 },
      expiresAt: EXPIRY,
    });
    expect(set.status, set.body.toString()).toBe(200);
  });

  it('cannot be raised or cleared by the member, each refusal naming its field', async () => {
    const raised = refusedAt(
      await patchAsMember(key.id, { limits: { rpm: 11, tpm: null, concurrent: 3 }, expiresAt: null }),
    );
    expect(raised).toEqual([
      { path: '/limits/rpm', message: 'at most 10: an admin set this limit' },
      { path: '/limits/tpm', message: 'at most 1000 and not cleared: an admin set this limit' },
      { path: '/limits/concurrent', message: 'at most 2: an admin set this limit' },
      { path: '/expiresAt', message: `at the latest ${EXPIRY} and not cleared: an admin set this expiry` },
    ]);
    expect(refusedAt(await patchAsMember(key.id, { expiresAt: '2099-01-02T00:00:00Z' }))).toEqual([
      { path: '/expiresAt', message: `at the latest ${EXPIRY}: an admin set this expiry` },
    ]);
    const stored = (json((await adminApi(gateway, 'GET', '/api/keys')).body) as { keys: KeyView[] }).keys.find(
      (k) => k.id === key.id,
    );
    expect(stored).toMatchObject({ limits: { rpm: 10, tpm: 1000, concurrent: 2 }, expiresAt: EXPIRY });
  });

  it('can be tightened by the member, and loosened again up to what the admin set', async () => {
    const tightened = accepted(
      await patchAsMember(key.id, { limits: { rpm: 5, concurrent: 1 }, expiresAt: '2098-01-01T00:00:00Z' }),
    );
    expect(tightened.limits).toEqual({ rpm: 5, tpm: 1000, concurrent: 1 });
    expect(accepted(await patchAsMember(key.id, { limits: { rpm: 10 }, expiresAt: EXPIRY })).limits.rpm).toBe(10);
    expect(refusedAt(await patchAsMember(key.id, { limits: { rpm: 11 } }))).toEqual([
      { path: '/limits/rpm', message: 'at most 10: an admin set this limit' },
    ]);
    // Sending the values unchanged (as the dashboard's dialog does with a new name) is no raise.
    expect(
      accepted(await patchAsMember(key.id, { name: 'renamed', limits: { rpm: 10, tpm: 1000, concurrent: 1 } })).id,
    ).toBe(key.id);
  });

  it('moves only when an admin moves it', async () => {
    accepted(await adminApi(gateway, 'PATCH', `/api/keys/${key.id}`, { limits: { rpm: null, tpm: 5000 } }));
    expect(accepted(await patchAsMember(key.id, { limits: { rpm: 500, tpm: 5000 } })).limits).toMatchObject({
      rpm: 500,
      tpm: 5000,
    });
    expect(accepted(await patchAsMember(key.id, { limits: { rpm: null } })).limits.rpm).toBeNull();
    expect(refusedAt(await patchAsMember(key.id, { limits: { tpm: 5001 } }))).toEqual([
      { path: '/limits/tpm', message: 'at most 5000: an admin set this limit' },
    ]);
  });
});

describe('limits a member set alone', () => {
  it('stay theirs to loosen and clear', async () => {
    const key = await memberKey({ limits: { rpm: 5, tpm: 100 }, expiresAt: EXPIRY });
    const loosened = accepted(await patchAsMember(key.id, { limits: { rpm: 50, tpm: null }, expiresAt: null }));
    expect(loosened).toMatchObject({ limits: { rpm: 50, tpm: null, concurrent: null }, expiresAt: null });
  });
});
