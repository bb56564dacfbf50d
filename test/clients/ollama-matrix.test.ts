/**
 * Ollama clients in the client matrix (see matrix.ts): the official `ollama` npm client and
 * LangChain's `@langchain/ollama`, each used the way its documentation shows, with Gatehouse's
 * key in the Authorization header, through the Ollama door (GATEHOUSE_OLLAMA_LISTEN) in front of
 * the simulator, which speaks only OpenAI.
 */
import { tool } from '@langchain/core/tools';
import { ChatOllama, OllamaEmbeddings } from '@langchain/ollama';
import { Ollama, type Message, type Tool } from 'ollama';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { embedding } from '../fakes/llama-swap/index.js';
import { adminApi } from '../usage/usage-helpers.js';
import {
  ANSWER,
  CHAT_MODEL,
  ClientMatrix,
  EMBEDDING_MODEL,
  OLLAMA_CELLS,
  REFUSED_MODEL,
  SLOW,
  startStack,
  TOKENS,
  type Stack,
} from './matrix.js';

let stack: Stack;
beforeAll(async () => {
  stack = await startStack({}, { ollama: true });
});
afterAll(async () => {
  await stack?.close();
});

const matrix = new ClientMatrix('Ollama client matrix', it, OLLAMA_CELLS);
const ASK: Message[] = [{ role: 'user', content: 'What is the weather in Lyon?' }];
const CITY = { type: 'object' as const, properties: { city: { type: 'string' as const } }, required: ['city'] };
const SCHEMA = { type: 'object', properties: { sky: { type: 'string' } }, required: ['sky'] };
const WEATHER: Tool = {
  type: 'function',
  function: {
    name: 'get_weather',
    description: 'Weather of a city',
    parameters: CITY,
  },
};
const TEXT = 'hello gatehouse';
/** What the simulator's tool call asks for: its arguments come from the tool's schema. */
const TOOL_ARGS = { city: 'alpha' };
const SKY = '{"sky":"clear"}';

/** What the gateway sent llama-swap for the key's latest call, from the captured request body. */
async function lastSent(): Promise<Record<string, unknown>> {
  const record = (await stack.calls()).at(-1)!;
  const res = await adminApi(stack.gateway, 'GET', `/api/usage/requests/${record.id}`);
  const { request } = JSON.parse(res.body.toString()) as { request: { requestBody: string } };
  return JSON.parse(request.requestBody) as Record<string, unknown>;
}

/** The client leaves a slow stream after a few pieces: llama-swap sees the abort, Gatehouse records it. */
async function abortCell(streamAndLeave: () => Promise<void>): Promise<void> {
  const knobs = { ...stack.sim.knobs };
  Object.assign(stack.sim.knobs, SLOW);
  try {
    const before = (await stack.calls()).length;
    stack.sim.clearReceived();
    await streamAndLeave();
    await stack.sim.waitForAbort((r) => r.path === '/v1/chat/completions', 5000);
    const [call] = (await stack.waitForCalls((calls) => calls.length > before)).slice(before);
    expect(call).toMatchObject({
      endpoint: '/api/chat',
      streamed: true,
      clientAborted: true,
      errorClass: 'client_abort',
    });
  } finally {
    Object.assign(stack.sim.knobs, knobs);
  }
}

// --- ollama (npm) ---------------------------------------------------------------------------
const OLLAMA = 'ollama (npm)';
const ollama = (secret = stack.key.secret) =>
  new Ollama({ host: stack.ollamaUrl!, headers: { Authorization: `Bearer ${secret}` } });

matrix.cell(OLLAMA, 'chat', async () => {
  const res = await ollama().chat({ model: CHAT_MODEL, messages: ASK });
  expect(res.message).toEqual({ role: 'assistant', content: ANSWER });
  expect(res).toMatchObject({ done: true, done_reason: 'stop', eval_count: TOKENS });
});

matrix.cell(OLLAMA, 'stream', async () => {
  const parts = [];
  for await (const part of await ollama().chat({ model: CHAT_MODEL, messages: ASK, stream: true })) parts.push(part);
  expect(parts.map((p) => p.message.content).join('')).toBe(ANSWER);
  expect(parts.at(-1)).toMatchObject({ done: true, eval_count: TOKENS });
  expect((await stack.calls()).at(-1)).toMatchObject({ endpoint: '/api/chat', status: 200, streamed: true });
});

matrix.cell(OLLAMA, 'tools', async () => {
  const ran: unknown[] = [];
  const tools = { get_weather: (args: unknown) => (ran.push(args), SKY) };
  const first = await ollama().chat({ model: CHAT_MODEL, messages: ASK, tools: [WEATHER] });
  const calls = first.message.tool_calls ?? [];
  expect(calls.map((c) => c.function.name)).toEqual(['get_weather']);
  const results: Message[] = calls.map((c) => ({
    role: 'tool',
    tool_name: c.function.name,
    content: tools[c.function.name as keyof typeof tools](c.function.arguments),
  }));
  const second = await ollama().chat({
    model: CHAT_MODEL,
    messages: [...ASK, first.message, ...results],
    tools: [WEATHER],
  });
  // The tool that ran is the one declared, with the arguments the model gave; its result went back.
  expect(ran).toEqual([TOOL_ARGS]);
  expect((await lastSent()).messages).toEqual(
    expect.arrayContaining([expect.objectContaining({ role: 'tool', content: SKY })]),
  );
  expect(second.message.content).toBe(ANSWER);
});

matrix.cell(OLLAMA, 'format schema', async () => {
  const res = await ollama().chat({ model: CHAT_MODEL, messages: ASK, format: SCHEMA });
  expect(res.message.content).toBe(ANSWER);
  expect((await lastSent()).response_format).toEqual({
    type: 'json_schema',
    json_schema: { name: 'response', schema: SCHEMA },
  });
});

matrix.cell(OLLAMA, 'embed', async () => {
  const res = await ollama().embed({ model: EMBEDDING_MODEL, input: [TEXT, 'c'] });
  expect(res.embeddings).toEqual([embedding(EMBEDDING_MODEL, TEXT), embedding(EMBEDDING_MODEL, 'c')]);
});

matrix.cell(OLLAMA, 'list', async () => {
  const all = (await ollama().list()).models.map((m) => m.name);
  expect(all).toEqual(expect.arrayContaining([`${CHAT_MODEL}:latest`, `${EMBEDDING_MODEL}:latest`]));
  const only = (await ollama(stack.restrictedKey.secret).list()).models.map((m) => m.name);
  expect(only).toEqual([`${CHAT_MODEL}:latest`]);
});

matrix.cell(OLLAMA, 'ps', async () => {
  await ollama().chat({ model: CHAT_MODEL, messages: ASK });
  const loaded = (await ollama().ps()).models;
  expect(loaded.map((m) => m.name)).toContain(`${CHAT_MODEL}:latest`);
  expect(loaded.find((m) => m.name === `${CHAT_MODEL}:latest`)).toMatchObject({ size: 0, context_length: 32768 });
});

matrix.cell(OLLAMA, 'show', async () => {
  const show = await ollama().show({ model: CHAT_MODEL });
  expect(show.capabilities).toEqual(['completion', 'tools']);
  expect(show.model_info).toMatchObject({ 'qwen3.context_length': 32768 });
});

matrix.cell(OLLAMA, 'bad key', async () => {
  const error = await ollama('sk-not-a-key')
    .chat({ model: CHAT_MODEL, messages: ASK })
    .catch((e: unknown) => e);
  expect(error).toMatchObject({ name: 'ResponseError', status_code: 401 });
  expect((error as Error).message).toMatch(/Invalid API key/);
});

matrix.cell(OLLAMA, 'model not allowed', async () => {
  const error = await ollama(stack.restrictedKey.secret)
    .chat({ model: REFUSED_MODEL, messages: ASK })
    .catch((e: unknown) => e);
  expect(error).toMatchObject({ name: 'ResponseError', status_code: 403 });
  expect((error as Error).message).toContain(REFUSED_MODEL);
});

matrix.cell(OLLAMA, 'abort', () =>
  abortCell(async () => {
    const stream = await ollama().chat({ model: CHAT_MODEL, messages: ASK, stream: true });
    let parts = 0;
    await (async () => {
      for await (const _ of stream) if (++parts === 3) stream.abort();
    })().catch((e: unknown) => expect((e as Error).name).toBe('AbortError'));
    expect(parts).toBe(3);
  }),
);

// --- @langchain/ollama ----------------------------------------------------------------------
const LANGCHAIN = '@langchain/ollama';
const chatOllama = (secret = stack.key.secret, model = CHAT_MODEL) =>
  new ChatOllama({ baseUrl: stack.ollamaUrl!, model, headers: { Authorization: `Bearer ${secret}` } });

matrix.cell(LANGCHAIN, 'chat', async () => {
  expect((await chatOllama().invoke('What is the weather in Lyon?')).content).toBe(ANSWER);
});

matrix.cell(LANGCHAIN, 'stream', async () => {
  const pieces: string[] = [];
  for await (const chunk of await chatOllama().stream('What is the weather in Lyon?'))
    pieces.push(String(chunk.content));
  expect(pieces.join('')).toBe(ANSWER);
  expect(pieces.filter((p) => p !== '').length).toBe(TOKENS);
});

matrix.cell(LANGCHAIN, 'tools', async () => {
  // The loop LangChain's docs show: bindTools, run each tool call, send its ToolMessage back.
  const ran: unknown[] = [];
  const weather = tool((args) => (ran.push(args), SKY), {
    name: 'get_weather',
    description: 'Weather of a city',
    schema: CITY,
  });
  const model = chatOllama().bindTools([weather]);
  const first = await model.invoke('What is the weather in Lyon?');
  expect(first.tool_calls?.map((c) => c.name)).toEqual(['get_weather']);
  const results = await Promise.all(first.tool_calls!.map((c) => weather.invoke(c)));
  const second = await model.invoke(['What is the weather in Lyon?', first, ...results]);
  expect(ran).toEqual([TOOL_ARGS]);
  expect((await lastSent()).messages).toEqual(
    expect.arrayContaining([expect.objectContaining({ role: 'tool', content: SKY })]),
  );
  expect(second.content).toBe(ANSWER);
});

matrix.cell(LANGCHAIN, 'format schema', async () => {
  const res = await new ChatOllama({
    baseUrl: stack.ollamaUrl!,
    model: CHAT_MODEL,
    format: SCHEMA,
    headers: { Authorization: `Bearer ${stack.key.secret}` },
  }).invoke('What is the weather in Lyon?');
  expect(res.content).toBe(ANSWER);
  expect((await lastSent()).response_format).toEqual({
    type: 'json_schema',
    json_schema: { name: 'response', schema: SCHEMA },
  });
});

matrix.cell(LANGCHAIN, 'embed', async () => {
  const embeddings = new OllamaEmbeddings({
    baseUrl: stack.ollamaUrl!,
    model: EMBEDDING_MODEL,
    headers: { Authorization: `Bearer ${stack.key.secret}` },
  });
  expect(await embeddings.embedQuery(TEXT)).toEqual(embedding(EMBEDDING_MODEL, TEXT));
});

for (const cell of ['list', 'ps', 'show'] as const)
  matrix.notApplicable(LANGCHAIN, cell, 'LangChain wraps chat and embeddings only: it has no list, ps or show');

matrix.cell(LANGCHAIN, 'bad key', async () => {
  const error = await chatOllama('sk-not-a-key')
    .invoke('hi')
    .catch((e: unknown) => e);
  expect(error).toMatchObject({ status_code: 401 });
  expect(String(error)).toMatch(/Invalid API key/);
});

matrix.cell(LANGCHAIN, 'model not allowed', async () => {
  const error = await chatOllama(stack.restrictedKey.secret, REFUSED_MODEL)
    .invoke('hi')
    .catch((e: unknown) => e);
  expect(error).toMatchObject({ status_code: 403 });
  expect(String(error)).toContain(REFUSED_MODEL);
});

// ChatOllama 0.2 reads its signal only when the next piece arrives and LangChain's stream stops
// pulling once aborted, so the HTTP request stays open until the answer ends: nothing to pass on.
matrix.notApplicable(
  LANGCHAIN,
  'abort',
  'ChatOllama 0.2.4 never closes its request on abort: it checks the signal only on the next piece, ' +
    "which LangChain's stream no longer reads",
);
