/**
 * The same gateway in front of either upstream: llama-swap (its simulator) and llama.cpp's
 * llama-server in router mode (the router simulator). Model management for clients
 * (`/models*`, the manage scope), the admin API's Models list and actions, /v1 usage and limits,
 * and readiness behave the same; what differs is said (llama-server streams no logs).
 */
import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { countPromptTokens, startSimulator } from '../fakes/llama-swap/index.js';
import { startRouterSimulator } from '../fakes/llama-server-router/index.js';
import { startTestGateway, type TestGateway } from '../helpers/gateway.js';
import { json, rawRequest, type RawResponse } from '../helpers/http.js';
import { adminApi, ADMIN_TOKEN, createKey, recordFor, requestId } from '../usage/usage-helpers.js';

interface Upstream {
  url: string;
  close(): Promise<void>;
}

const UPSTREAMS: Array<{ kind: 'llama-swap' | 'llama-server'; start(): Promise<Upstream> }> = [
  {
    kind: 'llama-swap',
    start: () =>
      startSimulator({
        config: {
          models: {
            qwen: { cmd: 'llama-server --port ${PORT}', aliases: ['gpt-4o-mini'] },
            llama: { cmd: 'llama-server --port ${PORT}' },
          },
        },
        knobs: { loadDelayMs: 50 },
      }),
  },
  {
    kind: 'llama-server',
    start: () =>
      startRouterSimulator({ models: [{ id: 'qwen', aliases: ['gpt-4o-mini'] }, { id: 'llama' }], loadDelayMs: 50 }),
  },
];

interface RouterList {
  object: string;
  data: Array<{ id: string; aliases: string[]; object: string; status: { value: string } }>;
}

describe.each(UPSTREAMS)('in front of $kind', ({ kind, start }) => {
  let upstream: Upstream;
  let gateway: TestGateway;
  let manager: string;
  let plain: string;
  let restricted: string;

  beforeAll(async () => {
    upstream = await start();
    gateway = await startTestGateway(
      upstream.url,
      { adminToken: ADMIN_TOKEN, logLevel: 'warn' },
      {},
      { withStore: true, upstreamKind: kind },
    );
    manager = (await createKey(gateway, { name: 'manager', manage: true })).secret;
    plain = (await createKey(gateway, { name: 'plain' })).secret;
    restricted = (await createKey(gateway, { name: 'qwen-manager', models: ['gpt-4o-mini'], manage: true })).secret;
  });
  afterAll(async () => {
    await gateway.close();
    await upstream.close();
  });

  const call = (method: string, path: string, key: string | undefined, body?: unknown) =>
    rawRequest(`${gateway.url}${path}`, {
      method,
      headers: {
        accept: 'application/json',
        ...(key === undefined ? {} : { authorization: `Bearer ${key}` }),
        ...(body === undefined ? {} : { 'content-type': 'application/json' }),
      },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
  const list = async (key = manager) => {
    const res = await call('GET', '/models', key);
    expect(res.status, res.body.toString()).toBe(200);
    return json(res.body) as RouterList;
  };
  const statusOf = async (id: string) => (await list()).data.find((m) => m.id === id)?.status.value;
  /** Reads until `id` has `value` (a load is answered before the model is up). */
  const settled = async (id: string, value: string) => {
    const deadline = Date.now() + 3000;
    while ((await statusOf(id)) !== value) {
      if (Date.now() > deadline) throw new Error(`${id} never became ${value}`);
      await new Promise((r) => setTimeout(r, 20));
    }
  };
  const expectError = (res: RawResponse, status: number, code: string, type: string) => {
    expect(res.status, res.body.toString()).toBe(status);
    expect(json(res.body)).toMatchObject({ error: { code, type } });
  };

  it('refuses a key without the manage scope with 403 manage_scope_required, in the OpenAI shape', async () => {
    for (const [method, path, body] of [
      ['GET', '/models', undefined],
      ['POST', '/models/load', { model: 'qwen' }],
      ['POST', '/models/unload', { model: 'qwen' }],
    ] as const) {
      const res = await call(method, path, plain, body);
      expectError(res, 403, 'manage_scope_required', 'permission_error');
      expect(res.headers['x-should-retry']).toBe('false');
    }
    expectError(await call('GET', '/models', undefined), 401, 'missing_api_key', 'authentication_error');
    expect(await statusOf('qwen')).toBe('unloaded');
  });

  it('lists every model with its llama-server status for a manage key, loads and unloads one', async () => {
    const before = await list();
    expect(before.object).toBe('list');
    const rows = before.data.map((m) => [m.id, m.aliases, m.object, m.status.value]);
    expect(rows.sort()).toEqual([
      ['llama', [], 'model', 'unloaded'],
      ['qwen', ['gpt-4o-mini'], 'model', 'unloaded'],
    ]);
    const load = await call('POST', '/models/load', manager, { model: 'qwen' });
    expect(load.status, load.body.toString()).toBe(200);
    expect(json(load.body)).toEqual({ success: true });
    await settled('qwen', 'loaded');
    expectError(
      await call('POST', '/models/load', manager, { model: 'qwen' }),
      400,
      'bad_request',
      'invalid_request_error',
    );
    const unload = await call('POST', '/models/unload', manager, { model: 'qwen' });
    expect(json(unload.body)).toEqual({ success: true });
    // An unload is answered once the model stopped.
    expect(await statusOf('qwen')).toBe('unloaded');
    const again = await call('POST', '/models/unload', manager, { model: 'qwen' });
    expectError(again, 400, 'bad_request', 'invalid_request_error');
    expect(json(again.body)).toMatchObject({ error: { message: 'model is not running' } });
    expectError(
      await call('POST', '/models/load', manager, { model: 'nope' }),
      404,
      'not_found',
      'invalid_request_error',
    );
    expectError(await call('POST', '/models/load', manager, {}), 400, 'bad_request', 'invalid_request_error');
  });

  it('shows a key restricted to some models only those, and lets it manage only those', async () => {
    expect((await list(restricted)).data.map((m) => m.id)).toEqual(['qwen']);
    const refused = await call('POST', '/models/load', restricted, { model: 'llama' });
    expectError(refused, 403, 'model_not_allowed', 'permission_error');
    expect(await statusOf('llama')).toBe('unloaded');
    // The alias on its list names qwen.
    expect(json((await call('POST', '/models/load', restricted, { model: 'gpt-4o-mini' })).body)).toEqual({
      success: true,
    });
    await settled('qwen', 'loaded');
    expect(json((await call('POST', '/models/unload', restricted, { model: 'qwen' })).body)).toEqual({ success: true });
  });

  it('leaves an audit entry for each load and unload by a key, failures included, and none without a key', async () => {
    const entries = async () =>
      (
        json((await adminApi(gateway, 'GET', '/api/audit?limit=500')).body) as {
          entries: Array<{
            id: string;
            actor: { kind: string; id: string | null; name: string | null };
            client: string | null;
            action: string;
            target: { kind: string; id: string } | null;
            outcome: string;
            reason: string | null;
          }>;
        }
      ).entries;
    const seen = new Set((await entries()).map((e) => e.id));
    expectError(
      await call('POST', '/models/load', undefined, { model: 'qwen' }),
      401,
      'missing_api_key',
      'authentication_error',
    );
    expectError(
      await call('POST', '/models/load', restricted, { model: 'llama' }),
      403,
      'model_not_allowed',
      'permission_error',
    );
    expect((await call('POST', '/models/load', manager, { model: 'gpt-4o-mini' })).status).toBe(200);
    await settled('qwen', 'loaded');
    expect((await call('POST', '/models/unload', manager, { model: 'qwen' })).status).toBe(200);
    expectError(
      await call('POST', '/models/unload', manager, { model: 'nope' }),
      404,
      'not_found',
      'invalid_request_error',
    );

    const added = (await entries()).filter((e) => !seen.has(e.id)).reverse();
    const keyId = async (name: string) =>
      (
        json((await adminApi(gateway, 'GET', '/api/keys')).body) as { keys: Array<{ id: string; name: string }> }
      ).keys.find((k) => k.name === name)!.id;
    const [managerId, restrictedId] = [await keyId('manager'), await keyId('qwen-manager')];
    expect(added.map((e) => [e.actor, e.action, e.target?.id, e.outcome, e.reason])).toEqual([
      [
        { kind: 'api-key', id: restrictedId, name: 'qwen-manager' },
        'model.load',
        'llama',
        'failure',
        'model_not_allowed',
      ],
      [{ kind: 'api-key', id: managerId, name: 'manager' }, 'model.load', 'qwen', 'success', null],
      [{ kind: 'api-key', id: managerId, name: 'manager' }, 'model.unload', 'qwen', 'success', null],
      [{ kind: 'api-key', id: managerId, name: 'manager' }, 'model.unload', 'nope', 'failure', 'not_found'],
    ]);
    expect(added.every((e) => e.client !== null && e.target?.kind === 'model')).toBe(true);
  });

  it('serves the dashboard page at /models to a browser without a key', async () => {
    const res = await rawRequest(`${gateway.url}/models`, { method: 'GET', headers: { accept: 'text/html' } });
    expect(String(res.headers['content-type'])).toMatch(/^text\/html/);
  });

  it('loads and unloads through the admin API, and the Models list follows', async () => {
    const models = async () =>
      json((await adminApi(gateway, 'GET', '/api/models')).body) as {
        reachable: boolean;
        models: Array<{ id: string; state: string; aliases: string[] }>;
      };
    const first = await models();
    expect(first.reachable).toBe(true);
    expect(first.models.map((m) => [m.id, m.state, m.aliases])).toEqual([
      ['llama', 'stopped', []],
      ['qwen', 'stopped', ['gpt-4o-mini']],
    ]);
    expect((await adminApi(gateway, 'POST', '/api/models/llama/load', {})).status).toBe(202);
    await settled('llama', 'loaded');
    const deadline = Date.now() + 3000;
    while ((await models()).models.find((m) => m.id === 'llama')?.state !== 'ready') {
      if (Date.now() > deadline) throw new Error('the Models list never showed llama ready');
      await new Promise((r) => setTimeout(r, 20));
    }
    expect(json((await adminApi(gateway, 'POST', '/api/models/llama/unload', {})).body)).toEqual({ state: 'stopped' });
    expect((await models()).models.find((m) => m.id === 'llama')?.state).toBe('stopped');
    expect(json((await adminApi(gateway, 'GET', '/api/upstream')).body)).toMatchObject({ reachable: true, kind });
  });

  it('forwards /v1 calls and records them with their tokens', async () => {
    const id = requestId(`${kind}-chat`);
    const messages = [{ role: 'user' as const, content: 'Say hello to the gateway' }];
    const openai = new OpenAI({ baseURL: `${gateway.url}/v1`, apiKey: manager, maxRetries: 0 });
    const completion = await openai.chat.completions.create(
      { model: 'qwen', messages },
      { headers: { 'x-request-id': id } },
    );
    expect(completion.usage).toMatchObject({ prompt_tokens: countPromptTokens({ messages }) });
    expect(await recordFor(gateway, id)).toMatchObject({
      requestId: id,
      key: { name: 'manager' },
      model: 'qwen',
      status: 200,
      inputTokens: countPromptTokens({ messages }),
      tokensSource: 'usage',
    });
  });

  it('applies a key limit the same way', async () => {
    const limited = (await createKey(gateway, { name: 'one-per-minute', limits: { rpm: 1 } })).secret;
    const chat = () =>
      call('POST', '/v1/chat/completions', limited, { model: 'llama', messages: [{ role: 'user', content: 'hi' }] });
    expect((await chat()).status).toBe(200);
    const second = await chat();
    expect(second.status).toBe(429);
    expect(second.headers['retry-after']).toBeDefined();
  });

  it('says whether the upstream can stream its logs', async () => {
    const live = (await gateway.view!.current()).upstream;
    expect(live.kind).toBe(kind);
    if (kind === 'llama-server') expect(live.logsUnavailable).toMatch(/no log or event stream/);
    else expect(live.logsUnavailable).toBeNull();
  });
});
