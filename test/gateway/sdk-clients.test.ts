/**
 * The official `openai` and `@anthropic-ai/sdk` clients, pointed at the gateway exactly as a
 * user would (base URL + key), in front of the llama-swap simulator.
 */
import Anthropic from '@anthropic-ai/sdk';
import OpenAI, { toFile } from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { countPromptTokens, DEMO_CONFIG, startSimulator, type Simulator } from '../fakes/llama-swap/index.js';
import { startTestGateway, type TestGateway } from '../helpers/gateway.js';
import { createLlamaSwapClient } from '../../src/management-client/llama-swap-client.js';
import { rawRequest } from '../helpers/http.js';

const ADMIN = 'sdk-admin-token';
let sim: Simulator;
let gateway: TestGateway;

beforeAll(async () => {
  sim = await startSimulator({ config: DEMO_CONFIG, knobs: { tokens: 6, tokensPerSecond: 200 } });
  const upstream = createLlamaSwapClient({ baseUrl: new URL(sim.url) });
  gateway = await startTestGateway(
    sim.url,
    { adminToken: ADMIN },
    { listModels: () => upstream.models(), closeables: [upstream] },
    { withStore: true },
  );
});
afterAll(async () => {
  await gateway.close();
  await sim.close();
});

const openai = (apiKey = 'unused-in-open-mode') => new OpenAI({ baseURL: `${gateway.url}/v1`, apiKey, maxRetries: 0 });
const anthropic = (options: { apiKey?: string | null; authToken?: string | null } = { apiKey: 'unused' }) =>
  new Anthropic({ baseURL: gateway.url, maxRetries: 0, ...options });

describe('OpenAI SDK through the gateway (open mode)', () => {
  it('completes a chat without streaming, with llama.cpp usage', async () => {
    const messages = [{ role: 'user' as const, content: 'Say hello to the gateway' }];
    const completion = await openai().chat.completions.create({ model: 'qwen', messages });
    expect(completion.choices[0]!.message.content).toMatch(/\S/);
    expect(completion.usage).toMatchObject({ prompt_tokens: countPromptTokens({ messages }), completion_tokens: 6 });
  });

  it('streams a chat, and the bytes the client got are exactly the bytes llama-swap sent', async () => {
    sim.clearReceived();
    const stream = await openai().chat.completions.create({
      model: 'qwen',
      stream: true,
      messages: [{ role: 'user', content: 'Hi' }],
    });
    let text = '';
    for await (const chunk of stream) text += chunk.choices[0]?.delta?.content ?? '';
    expect(text.split(' ').filter(Boolean).length).toBeGreaterThan(0);

    const res = await rawRequest(`${gateway.url}/v1/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'qwen', stream: true, messages: [{ role: 'user', content: 'Hi' }] }),
    });
    const upstreamSide = sim.received.filter((r) => r.path === '/v1/chat/completions').at(-1)!;
    expect(res.body.equals(upstreamSide.sentBytes)).toBe(true);
    expect(res.body.toString().endsWith('data: [DONE]\n\n')).toBe(true);
  });

  it('creates embeddings and lists models', async () => {
    const embeddings = await openai().embeddings.create({ model: 'nomic-embed', input: 'hello' });
    expect(embeddings.data[0]!.embedding.length).toBeGreaterThan(0);
    const models = await openai().models.list();
    const ids = models.data.map((m) => m.id);
    expect(ids).toEqual(expect.arrayContaining(['qwen3-8b', 'llama-3.2-3b', 'nomic-embed', 'gpu-box/llama-3.3-70b']));
    expect(ids).not.toContain('secret-experiment');
  });

  it('uploads an audio file as multipart for a transcription', async () => {
    const audio = Buffer.alloc(256 * 1024, 3);
    const result = await openai().audio.transcriptions.create({
      model: 'qwen',
      file: await toFile(audio, 'speech.wav', { type: 'audio/wav' }),
    });
    expect(result.text).toContain(String(audio.length));
    const seen = sim.received.filter((r) => r.path === '/v1/audio/transcriptions').at(-1)!;
    expect(seen.model).toBe('qwen');
  });
});

describe('Anthropic SDK through the gateway (open mode)', () => {
  it('creates a message without streaming', async () => {
    const message = await anthropic().messages.create({
      model: 'qwen',
      max_tokens: 64,
      messages: [{ role: 'user', content: 'Hello there' }],
    });
    expect(message.type).toBe('message');
    expect(message.usage.output_tokens).toBe(6);
    expect(message.content[0]!.type).toBe('text');
  });

  it('streams a message with named events', async () => {
    const stream = anthropic().messages.stream({
      model: 'qwen',
      max_tokens: 64,
      messages: [{ role: 'user', content: 'Hello' }],
    });
    const types: string[] = [];
    for await (const event of stream) types.push(event.type);
    expect(types[0]).toBe('message_start');
    expect(types).toContain('content_block_delta');
    expect(types.at(-1)).toBe('message_stop');
    expect((await stream.finalMessage()).usage.output_tokens).toBe(6);
  });

  it("answers an unknown model with llama-swap's 404 in the Anthropic shape", async () => {
    const error = await anthropic()
      .messages.create({ model: 'no-such-model', max_tokens: 8, messages: [{ role: 'user', content: 'x' }] })
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(Anthropic.NotFoundError);
    expect((error as InstanceType<typeof Anthropic.NotFoundError>).error).toEqual({
      type: 'error',
      error: { type: 'not_found_error', message: 'no router for requested model' },
    });
  });
});

describe('abort through the gateway', () => {
  it('closes the upstream connection when an SDK stream is aborted mid-way', async () => {
    sim.knobs.tokensPerSecond = 20;
    sim.knobs.tokens = 200;
    try {
      sim.clearReceived();
      const controller = new AbortController();
      const stream = await openai().chat.completions.create(
        { model: 'qwen', stream: true, messages: [{ role: 'user', content: 'long' }] },
        { signal: controller.signal },
      );
      let chunks = 0;
      const leftAt = await (async () => {
        try {
          for await (const _ of stream) {
            if (++chunks === 3) {
              const at = performance.now();
              controller.abort();
              return at;
            }
          }
        } catch {
          /* aborted */
        }
        return performance.now();
      })();
      // 200 tokens at 20/s outlast the test: the upstream call can only end by the abort.
      const seen = await sim.waitForAbort((r) => r.path === '/v1/chat/completions', 2000);
      expect(seen.aborted).toBe(true);
      expect(seen.closedAt!).toBeGreaterThan(leftAt);
    } finally {
      sim.knobs.tokensPerSecond = 200;
      sim.knobs.tokens = 6;
    }
  });
});

describe('the SDKs with a real key once keys exist', () => {
  let secret: string;
  beforeAll(async () => {
    const res = await rawRequest(`${gateway.url}/api/keys`, {
      method: 'POST',
      headers: { authorization: `Bearer ${ADMIN}`, 'content-type': 'application/json' },
      body: JSON.stringify({ name: 'sdk' }),
    });
    secret = (JSON.parse(res.body.toString()) as { secret: string }).secret;
  });

  it('refuses the OpenAI SDK without a valid key, and accepts it with apiKey', async () => {
    await expect(
      openai('sk-wrong').chat.completions.create({ model: 'qwen', messages: [{ role: 'user', content: 'x' }] }),
    ).rejects.toBeInstanceOf(OpenAI.AuthenticationError);
    const ok = await openai(secret).chat.completions.create({
      model: 'qwen',
      messages: [{ role: 'user', content: 'x' }],
    });
    expect(ok.object).toBe('chat.completion');
  });

  it('accepts the Anthropic SDK with apiKey (x-api-key) and with authToken (Bearer)', async () => {
    await expect(
      anthropic({ apiKey: 'sk-wrong' }).messages.create({
        model: 'qwen',
        max_tokens: 8,
        messages: [{ role: 'user', content: 'x' }],
      }),
    ).rejects.toBeInstanceOf(Anthropic.AuthenticationError);
    const viaApiKey = await anthropic({ apiKey: secret }).messages.create({
      model: 'qwen',
      max_tokens: 8,
      messages: [{ role: 'user', content: 'x' }],
    });
    expect(viaApiKey.type).toBe('message');
    const viaToken = await anthropic({ apiKey: null, authToken: secret }).messages.create({
      model: 'qwen',
      max_tokens: 8,
      messages: [{ role: 'user', content: 'x' }],
    });
    expect(viaToken.type).toBe('message');
    const seen = sim.received.filter((r) => r.path.startsWith('/v1/messages')).at(-1)!;
    expect(seen.headers.authorization).toBeUndefined();
    expect(seen.headers['x-api-key']).toBeUndefined();
  });
});
