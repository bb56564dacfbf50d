/**
 * The Ollama door (docs/ollama.md) through the official `ollama` npm client: a gateway with
 * GATEHOUSE_OLLAMA_LISTEN on, in front of the simulator, which speaks only OpenAI.
 */
import { ChatOllama } from '@langchain/ollama';
import { Ollama, type Message } from 'ollama';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { completionText, DEMO_CONFIG, embedding, startSimulator, type Simulator } from '../fakes/llama-swap/index.js';
import type { TestGateway } from '../helpers/gateway.js';
import { rawRequest } from '../helpers/http.js';
import { adminApi, createKey, listRequests, startUsageGateway } from '../usage/usage-helpers.js';
import type { Settings } from '../../src/settings/index.js';
import { openUpstream } from '../../src/management-client/open-upstream.js';

const CHAT_MODEL = 'qwen3-8b';
const REFUSED_MODEL = 'llama-3.2-3b';
const EMBEDDING_MODEL = 'nomic-embed';
const TOKENS = 6;
const ANSWER = completionText(CHAT_MODEL, TOKENS);
const ASK: Message[] = [{ role: 'user', content: 'What is the weather in Lyon?' }];
const WEATHER = {
  type: 'function',
  function: {
    name: 'get_weather',
    description: 'Weather of a city',
    parameters: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] },
  },
};

interface Door {
  sim: Simulator;
  gateway: TestGateway;
  url: string;
  close(): Promise<void>;
}

async function startDoor(overrides: Partial<Settings> = {}): Promise<Door> {
  const sim = await startSimulator({ config: DEMO_CONFIG, knobs: { tokens: TOKENS } });
  // As `gatehouse serve` wires it: the model list comes from llama-swap's client.
  const models = openUpstream({ kind: 'llama-swap', baseUrl: new URL(sim.url) });
  const gateway = await startUsageGateway(
    sim.url,
    { ollamaListen: { host: '127.0.0.1', port: 0 }, usageCaptureBytes: 4096, ...overrides },
    { listModels: () => models.models() },
  );
  const url = await gateway.app.listenOllama(0, '127.0.0.1')!;
  return {
    sim,
    gateway,
    url,
    async close() {
      await gateway.close();
      await models.close();
      await sim.close();
    },
  };
}

async function recordsOf(gateway: TestGateway, keyId: string) {
  return (await listRequests(gateway, `key=${keyId}&limit=500`)).requests.toReversed();
}

async function waitForRecords(gateway: TestGateway, keyId: string, count: number) {
  for (let i = 0; i < 200; i++) {
    const records = await recordsOf(gateway, keyId);
    if (records.length >= count) return records;
    await new Promise((r) => setTimeout(r, 25));
  }
  throw new Error(`fewer than ${count} calls recorded`);
}

describe('the Ollama door with a key', () => {
  let door: Door;
  let key: { id: string; secret: string };
  let restricted: { id: string; secret: string };
  let manager: { id: string; secret: string };
  const client = (secret = key.secret) =>
    new Ollama({ host: door.url, headers: { Authorization: `Bearer ${secret}` } });

  beforeAll(async () => {
    door = await startDoor();
    key = await createKey(door.gateway, { name: 'ollama' });
    restricted = await createKey(door.gateway, { name: 'ollama-restricted', models: [CHAT_MODEL] });
    manager = await createKey(door.gateway, { name: 'ollama-manager', manage: true });
  });
  afterAll(async () => {
    await door?.close();
  });

  it('says Ollama is running at its root, and its version', async () => {
    const root = await rawRequest(`${door.url}/`);
    expect(root.status).toBe(200);
    expect(root.body.toString()).toBe('Ollama is running');
    expect((await client().version()).version).toMatch(/^\d+\.\d+\.\d+$/);
  });

  it('answers a chat with the model text and records it as /api/chat with its tokens', async () => {
    const res = await client().chat({ model: CHAT_MODEL, messages: ASK });
    expect(res.message).toEqual({ role: 'assistant', content: ANSWER });
    expect(res).toMatchObject({ model: CHAT_MODEL, done: true, done_reason: 'stop', eval_count: TOKENS });
    expect(res.prompt_eval_count).toBeGreaterThan(0);
    const [record] = (await waitForRecords(door.gateway, key.id, 1)).slice(-1);
    expect(record).toMatchObject({ endpoint: '/api/chat', model: CHAT_MODEL, status: 200, outputTokens: TOKENS });
  });

  it('streams a chat as NDJSON pieces ending with a done object carrying the counts', async () => {
    const stream = await client().chat({ model: `${CHAT_MODEL}:latest`, messages: ASK, stream: true });
    const parts = [];
    for await (const part of stream) parts.push(part);
    expect(parts.map((p) => p.message.content).join('')).toBe(ANSWER);
    expect(parts.slice(0, -1).every((p) => !p.done)).toBe(true);
    expect(parts.at(-1)).toMatchObject({
      done: true,
      done_reason: 'stop',
      eval_count: TOKENS,
      model: `${CHAT_MODEL}:latest`,
    });
    expect(parts.at(-1)!.eval_duration).toBeGreaterThan(0);
  });

  it('returns the tool call with its arguments as an object, and answers the tool result in text', async () => {
    const first = await client().chat({ model: CHAT_MODEL, messages: ASK, tools: [WEATHER] });
    const calls = first.message.tool_calls ?? [];
    expect(calls.map((c) => [c.function.name, c.function.arguments])).toEqual([['get_weather', { city: 'alpha' }]]);
    const second = await client().chat({
      model: CHAT_MODEL,
      messages: [...ASK, first.message, { role: 'tool', content: '{"sky":"clear"}', tool_name: 'get_weather' }],
      tools: [WEATHER],
    });
    expect(second.message.content).toBe(ANSWER);
    expect(second.message.tool_calls ?? []).toEqual([]);
  });

  it('streams a tool call as one piece before the done object', async () => {
    const stream = await client().chat({ model: CHAT_MODEL, messages: ASK, tools: [WEATHER], stream: true });
    const calls = [];
    for await (const part of stream) calls.push(...(part.message.tool_calls ?? []));
    expect(calls.map((c) => [c.function.name, c.function.arguments])).toEqual([['get_weather', { city: 'alpha' }]]);
  });

  it('sends a format schema as response_format json_schema', async () => {
    const schema = { type: 'object', properties: { sky: { type: 'string' } }, required: ['sky'] };
    const res = await client().chat({ model: CHAT_MODEL, messages: ASK, format: schema });
    expect(res.message.content).toBe(ANSWER);
    const record = (await waitForRecords(door.gateway, key.id, 1)).at(-1)!;
    const detail = await adminApi(door.gateway, 'GET', `/api/usage/requests/${record.id}`);
    const found = JSON.parse(detail.body.toString()) as { request: { requestBody: string } };
    const sent = JSON.parse(found.request.requestBody) as Record<string, unknown>;
    expect(sent.response_format).toEqual({ type: 'json_schema', json_schema: { name: 'response', schema } });
    expect(sent).toMatchObject({ model: CHAT_MODEL, stream: false });
  });

  it('generates from a prompt, streamed and whole', async () => {
    const whole = await client().generate({ model: CHAT_MODEL, prompt: 'Say hello', system: 'Be brief' });
    expect(whole).toMatchObject({ response: ANSWER, done: true, eval_count: TOKENS });
    const stream = await client().generate({ model: CHAT_MODEL, prompt: 'Say hello', stream: true });
    let text = '';
    for await (const part of stream) text += part.response;
    expect(text).toBe(ANSWER);
  });

  it('embeds a string and an array, and answers the older /api/embeddings', async () => {
    const one = await client().embed({ model: EMBEDDING_MODEL, input: 'hello gatehouse' });
    expect(one.embeddings).toEqual([embedding(EMBEDDING_MODEL, 'hello gatehouse')]);
    const two = await client().embed({ model: EMBEDDING_MODEL, input: ['a b', 'c'] });
    expect(two.embeddings).toEqual([embedding(EMBEDDING_MODEL, 'a b'), embedding(EMBEDDING_MODEL, 'c')]);
    const legacy = await client().embeddings({ model: EMBEDDING_MODEL, prompt: 'hello gatehouse' });
    expect(legacy.embedding).toEqual(embedding(EMBEDDING_MODEL, 'hello gatehouse'));
  });

  it('lists the models a key may call, with :latest added to untagged IDs', async () => {
    const all = (await client().list()).models.map((m) => m.name);
    expect(all).toEqual(
      expect.arrayContaining([`${CHAT_MODEL}:latest`, `${REFUSED_MODEL}:latest`, `${EMBEDDING_MODEL}:latest`]),
    );
    const only = (await client(restricted.secret).list()).models;
    expect(only.map((m) => m.name)).toEqual([`${CHAT_MODEL}:latest`]);
    expect(only[0]).toMatchObject({ size: 0, details: { family: 'qwen3', format: 'gguf' } });
  });

  it('shows capabilities and the context length from llama-swap metadata', async () => {
    const show = await client().show({ model: CHAT_MODEL });
    expect(show.capabilities).toEqual(['completion', 'tools']);
    expect(show.model_info).toMatchObject({ 'general.architecture': 'qwen3', 'qwen3.context_length': 32768 });
  });

  it('lists the loaded models the key may see in ps', async () => {
    await client().chat({ model: CHAT_MODEL, messages: ASK });
    const names = (await client().ps()).models.map((m) => m.name);
    expect(names).toContain(`${CHAT_MODEL}:latest`);
  });

  it('refuses a wrong key with 401, a model outside the list with 403 and an unknown model with 404', async () => {
    const wrong = await client('sk-not-a-key')
      .list()
      .catch((e: unknown) => e);
    expect(wrong).toMatchObject({ status_code: 401 });
    const refused = await client(restricted.secret)
      .chat({ model: REFUSED_MODEL, messages: ASK })
      .catch((e: unknown) => e);
    expect(refused).toMatchObject({ status_code: 403 });
    const unknown = await client()
      .chat({ model: 'nope', messages: ASK })
      .catch((e: unknown) => e);
    expect(unknown).toMatchObject({ status_code: 404, error: "model 'nope' not found" });
    const res = await rawRequest(`${door.url}/api/tags`);
    expect(res.status).toBe(401);
    expect(Object.keys(JSON.parse(res.body.toString()) as object)).toEqual(['error']);
  });

  it('serves LangChain ChatOllama: a chat, a stream and a refused key', async () => {
    const chat = (secret: string) =>
      new ChatOllama({ baseUrl: door.url, model: CHAT_MODEL, headers: { Authorization: `Bearer ${secret}` } });
    expect((await chat(key.secret).invoke('What is the weather in Lyon?')).content).toBe(ANSWER);
    let text = '';
    for await (const chunk of await chat(key.secret).stream('What is the weather in Lyon?'))
      text += String(chunk.content);
    expect(text).toBe(ANSWER);
    const refused = await chat('sk-wrong')
      .invoke('hi')
      .catch((e: unknown) => e);
    expect(String(refused)).toMatch(/Invalid API key/);
  });

  it('answers 501 to model management, which lives in llama-swap config', async () => {
    const ollama = client();
    const calls = {
      pull: () => ollama.pull({ model: CHAT_MODEL }),
      push: () => ollama.push({ model: CHAT_MODEL }),
      create: () => ollama.create({ model: 'mine', from: CHAT_MODEL }),
      copy: () => ollama.copy({ source: CHAT_MODEL, destination: 'mine' }),
      delete: () => ollama.delete({ model: CHAT_MODEL }),
    };
    for (const [name, call] of Object.entries(calls)) {
      const error = await call().catch((e: unknown) => e);
      expect(error, name).toMatchObject({ status_code: 501 });
      expect((error as Error).message, name).toMatch(/llama-swap's config/);
    }
  });

  it('loads and unloads with an empty prompt only for a key with the manage scope', async () => {
    const refused = await client()
      .generate({ model: REFUSED_MODEL, prompt: '' })
      .catch((e: unknown) => e);
    expect(refused).toMatchObject({ status_code: 403 });
    const loaded = await client(manager.secret).generate({ model: REFUSED_MODEL, prompt: '' });
    expect(loaded).toMatchObject({ done: true, done_reason: 'load' });
    expect(door.sim.running().map((r) => r.model)).toContain(REFUSED_MODEL);
    const unloaded = await client(manager.secret).generate({ model: REFUSED_MODEL, prompt: '', keep_alive: 0 });
    expect(unloaded).toMatchObject({ done: true, done_reason: 'unload' });
    expect(door.sim.running().map((r) => r.model)).not.toContain(REFUSED_MODEL);
  });

  it('passes the client leaving mid-stream on to llama-swap and records the abort', async () => {
    Object.assign(door.sim.knobs, { tokens: 400, tokensPerSecond: 20 });
    try {
      const before = (await recordsOf(door.gateway, key.id)).length;
      const ollama = client();
      const stream = await ollama.chat({ model: CHAT_MODEL, messages: ASK, stream: true });
      let parts = 0;
      await (async () => {
        for await (const _ of stream) if (++parts === 3) stream.abort();
      })().catch((e: unknown) => expect((e as Error).name).toBe('AbortError'));
      expect(parts).toBe(3);
      await door.sim.waitForAbort((r) => r.path === '/v1/chat/completions', 5000);
      const records = await waitForRecords(door.gateway, key.id, before + 1);
      expect(records.at(-1)).toMatchObject({ endpoint: '/api/chat', clientAborted: true, errorClass: 'client_abort' });
    } finally {
      Object.assign(door.sim.knobs, { tokens: TOKENS, tokensPerSecond: 0 });
    }
  });
});

describe('limits, budgets and the queue through the Ollama door', () => {
  let door: Door;
  afterAll(async () => {
    await door?.close();
  });

  it('applies a key rpm limit (429 with Retry-After) and a request budget', async () => {
    door = await startDoor();
    const rpm = await createKey(door.gateway, { name: 'ollama-rpm', limits: { rpm: 1 } });
    const budget = await createKey(door.gateway, { name: 'ollama-budget', budget: { requests: 1, period: 'day' } });
    for (const [k, code] of [
      [rpm, /Rate limit/],
      [budget, /budget/],
    ] as const) {
      const call = () =>
        rawRequest(`${door.url}/api/chat`, {
          method: 'POST',
          headers: { authorization: `Bearer ${k.secret}`, 'content-type': 'application/json' },
          body: JSON.stringify({ model: CHAT_MODEL, messages: ASK, stream: false }),
        });
      expect((await call()).status).toBe(200);
      const second = await call();
      expect(second.status).toBe(429);
      expect(second.headers['retry-after']).toMatch(/^\d+$/);
      expect((JSON.parse(second.body.toString()) as { error: string }).error).toMatch(code);
    }
  });
});

describe('the admission queue through the Ollama door', () => {
  let door: Door;
  afterAll(async () => {
    await door?.close();
  });

  it('answers 503 queue_full in Ollama shape when the one slot is taken and nothing may wait', async () => {
    door = await startDoor({ maxInflight: 1, queueMax: 0 });
    const key = await createKey(door.gateway, { name: 'ollama-queue' });
    Object.assign(door.sim.knobs, { tokens: 400, tokensPerSecond: 20 });
    const ollama = new Ollama({ host: door.url, headers: { Authorization: `Bearer ${key.secret}` } });
    const holding = await ollama.chat({ model: CHAT_MODEL, messages: ASK, stream: true });
    const iterator = holding[Symbol.asyncIterator]();
    await iterator.next();
    const refused = await ollama.chat({ model: CHAT_MODEL, messages: ASK }).catch((e: unknown) => e);
    expect(refused).toMatchObject({ status_code: 503 });
    expect((refused as Error).message).toMatch(/waiting for the models/);
    holding.abort();
    await iterator.next().catch(() => undefined);
  });
});

describe('keyless Ollama clients', () => {
  let door: Door;
  afterAll(async () => {
    await door?.close();
  });

  it('act as GATEHOUSE_OLLAMA_KEY, while a wrong key is still refused', async () => {
    door = await startDoor({ ollamaKey: 'home-assistant' });
    const key = await createKey(door.gateway, { name: 'home-assistant', models: [CHAT_MODEL] });
    const keyless = new Ollama({ host: door.url });
    const res = await keyless.chat({ model: CHAT_MODEL, messages: ASK });
    expect(res.message.content).toBe(ANSWER);
    expect((await keyless.list()).models.map((m) => m.name)).toEqual([`${CHAT_MODEL}:latest`]);
    const refused = await keyless.chat({ model: REFUSED_MODEL, messages: ASK }).catch((e: unknown) => e);
    expect(refused).toMatchObject({ status_code: 403 });
    const wrong = await new Ollama({ host: door.url, headers: { Authorization: 'Bearer sk-wrong' } })
      .list()
      .catch((e: unknown) => e);
    expect(wrong).toMatchObject({ status_code: 401 });
    const records = await waitForRecords(door.gateway, key.id, 1);
    expect(records[0]).toMatchObject({ endpoint: '/api/chat', status: 200, outputTokens: TOKENS });
  });

  it('sends llama-swap JSON whatever type the client declared, so a form field in a prompt names no model', async () => {
    const before = door.sim.received.length;
    const res = await rawRequest(`${door.url}/api/generate`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: JSON.stringify({ model: CHAT_MODEL, stream: false, prompt: `&model=${REFUSED_MODEL}&` }),
    });
    expect(res.status, res.body.toString()).toBe(200);
    const sent = door.sim.received.slice(before).filter((r) => r.method === 'POST');
    expect(sent.map((r) => [r.model, r.headers['content-type']])).toEqual([[CHAT_MODEL, 'application/json']]);
  });

  it('judges a call by any credential header it sends, and never lets a browser act as the keyless key', async () => {
    const list = (headers: Record<string, string>) => rawRequest(`${door.url}/api/tags`, { headers });
    const refusedHeaders: Record<string, string>[] = [
      { authorization: 'Basic dXNlcjpwYXNz' },
      { authorization: 'Bearer' },
      { 'x-api-key': '' },
      { origin: 'http://attacker.example' },
      { 'sec-fetch-site': 'same-origin' },
    ];
    for (const headers of refusedHeaders) {
      const res = await list(headers);
      expect(res.status, JSON.stringify(headers)).toBe(401);
      expect(JSON.parse(res.body.toString())).toEqual({ error: expect.any(String) });
    }
    expect((await list({})).status).toBe(200);
  });

  it('get 401 without GATEHOUSE_OLLAMA_KEY once a key exists', async () => {
    const other = await startDoor();
    try {
      await createKey(other.gateway, { name: 'someone' });
      const error = await new Ollama({ host: other.url }).list().catch((e: unknown) => e);
      expect(error).toMatchObject({ status_code: 401 });
    } finally {
      await other.close();
    }
  });
});
