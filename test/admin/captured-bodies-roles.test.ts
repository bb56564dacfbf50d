/**
 * Who reads captured prompts (`GATEHOUSE_USAGE_CAPTURE_BYTES`): admins and the member who owns
 * the call's key. A viewer gets the call's metadata with both bodies withheld, and is told so;
 * another member does not see the call at all. No list, export or summary carries a body.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { UsageRequestFound } from '../../src/admin-api/types.js';
import type { UserRole } from '../../src/store/records.js';
import { DEMO_CONFIG, startSimulator, type Simulator } from '../fakes/llama-swap/index.js';
import { api, login } from '../helpers/admin.js';
import type { TestGateway } from '../helpers/gateway.js';
import { json, rawRequest } from '../helpers/http.js';
import { adminApi, recordFor, requestId, startUsageGateway } from '../usage/usage-helpers.js';

const USER_PASSWORD = 'a password for a person';
const PROMPT = 'the quarterly numbers nobody may read';

let sim: Simulator;
let gateway: TestGateway;
const cookies = {} as Record<'viewer' | 'owner' | 'other', string>;
let callId: string;

async function signedInAs(name: string, role: UserRole): Promise<string> {
  const res = await adminApi(gateway, 'POST', '/api/users', { name, role, password: USER_PASSWORD });
  expect(res.status, res.body.toString()).toBe(201);
  return login(gateway, USER_PASSWORD, name);
}

beforeAll(async () => {
  sim = await startSimulator({ config: DEMO_CONFIG, knobs: { tokens: 2 } });
  gateway = await startUsageGateway(sim.url, { usageCaptureBytes: 4096 });
  cookies.viewer = await signedInAs('vera', 'viewer');
  cookies.owner = await signedInAs('mo', 'member');
  cookies.other = await signedInAs('olga', 'member');
  const made = await api(gateway, 'POST', '/api/keys', { cookie: cookies.owner, body: { name: 'mo laptop' } });
  expect(made.status, made.body.toString()).toBe(201);
  const { secret } = json(made.body) as { secret: string };
  const id = requestId('captured');
  const res = await rawRequest(`${gateway.url}/v1/chat/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: `Bearer ${secret}`, 'x-request-id': id },
    body: JSON.stringify({ model: 'qwen', messages: [{ role: 'user', content: PROMPT }] }),
  });
  expect(res.status).toBe(200);
  callId = (await recordFor(gateway, id)).id;
});
afterAll(async () => {
  await gateway?.close();
  await sim?.close();
});

describe('captured bodies by role', () => {
  it('shows the bodies to an admin and to the member who owns the key', async () => {
    const byAdmin = json((await adminApi(gateway, 'GET', `/api/usage/requests/${callId}`)).body) as UsageRequestFound;
    expect(byAdmin.request).toMatchObject({ captured: true, bodiesWithheld: false });
    expect(byAdmin.request.requestBody).toContain(PROMPT);
    expect(byAdmin.request.responseBody).not.toBeNull();

    const res = await api(gateway, 'GET', `/api/usage/requests/${callId}`, { cookie: cookies.owner });
    expect(res.status).toBe(200);
    const byOwner = json(res.body) as UsageRequestFound;
    expect(byOwner.request).toMatchObject({ captured: true, bodiesWithheld: false });
    expect(byOwner.request.requestBody).toBe(byAdmin.request.requestBody);
    expect(byOwner.request.responseBody).toBe(byAdmin.request.responseBody);
  });

  it('gives a viewer the metadata with both bodies withheld, and says so', async () => {
    const res = await api(gateway, 'GET', `/api/usage/requests/${callId}`, { cookie: cookies.viewer });
    expect(res.status).toBe(200);
    expect(res.body.toString()).not.toContain('quarterly');
    const { request } = json(res.body) as UsageRequestFound;
    const byAdmin = json((await adminApi(gateway, 'GET', `/api/usage/requests/${callId}`)).body) as UsageRequestFound;
    expect(request).toEqual({ ...byAdmin.request, requestBody: null, responseBody: null, bodiesWithheld: true });
  });

  it('shows another member nothing of the call', async () => {
    const res = await api(gateway, 'GET', `/api/usage/requests/${callId}`, { cookie: cookies.other });
    expect(res.status).toBe(404);
    expect(res.body.toString()).not.toContain('quarterly');
  });

  it('carries no body in the request log, the summary or the exports a viewer reads', async () => {
    for (const path of [
      '/api/usage/requests',
      '/api/usage/summary?groupBy=key',
      '/api/usage/export?format=json',
      '/api/usage/export?format=csv',
    ]) {
      const res = await api(gateway, 'GET', path, { cookie: cookies.viewer });
      expect(res.status, path).toBe(200);
      expect(res.body.toString(), path).not.toContain('quarterly');
    }
  });
});
