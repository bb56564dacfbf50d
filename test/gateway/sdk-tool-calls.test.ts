/**
 * Tool calls, reasoning and base64 embeddings through the gateway with the official `openai`
 * and `@anthropic-ai/sdk` clients, against the simulator (which answers a request declaring
 * tools with a tool call, and a tool result with text): each round trip works, and every call is
 * recorded with the token counts the simulator sent.
 */
import Anthropic from '@anthropic-ai/sdk';
import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DEMO_CONFIG, startSimulator, type Simulator } from '../fakes/llama-swap/index.js';
import type { TestGateway } from '../helpers/gateway.js';
import { rawRequest } from '../helpers/http.js';
import { createKey, recordFor, requestId, startUsageGateway } from '../usage/usage-helpers.js';

let sim: Simulator;
let gateway: TestGateway;
let secret: string;

const CONFIG = {
  ...DEMO_CONFIG,
  models: {
    ...(DEMO_CONFIG.models as Record<string, unknown>),
    thinker: { cmd: 'llama-server --port ${PORT} -m /models/thinker.gguf --reasoning-format deepseek' },
  },
};

beforeAll(async () => {
  sim = await startSimulator({ config: CONFIG, knobs: { tokens: 6 } });
  gateway = await startUsageGateway(sim.url);
  secret = (await createKey(gateway, { name: 'tools' })).secret;
});
afterAll(async () => {
  await gateway?.close();
  await sim?.close();
});

const openai = () => new OpenAI({ baseURL: `${gateway.url}/v1`, apiKey: secret, maxRetries: 0 });
const anthropic = () => new Anthropic({ baseURL: gateway.url, apiKey: secret, maxRetries: 0 });
const withId = (id: string) => ({ headers: { 'x-request-id': id } });

const WEATHER = {
  type: 'function' as const,
  function: {
    name: 'get_weather',
    description: 'Weather of a city',
    parameters: { type: 'object', properties: { city: { type: 'string' }, days: { type: 'integer' } } },
  },
};
const ASK = [{ role: 'user' as const, content: 'What is the weather in Lyon?' }];

describe('OpenAI chat tool calls through the gateway', () => {
  it('round-trips a tool call without streaming, and the call is recorded with its tokens', async () => {
    const id = requestId('tool-json');
    const first = await openai().chat.completions.create(
      { model: 'qwen', messages: ASK, tools: [WEATHER] },
      withId(id),
    );
    const call = first.choices[0]!.message.tool_calls![0]!;
    expect(first.choices[0]!.finish_reason).toBe('tool_calls');
    expect(call.type === 'function' && call.function.name).toBe('get_weather');
    const args = call.type === 'function' ? (JSON.parse(call.function.arguments) as unknown) : undefined;
    expect(args).toEqual({ city: 'alpha', days: 1 });
    const record = await recordFor(gateway, id);
    expect(record).toMatchObject({ status: 200, outputTokens: first.usage!.completion_tokens, tokensSource: 'usage' });

    const second = await openai().chat.completions.create({
      model: 'qwen',
      tools: [WEATHER],
      messages: [
        ...ASK,
        first.choices[0]!.message,
        { role: 'tool', tool_call_id: call.id, content: '{"sky":"clear"}' },
      ],
    });
    expect(second.choices[0]!.finish_reason).toBe('stop');
    expect(second.choices[0]!.message.content).toMatch(/\S/);
  });

  it('assembles a streamed tool call from its deltas, and counts the stream', async () => {
    const id = requestId('tool-stream');
    const stream = openai().chat.completions.stream(
      { model: 'qwen', messages: ASK, tools: [WEATHER], stream_options: { include_usage: true } },
      withId(id),
    );
    const final = await stream.finalChatCompletion();
    const call = final.choices[0]!.message.tool_calls![0]!;
    expect(call.type === 'function' && JSON.parse(call.function.arguments)).toEqual({ city: 'alpha', days: 1 });
    expect(final.choices[0]!.finish_reason).toBe('tool_calls');
    const record = await recordFor(gateway, id);
    expect(record).toMatchObject({ status: 200, streamed: true, outputTokens: final.usage!.completion_tokens });
    expect(record.ttftMs).not.toBeNull();
  });

  it('streams reasoning_content before the answer for a reasoning model', async () => {
    const stream = await openai().chat.completions.create({ model: 'thinker', messages: ASK, stream: true });
    const kinds: string[] = [];
    for await (const chunk of stream) {
      // llama-server's extra field, which the SDK passes through untyped.
      const delta: { content?: string | null; reasoning_content?: string } | undefined = chunk.choices[0]?.delta;
      if (delta?.reasoning_content) kinds.push('reasoning');
      if (delta?.content) kinds.push('content');
    }
    expect(kinds.indexOf('content')).toBeGreaterThan(kinds.lastIndexOf('reasoning'));
    expect(kinds.filter((k) => k === 'reasoning').length).toBeGreaterThan(0);
  });
});

describe('Anthropic tool_use through the gateway', () => {
  const tools = [
    { name: 'get_weather', input_schema: { type: 'object' as const, properties: { city: { type: 'string' } } } },
  ];

  it('round-trips a streamed tool_use built from input_json_delta, and counts it', async () => {
    const id = requestId('anthropic-tool');
    const stream = anthropic().messages.stream({ model: 'qwen', max_tokens: 200, messages: ASK, tools }, withId(id));
    const message = await stream.finalMessage();
    expect(message.stop_reason).toBe('tool_use');
    const block = message.content.find((b) => b.type === 'tool_use')!;
    expect(block.type === 'tool_use' && block.input).toEqual({ city: 'alpha' });
    const record = await recordFor(gateway, id);
    expect(record).toMatchObject({ status: 200, streamed: true, outputTokens: message.usage.output_tokens });

    const answer = await anthropic().messages.create({
      model: 'qwen',
      max_tokens: 200,
      tools,
      messages: [
        ...ASK,
        { role: 'assistant', content: message.content },
        {
          role: 'user',
          content: [{ type: 'tool_result', tool_use_id: block.type === 'tool_use' ? block.id : '', content: 'clear' }],
        },
      ],
    });
    expect(answer.stop_reason).toBe('end_turn');
    expect(answer.content[0]!.type).toBe('text');
  });

  it('streams a thinking block with its signature before the text for a reasoning model', async () => {
    const message = await anthropic()
      .messages.stream({ model: 'thinker', max_tokens: 200, messages: ASK })
      .finalMessage();
    expect(message.content.map((b) => b.type)).toEqual(['thinking', 'text']);
    expect(message.content[0]!.type === 'thinking' && message.content[0]!.thinking).toMatch(/\S/);
  });
});

describe('Responses API through the gateway', () => {
  const tools = [
    {
      type: 'function' as const,
      name: 'shell',
      strict: false,
      parameters: { type: 'object', properties: { command: { type: 'array', items: { type: 'string' } } } },
    },
  ];

  it('round-trips a streamed function call the way Codex does, and counts it', async () => {
    const id = requestId('responses-tool');
    const stream = openai().responses.stream({ model: 'qwen', input: 'list the files', tools }, withId(id));
    const deltas: string[] = [];
    stream.on('response.function_call_arguments.delta', (e) => deltas.push(e.delta));
    const response = await stream.finalResponse();
    const call = response.output.find((o) => o.type === 'function_call')!;
    expect(call.type === 'function_call' && JSON.parse(call.arguments)).toEqual({ command: [] });
    expect(deltas.join('')).toBe(call.type === 'function_call' ? call.arguments : '');
    const record = await recordFor(gateway, id);
    expect(record).toMatchObject({ status: 200, streamed: true, outputTokens: response.usage!.output_tokens });

    const answer = await openai().responses.create({
      model: 'qwen',
      tools,
      input: [
        { role: 'user', content: 'list the files' },
        call,
        { type: 'function_call_output', call_id: call.type === 'function_call' ? call.call_id : '', output: 'a b' },
      ],
    });
    expect(answer.output_text).toMatch(/\S/);
  });
});

describe('embeddings through the gateway', () => {
  it('hands the SDK base64 embeddings that decode to the float vector, bytes untouched', async () => {
    const floats = await openai().embeddings.create({ model: 'nomic-embed', input: 'hello', encoding_format: 'float' });
    // The SDK asks for base64 when no format is given, and decodes it.
    const decoded = await openai().embeddings.create({ model: 'nomic-embed', input: 'hello' });
    expect(decoded.data[0]!.embedding).toEqual(Array.from(Float32Array.from(floats.data[0]!.embedding)));

    sim.clearReceived();
    const raw = await rawRequest(`${gateway.url}/v1/embeddings`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${secret}` },
      body: JSON.stringify({ model: 'nomic-embed', input: 'hello', encoding_format: 'base64' }),
    });
    const upstream = await sim.waitForClosed((r) => r.path === '/v1/embeddings');
    expect(raw.body.equals(upstream.sentBytes)).toBe(true);
    expect(typeof (JSON.parse(raw.body.toString()) as { data: [{ embedding: unknown }] }).data[0].embedding).toBe(
      'string',
    );
  });
});
