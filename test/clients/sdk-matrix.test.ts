/**
 * The official SDKs in the client matrix (see matrix.ts): each cell is the SDK used the way its
 * documentation shows, with Gatehouse's key, against the simulator.
 */
import Anthropic from '@anthropic-ai/sdk';
import { betaTool } from '@anthropic-ai/sdk/helpers/beta/json-schema';
import { createOpenAICompatible } from '@ai-sdk/openai-compatible';
import type { AIMessageChunk, BaseMessageLike } from '@langchain/core/messages';
import type { Runnable } from '@langchain/core/runnables';
import { tool } from '@langchain/core/tools';
import { ChatOpenAI, OpenAIClient, OpenAIEmbeddings } from '@langchain/openai';
import { APICallError, embed, generateText, jsonSchema, stepCountIs, streamText, tool as aiTool } from 'ai';
import OpenAI from 'openai';
import { afterAll, beforeAll, expect } from 'vitest';
import { completionPieces, embedding } from '../fakes/llama-swap/index.js';
import {
  ANSWER,
  CHAT_MODEL,
  ClientMatrix,
  EMBEDDING_MODEL,
  REFUSED_MODEL,
  SLOW,
  startStack,
  TOKENS,
  type Stack,
} from './matrix.js';

let stack: Stack;
beforeAll(async () => {
  stack = await startStack();
});
afterAll(async () => {
  await stack?.close();
});

const matrix = new ClientMatrix('SDK client matrix');
const ASK = [{ role: 'user' as const, content: 'What is the weather in Lyon?' }];
const CITY = { type: 'object' as const, properties: { city: { type: 'string' as const } }, required: ['city'] };
const TEXT = 'hello gatehouse';

/** Runs a cancel cell: the stream is slow, the client aborts it, Gatehouse records the client leaving. */
async function cancelCell(abortMidStream: () => Promise<void>): Promise<void> {
  const knobs = { ...stack.sim.knobs };
  Object.assign(stack.sim.knobs, SLOW);
  try {
    const before = (await stack.calls()).length;
    stack.sim.clearReceived();
    await abortMidStream();
    await stack.sim.waitForAbort((r) => r.path.startsWith('/v1/'), 5000);
    const [call] = (await stack.waitForCalls((calls) => calls.length > before)).slice(before);
    expect(call).toMatchObject({ status: 200, streamed: true, clientAborted: true, errorClass: 'client_abort' });
  } finally {
    Object.assign(stack.sim.knobs, knobs);
  }
}

/** The float embedding the simulator makes for TEXT, as float32 (what base64 carries). */
const expectedEmbedding = () => Array.from(new Float32Array(embedding(EMBEDDING_MODEL, TEXT)));

// --- openai ---------------------------------------------------------------------------------
const openai = (apiKey = stack.key.secret) => new OpenAI({ baseURL: `${stack.gateway.url}/v1`, apiKey, maxRetries: 0 });

matrix.cell('openai', 'chat', async () => {
  const completion = await openai().chat.completions.create({ model: CHAT_MODEL, messages: ASK });
  expect(completion.choices[0]!.message.content).toBe(ANSWER);
});

matrix.cell('openai', 'streaming', async () => {
  const stream = await openai().chat.completions.create({ model: CHAT_MODEL, messages: ASK, stream: true });
  let text = '';
  for await (const chunk of stream) text += chunk.choices[0]?.delta?.content ?? '';
  expect(text).toBe(ANSWER);
  expect((await stack.calls()).at(-1)).toMatchObject({ status: 200, streamed: true, outputTokens: TOKENS });
});

matrix.cell('openai', 'tool round trip', async () => {
  const seen: unknown[] = [];
  const runner = openai().chat.completions.runTools({
    model: CHAT_MODEL,
    messages: ASK,
    stream: true,
    tools: [
      {
        type: 'function',
        function: {
          name: 'get_weather',
          description: 'Weather of a city',
          parameters: CITY,
          parse: JSON.parse,
          function: (args: unknown) => {
            seen.push(args);
            return '{"sky":"clear"}';
          },
        },
      },
    ],
  });
  expect(await runner.finalContent()).toBe(ANSWER);
  expect(seen).toEqual([{ city: 'alpha' }]);
});

matrix.cell('openai', 'embeddings (float)', async () => {
  const res = await openai().embeddings.create({ model: EMBEDDING_MODEL, input: TEXT, encoding_format: 'float' });
  expect(res.data[0]!.embedding).toEqual(embedding(EMBEDDING_MODEL, TEXT));
});

matrix.cell('openai', 'embeddings (base64)', async () => {
  // No encoding_format: the SDK asks for base64 and decodes it.
  const res = await openai().embeddings.create({ model: EMBEDDING_MODEL, input: TEXT });
  expect(res.data[0]!.embedding).toEqual(expectedEmbedding());
});

matrix.cell('openai', 'errors', async () => {
  const error = await openai(stack.restrictedKey.secret)
    .chat.completions.create({ model: REFUSED_MODEL, messages: ASK })
    .catch((e: unknown) => e);
  expect(error).toBeInstanceOf(OpenAI.PermissionDeniedError);
  expect((error as InstanceType<typeof OpenAI.PermissionDeniedError>).code).toBe('model_not_allowed');
});

matrix.cell('openai', 'cancel', () =>
  cancelCell(async () => {
    const controller = new AbortController();
    const stream = await openai().chat.completions.create(
      { model: CHAT_MODEL, messages: ASK, stream: true },
      { signal: controller.signal },
    );
    let chunks = 0;
    // After the abort the SDK ends the iteration, or throws its abort error.
    await (async () => {
      for await (const _ of stream) if (++chunks === 3) controller.abort();
    })().catch((e: unknown) => expect(e).toBeInstanceOf(OpenAI.APIUserAbortError));
    expect(chunks).toBe(3);
  }),
);

// --- @anthropic-ai/sdk ------------------------------------------------------------------------
const anthropic = (apiKey = stack.key.secret) => new Anthropic({ baseURL: stack.gateway.url, apiKey, maxRetries: 0 });

matrix.cell('@anthropic-ai/sdk', 'chat', async () => {
  const message = await anthropic().messages.create({ model: CHAT_MODEL, max_tokens: 64, messages: ASK });
  expect(message.content).toEqual([{ type: 'text', text: ANSWER }]);
});

matrix.cell('@anthropic-ai/sdk', 'streaming', async () => {
  const stream = anthropic().messages.stream({ model: CHAT_MODEL, max_tokens: 64, messages: ASK });
  let text = '';
  stream.on('text', (delta) => (text += delta));
  expect((await stream.finalMessage()).usage.output_tokens).toBe(TOKENS);
  expect(text).toBe(ANSWER);
  expect((await stack.calls()).at(-1)).toMatchObject({ status: 200, streamed: true, outputTokens: TOKENS });
});

matrix.cell('@anthropic-ai/sdk', 'tool round trip', async () => {
  const seen: unknown[] = [];
  const weather = betaTool({
    name: 'get_weather',
    description: 'Weather of a city',
    inputSchema: CITY,
    run: (input) => {
      seen.push(input);
      return '{"sky":"clear"}';
    },
  });
  const final = await anthropic().beta.messages.toolRunner({
    model: CHAT_MODEL,
    max_tokens: 64,
    messages: ASK,
    tools: [weather],
    stream: true,
  });
  expect(final.stop_reason).toBe('end_turn');
  expect(final.content[0]).toMatchObject({ type: 'text', text: ANSWER });
  expect(seen).toEqual([{ city: 'alpha' }]);
});

matrix.notApplicable('@anthropic-ai/sdk', 'embeddings (float)', 'the Anthropic API has no embeddings endpoint');
matrix.notApplicable('@anthropic-ai/sdk', 'embeddings (base64)', 'the Anthropic API has no embeddings endpoint');

matrix.cell('@anthropic-ai/sdk', 'errors', async () => {
  const error = await anthropic(stack.restrictedKey.secret)
    .messages.create({ model: REFUSED_MODEL, max_tokens: 8, messages: ASK })
    .catch((e: unknown) => e);
  expect(error).toBeInstanceOf(Anthropic.PermissionDeniedError);
  expect((error as InstanceType<typeof Anthropic.PermissionDeniedError>).error).toMatchObject({
    type: 'error',
    error: { type: 'permission_error' },
  });
});

matrix.cell('@anthropic-ai/sdk', 'cancel', () =>
  cancelCell(async () => {
    const stream = anthropic().messages.stream({ model: CHAT_MODEL, max_tokens: 1000, messages: ASK });
    let deltas = 0;
    stream.on('text', () => {
      if (++deltas === 3) stream.abort();
    });
    await expect(stream.finalMessage()).rejects.toBeInstanceOf(Anthropic.APIUserAbortError);
  }),
);

// --- ai + @ai-sdk/openai-compatible -------------------------------------------------------------
const aiSdk = (apiKey = stack.key.secret) =>
  createOpenAICompatible({ name: 'gatehouse', baseURL: `${stack.gateway.url}/v1`, apiKey });
const AI = 'ai + openai-compatible';

matrix.cell(AI, 'chat', async () => {
  const { text } = await generateText({ model: aiSdk().chatModel(CHAT_MODEL), prompt: 'Hello', maxRetries: 0 });
  expect(text).toBe(ANSWER);
});

matrix.cell(AI, 'streaming', async () => {
  const result = streamText({ model: aiSdk().chatModel(CHAT_MODEL), prompt: 'Hello', maxRetries: 0 });
  let text = '';
  for await (const delta of result.textStream) text += delta;
  expect(text).toBe(ANSWER);
  expect((await stack.calls()).at(-1)).toMatchObject({ status: 200, streamed: true });
});

matrix.cell(AI, 'tool round trip', async () => {
  const seen: unknown[] = [];
  const result = streamText({
    model: aiSdk().chatModel(CHAT_MODEL),
    messages: ASK,
    maxRetries: 0,
    stopWhen: stepCountIs(3),
    tools: {
      get_weather: aiTool({
        description: 'Weather of a city',
        inputSchema: jsonSchema<{ city: string }>(CITY),
        execute: (input) => {
          seen.push(input);
          return Promise.resolve({ sky: 'clear' });
        },
      }),
    },
  });
  expect(await result.text).toBe(ANSWER);
  expect((await result.steps).map((s) => s.finishReason)).toEqual(['tool-calls', 'stop']);
  expect(seen).toEqual([{ city: 'alpha' }]);
});

matrix.cell(AI, 'embeddings (float)', async () => {
  const result = await embed({ model: aiSdk().embeddingModel(EMBEDDING_MODEL), value: TEXT, maxRetries: 0 });
  expect(result.embedding).toEqual(embedding(EMBEDDING_MODEL, TEXT));
});

matrix.notApplicable(AI, 'embeddings (base64)', '@ai-sdk/openai-compatible always asks for encoding_format "float"');

matrix.cell(AI, 'errors', async () => {
  const error = await generateText({
    model: aiSdk(stack.restrictedKey.secret).chatModel(REFUSED_MODEL),
    prompt: 'Hello',
    maxRetries: 0,
  }).catch((e: unknown) => e);
  expect(APICallError.isInstance(error)).toBe(true);
  expect(error).toMatchObject({ statusCode: 403, isRetryable: false });
});

matrix.cell(AI, 'cancel', () =>
  cancelCell(async () => {
    const controller = new AbortController();
    const result = streamText({
      model: aiSdk().chatModel(CHAT_MODEL),
      prompt: 'Hello',
      maxRetries: 0,
      abortSignal: controller.signal,
    });
    let deltas = 0;
    // After the abort the text stream ends, or throws the abort.
    await (async () => {
      for await (const _ of result.textStream) if (++deltas === 3) controller.abort();
    })().catch((e: unknown) => expect(String(e)).toMatch(/abort/i));
    expect(deltas).toBe(3);
  }),
);

// --- @langchain/openai --------------------------------------------------------------------------
const LC = '@langchain/openai';
const chat = (apiKey = stack.key.secret, model = CHAT_MODEL) =>
  new ChatOpenAI({ model, apiKey, maxRetries: 0, configuration: { baseURL: `${stack.gateway.url}/v1` } });

/** Streams one turn and merges its chunks, as LangChain's docs do to read streamed tool calls. */
async function streamTurn(model: Runnable<BaseMessageLike[], AIMessageChunk>, messages: BaseMessageLike[]) {
  let full: AIMessageChunk | undefined;
  for await (const chunk of await model.stream(messages)) full = full ? full.concat(chunk) : chunk;
  return full!;
}

matrix.cell(LC, 'chat', async () => {
  const message = await chat().invoke(ASK);
  expect(message.content).toBe(ANSWER);
  expect(message.usage_metadata).toMatchObject({ output_tokens: TOKENS });
});

matrix.cell(LC, 'streaming', async () => {
  const pieces: unknown[] = [];
  let last: AIMessageChunk | undefined;
  for await (const chunk of await chat().stream(ASK)) {
    if (chunk.content !== '') pieces.push(chunk.content);
    last = chunk;
  }
  expect(pieces).toEqual(completionPieces(CHAT_MODEL, TOKENS));
  // streamUsage is on by default: the usage chunk from stream_options.include_usage comes last.
  expect(last?.usage_metadata).toMatchObject({ output_tokens: TOKENS });
  expect((await stack.calls()).at(-1)).toMatchObject({ status: 200, streamed: true, outputTokens: TOKENS });
});

matrix.cell(LC, 'tool round trip', async () => {
  // @langchain/openai has no tool runner (agents live in LangGraph): the loop is the one its docs show.
  const seen: unknown[] = [];
  const weather = tool(
    (input: unknown) => {
      seen.push(input);
      return '{"sky":"clear"}';
    },
    { name: 'get_weather', description: 'Weather of a city', schema: CITY },
  );
  const model = chat().bindTools([weather]);
  const messages: BaseMessageLike[] = [...ASK];
  const call = await streamTurn(model, messages);
  expect(call.tool_calls).toEqual([
    { type: 'tool_call', id: expect.any(String), name: 'get_weather', args: { city: 'alpha' } },
  ]);
  messages.push(call);
  for (const toolCall of call.tool_calls!) messages.push(await weather.invoke(toolCall));
  const final = await streamTurn(model, messages);
  expect(final.tool_calls).toEqual([]);
  expect(final.content).toBe(ANSWER);
  expect(seen).toEqual([{ city: 'alpha' }]);
});

matrix.notApplicable(
  LC,
  'embeddings (float)',
  'OpenAIEmbeddings has no encoding_format option and sends none, so its openai client always asks for base64',
);

matrix.cell(LC, 'embeddings (base64)', async () => {
  const embeddings = new OpenAIEmbeddings({
    model: EMBEDDING_MODEL,
    apiKey: stack.key.secret,
    maxRetries: 0,
    configuration: { baseURL: `${stack.gateway.url}/v1` },
  });
  expect(await embeddings.embedQuery(TEXT)).toEqual(expectedEmbedding());
  // The answer on the wire was base64, which the client decoded.
  const answer = stack.sim.received.findLast((r) => r.path === '/v1/embeddings')!;
  expect(JSON.parse(answer.sentBytes.toString())).toMatchObject({ data: [{ embedding: expect.any(String) }] });
});

matrix.cell(LC, 'errors', async () => {
  // A 403 comes through as the openai client's own error; LangChain tags only some statuses, 401 among them.
  const refused = await chat(stack.restrictedKey.secret, REFUSED_MODEL)
    .invoke(ASK)
    .catch((e: unknown) => e);
  expect(refused).toBeInstanceOf(OpenAIClient.PermissionDeniedError);
  expect(refused).toMatchObject({ status: 403, code: 'model_not_allowed' });
  const badKey = await chat('not-a-gatehouse-key')
    .invoke(ASK)
    .catch((e: unknown) => e);
  expect(badKey).toBeInstanceOf(OpenAIClient.AuthenticationError);
  expect(badKey).toMatchObject({ status: 401, lc_error_code: 'MODEL_AUTHENTICATION' });
});

matrix.cell(LC, 'cancel', () =>
  cancelCell(async () => {
    const controller = new AbortController();
    const stream = await chat().stream(ASK, { signal: controller.signal });
    let chunks = 0;
    const error = await (async () => {
      for await (const chunk of stream) if (chunk.content !== '' && ++chunks === 3) controller.abort();
    })().catch((e: unknown) => e);
    expect(chunks).toBe(3);
    expect(error).toMatchObject({ name: 'AbortError' });
  }),
);
