/**
 * A member's allowance reaches the keys they made before it changed: at call time a key may use
 * only what both its own list and its owner's current allowance allow — on /v1 calls in either
 * wire format, in the /v1/models list, and on the manage routes.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DEMO_CONFIG, startSimulator, type Simulator } from '../fakes/llama-swap/index.js';
import { api, login } from '../helpers/admin.js';
import type { TestGateway } from '../helpers/gateway.js';
import { json, rawRequest, type RawResponse } from '../helpers/http.js';
import { adminApi, startUsageGateway } from '../usage/usage-helpers.js';
import { createLlamaSwapClient } from '../../src/management-client/llama-swap-client.js';

const PASSWORD = 'a password for a person';
const M1 = 'qwen3-8b';
const M2 = 'llama-3.2-3b';

let sim: Simulator;
let gateway: TestGateway;
let listed: string; // the member's key listing m1 and m2
let open: string; // the member's key without a list
let adminKey: string; // an admin's key without a list
beforeAll(async () => {
  sim = await startSimulator({ config: DEMO_CONFIG, knobs: { tokens: 2 } });
  const upstream = createLlamaSwapClient({ baseUrl: new URL(sim.url) });
  gateway = await startUsageGateway(sim.url, {}, { listModels: () => upstream.models(), closeables: [upstream] });
  const res = await adminApi(gateway, 'POST', '/api/users', { name: 'nora', role: 'member', password: PASSWORD });
  expect(res.status, res.body.toString()).toBe(201);
  const member = (json(res.body) as { user: { id: string } }).user;
  const cookie = await login(gateway, PASSWORD, 'nora');
  const make = async (body: Record<string, unknown>) => {
    const made = await api(gateway, 'POST', '/api/keys', { cookie, body });
    expect(made.status, made.body.toString()).toBe(201);
    return json(made.body) as { key: { id: string }; secret: string };
  };
  const both = await make({ name: 'both', models: [M1, M2] });
  listed = both.secret;
  open = (await make({ name: 'open' })).secret;
  // An admin may give a member's key the manage scope; the allowance still bounds it.
  expect((await adminApi(gateway, 'PATCH', `/api/keys/${both.key.id}`, { manage: true })).status).toBe(200);
  adminKey = (json((await adminApi(gateway, 'POST', '/api/keys', { name: 'admin' })).body) as { secret: string })
    .secret;

  // Before the narrowing both keys reach m2.
  for (const key of [listed, open]) expect((await chat(key, M2)).status).toBe(200);
  const narrowed = await adminApi(gateway, 'PATCH', `/api/users/${member.id}`, { allowedModels: [M1] });
  expect(narrowed.status, narrowed.body.toString()).toBe(200);
});
afterAll(async () => {
  await gateway?.close();
  await sim?.close();
});

function chat(key: string, model: string): Promise<RawResponse> {
  return rawRequest(`${gateway.url}/v1/chat/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: `Bearer ${key}` },
    body: JSON.stringify({ model, max_tokens: 2, messages: [{ role: 'user', content: 'hi' }] }),
  });
}

const errorOf = (res: RawResponse) => (json(res.body) as { error: { code: string; message: string } }).error;

describe('a member narrowed to m1 after making their keys', () => {
  it('is refused m2 with 403 on the key that lists m1 and m2, and still reaches m1', async () => {
    const refused = await chat(listed, M2);
    expect(refused.status, refused.body.toString()).toBe(403);
    expect(errorOf(refused)).toMatchObject({ code: 'model_not_allowed' });
    expect(errorOf(refused).message).toContain(`owner may use only: ${M1}`);
    expect((await chat(listed, M1)).status).toBe(200);
    // An alias of m1 is m1.
    expect((await chat(listed, 'qwen')).status).toBe(200);
  });

  it('is refused m2 with 403 on the key without a list, in the OpenAI and the Anthropic shape', async () => {
    const refused = await chat(open, M2);
    expect(refused.status, refused.body.toString()).toBe(403);
    expect(errorOf(refused).code).toBe('model_not_allowed');
    const anthropic = await rawRequest(`${gateway.url}/v1/messages`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'anthropic-version': '2023-06-01', 'x-api-key': open },
      body: JSON.stringify({ model: M2, max_tokens: 2, messages: [{ role: 'user', content: 'hi' }] }),
    });
    expect(anthropic.status, anthropic.body.toString()).toBe(403);
    expect(json(anthropic.body)).toMatchObject({ type: 'error', error: { type: 'permission_error' } });
    const counting = await rawRequest(`${gateway.url}/v1/messages/count_tokens`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'anthropic-version': '2023-06-01', 'x-api-key': open },
      body: JSON.stringify({ model: M2, messages: [{ role: 'user', content: 'hi' }] }),
    });
    expect(counting.status, counting.body.toString()).toBe(403);
    // Without a model the call cannot be checked: refused, never forwarded.
    const unnamed = await rawRequest(`${gateway.url}/v1/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${open}` },
      body: JSON.stringify({ messages: [{ role: 'user', content: 'hi' }] }),
    });
    expect(errorOf(unnamed).code).toBe('model_required');
    expect((await chat(open, M1)).status).toBe(200);
  });

  it('lists only m1 in /v1/models, for either key and in Anthropic’s shape too', async () => {
    for (const key of [listed, open]) {
      const res = await rawRequest(`${gateway.url}/v1/models`, { headers: { authorization: `Bearer ${key}` } });
      expect(res.status, res.body.toString()).toBe(200);
      expect((json(res.body) as { data: Array<{ id: string }> }).data.map((m) => m.id)).toEqual([M1]);
    }
    const anthropic = await rawRequest(`${gateway.url}/v1/models`, {
      headers: { 'x-api-key': open, 'anthropic-version': '2023-06-01' },
    });
    expect((json(anthropic.body) as { data: Array<{ id: string }> }).data.map((m) => m.id)).toEqual([M1]);
    // An admin's key is bound by no allowance.
    const admin = await rawRequest(`${gateway.url}/v1/models`, { headers: { authorization: `Bearer ${adminKey}` } });
    expect((json(admin.body) as { data: Array<{ id: string }> }).data.map((m) => m.id)).toContain(M2);
  });

  it('manages only m1 through the manage routes', async () => {
    const headers = { authorization: `Bearer ${listed}`, accept: 'application/json' };
    const list = await rawRequest(`${gateway.url}/models`, { headers });
    expect(list.status, list.body.toString()).toBe(200);
    expect((json(list.body) as { data: Array<{ id: string }> }).data.map((m) => m.id)).toEqual([M1]);
    const load = await rawRequest(`${gateway.url}/models/load`, {
      method: 'POST',
      headers: { ...headers, 'content-type': 'application/json' },
      body: JSON.stringify({ model: M2 }),
    });
    expect(load.status, load.body.toString()).toBe(403);
    expect(errorOf(load).code).toBe('model_not_allowed');
  });
});
