/**
 * A key allowed only some models, attacked the ways llama-swap's own model reading could be
 * turned against the gateway's, in front of the llama-swap simulator (which reads models as
 * llama-swap does). Nothing refused may reach llama-swap.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DEMO_CONFIG, startSimulator, type Simulator } from '../fakes/llama-swap/index.js';
import { startTestGateway, type TestGateway } from '../helpers/gateway.js';
import { json, rawRequest } from '../helpers/http.js';
import { createLlamaSwapClient } from '../../src/management-client/llama-swap-client.js';

const ADMIN = 'admin-token-for-tests';
let sim: Simulator;
let gateway: TestGateway;
let qwenOnly: string;
let byPattern: string;

beforeAll(async () => {
  sim = await startSimulator({ config: DEMO_CONFIG, knobs: { tokens: 2, tokensPerSecond: 1000 } });
  const upstream = createLlamaSwapClient({ baseUrl: new URL(sim.url) });
  gateway = await startTestGateway(
    sim.url,
    { adminToken: ADMIN },
    { listModels: () => upstream.models(), closeables: [upstream] },
    { withStore: true },
  );
  qwenOnly = await createKey({ name: 'qwen-only', models: ['qwen'] });
  byPattern = await createKey({ name: 'pattern', models: ['qwen3*', 'gpu-box/*'] });
});
afterAll(async () => {
  await gateway.close();
  await sim.close();
});

async function createKey(body: Record<string, unknown>): Promise<string> {
  const res = await rawRequest(`${gateway.url}/api/keys`, {
    method: 'POST',
    headers: { authorization: `Bearer ${ADMIN}`, 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });
  expect(res.status).toBe(201);
  return (json(res.body) as { secret: string }).secret;
}

function call(
  key: string,
  path: string,
  contentType: string | undefined,
  body: string | Buffer | undefined,
  method = 'POST',
) {
  return rawRequest(`${gateway.url}${path}`, {
    method,
    headers: { authorization: `Bearer ${key}`, ...(contentType ? { 'content-type': contentType } : {}) },
    body,
  });
}

function multipartBody(boundary: string, fields: Array<[string, string]>): Buffer {
  return Buffer.from(
    fields
      .map(([name, value]) => `--${boundary}\r\nContent-Disposition: form-data; name="${name}"\r\n\r\n${value}\r\n`)
      .join('') + `--${boundary}--\r\n`,
  );
}

const CHAT = '/v1/chat/completions';
const JSON_TYPE = 'application/json';
const MESSAGES = '"messages":[{"role":"user","content":"hi"}]';

describe('a key allowed only qwen', () => {
  const refused: Array<[string, string, string | undefined, string | Buffer]> = [
    ['an escaped "model" key', CHAT, JSON_TYPE, `{"mode\\u006c":"llama-3.2-3b",${MESSAGES}}`],
    ['an escaped key before a plain one', CHAT, JSON_TYPE, `{"mod\\u0065l":"llama-3.2-3b","model":"qwen",${MESSAGES}}`],
    ['a plain key before an escaped one', CHAT, JSON_TYPE, `{"model":"qwen","mod\\u0065l":"llama-3.2-3b",${MESSAGES}}`],
    ['duplicate model keys', CHAT, JSON_TYPE, `{"model":"qwen","model":"llama-3.2-3b",${MESSAGES}}`],
    ['a byte order mark and an escaped key', CHAT, JSON_TYPE, `\ufeff{"mod\\u0065l":"llama-3.2-3b",${MESSAGES}}`],
    ['no model at all', CHAT, JSON_TYPE, `{${MESSAGES}}`],
    ['a number as the model', CHAT, JSON_TYPE, `{"model":3,${MESSAGES}}`],
    ['a truncated body', CHAT, JSON_TYPE, `{"model":"qwen",${MESSAGES}`],
    ['broken JSON after the model', CHAT, JSON_TYPE, `{"model":"qwen",${MESSAGES},}`],
    [
      'the query and the form disagreeing',
      '/v1/audio/transcriptions?model=qwen',
      'multipart/form-data; boundary=b0',
      multipartBody('b0', [['model', 'llama-3.2-3b']]),
    ],
    [
      'the form and the query disagreeing',
      '/v1/audio/transcriptions?model=llama-3.2-3b',
      'multipart/form-data; boundary=b0',
      multipartBody('b0', [['model', 'qwen']]),
    ],
    [
      'an escaped urlencoded field before a plain one',
      CHAT,
      'application/x-www-form-urlencoded',
      'mod%65l=llama-3.2-3b&model=qwen',
    ],
    ['a JSON body sent as text/plain', CHAT, 'text/plain', `{"model":"qwen",${MESSAGES}}`],
  ];
  for (const [name, path, type, body] of refused) {
    it(`refuses ${name} with 403 model_required or model_not_allowed, and llama-swap never sees it`, async () => {
      const before = sim.received.length;
      const res = await call(qwenOnly, path, type, body);
      expect(res.status).toBe(403);
      expect((json(res.body) as { error: { code: string } }).error.code).toMatch(/^model_(required|not_allowed)$/);
      // The gateway may have read llama-swap's model list; the call itself never went through.
      expect(sim.received.slice(before).filter((r) => r.path !== '/v1/models')).toEqual([]);
    });
  }

  it('refuses a percent-escaped path, which llama-swap would route as /v1/models, before anything is forwarded', async () => {
    for (const path of ['/v1/%6dodels?model=qwen', '/v1/model%73?model=qwen', '/v1//models?model=qwen']) {
      const before = sim.received.length;
      const res = await call(qwenOnly, path, undefined, undefined, 'GET');
      expect(res.status, path).toBe(403);
      expect(
        sim.received.slice(before).filter((r) => r.path !== '/v1/models'),
        path,
      ).toEqual([]);
    }
  });

  it('refuses a multipart body that hides a second model behind an empty part, as Go reads it', async () => {
    const body = Buffer.from(
      '--b2\r\nContent-Disposition: form-data; name="x"\r\n\r\n--b2\r\nContent-Disposition: form-data; ' +
        'name="model"\r\n\r\nllama-3.2-3b\r\n' +
        '--b2\r\nContent-Disposition: form-data; name="model"\r\n\r\nqwen\r\n--b2--\r\n',
    );
    const before = sim.received.length;
    const res = await call(qwenOnly, '/v1/audio/transcriptions', 'multipart/form-data; boundary=b2', body);
    expect(res.status).toBe(403);
    expect(sim.received.slice(before).filter((r) => r.path !== '/v1/models')).toEqual([]);
  });

  it('refuses the llama-3.2-3b escape in the Anthropic wire format for /v1/messages', async () => {
    const res = await call(
      qwenOnly,
      '/v1/messages',
      JSON_TYPE,
      `{"mod\\u0065l":"llama-3.2-3b","max_tokens":5,${MESSAGES}}`,
    );
    expect(res.status).toBe(403);
    expect(json(res.body)).toMatchObject({ type: 'error', error: { type: 'permission_error' } });
  });

  it('may call qwen by its model id and by its other alias, and by escapes that still read qwen', async () => {
    for (const model of ['qwen', 'qwen3-8b', 'gpt-4o-mini', 'q\\u0077en']) {
      const res = await call(qwenOnly, CHAT, JSON_TYPE, `{"model":"${model}",${MESSAGES}}`);
      expect(res.status, model).toBe(200);
      expect(sim.received.at(-1)?.model).toBe(model.replace('\\u0077', 'w'));
    }
  });

  it('may send a multipart upload naming qwen in the form only', async () => {
    const res = await call(
      qwenOnly,
      '/v1/audio/transcriptions',
      'multipart/form-data; boundary=b1',
      multipartBody('b1', [
        ['model', 'qwen'],
        ['file', 'RIFF....'],
      ]),
    );
    expect(res.status).not.toBe(403);
    expect(sim.received.at(-1)?.model).toBe('qwen');
  });

  it('sees exactly the models it may call on /v1/models', async () => {
    const res = await call(qwenOnly, '/v1/models', undefined, undefined, 'GET');
    expect(res.status).toBe(200);
    expect((json(res.body) as { data: Array<{ id: string }> }).data.map((m) => m.id)).toEqual(['qwen3-8b']);
  });
});

describe('a key allowed patterns', () => {
  it('may call the models and peer models a pattern matches, and their aliases', async () => {
    for (const model of ['qwen3-8b', 'qwen', 'gpu-box/llama-3.3-70b']) {
      const before = sim.received.length;
      const res = await call(byPattern, CHAT, JSON_TYPE, `{"model":"${model}",${MESSAGES}}`);
      expect(res.status, model).not.toBe(403);
      expect(sim.received.slice(before).filter((r) => r.path === CHAT).length, model).toBe(1);
    }
  });

  it('may not call a model no pattern matches, nor an unlisted model', async () => {
    for (const model of ['llama-3.2-3b', 'secret-experiment', 'qwen3-unknown']) {
      const res = await call(byPattern, CHAT, JSON_TYPE, `{"model":"${model}",${MESSAGES}}`);
      expect(res.status, model).toBe(403);
    }
  });

  it('lists the matched models and peer models on /v1/models', async () => {
    const res = await call(byPattern, '/v1/models', undefined, undefined, 'GET');
    expect((json(res.body) as { data: Array<{ id: string }> }).data.map((m) => m.id).sort()).toEqual([
      'gpu-box/llama-3.3-70b',
      'qwen3-8b',
    ]);
  });
});
