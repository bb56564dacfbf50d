/**
 * The official SDKs in the client matrix (see matrix.ts): each cell is the SDK used the way its
 * documentation shows, with Gatehouse's key, against the simulator.
 */
import Anthropic from '@anthropic-ai/sdk';
import { betaTool } from '@anthropic-ai/sdk/helpers/beta/json-schema';
import { createOpenAICompatible } from '@ai-sdk/openai-compatible';
import { APICallError, embed, generateText, jsonSchema, stepCountIs, streamText, tool } from 'ai';
import OpenAI from 'openai';
import { afterAll, beforeAll, expect } from 'vitest';
import { embedding } from '../fakes/llama-swap/index.js';
import {
  ANSWER,
  CELLS,
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
  expect(await runner.finalContent()).toMatch(/\S/);
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
  expect(final.content[0]).toMatchObject({ type: 'text' });
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
      get_weather: tool({
        description: 'Weather of a city',
        inputSchema: jsonSchema<{ city: string }>(CITY),
        execute: (input) => {
          seen.push(input);
          return Promise.resolve({ sky: 'clear' });
        },
      }),
    },
  });
  expect(await result.text).toMatch(/\S/);
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
for (const cell of CELLS) {
  matrix.notApplicable(
    '@langchain/openai',
    cell,
    '@langchain/openai is not installed: it is not a dev dependency yet, so its cells are not written',
  );
}
