/**
 * Every proxied call leaves one usage record with the simulator's known token counts
 * (`countPromptTokens`, `knobs.tokens`), for OpenAI and Anthropic, streamed or not, through the
 * official SDKs; an aborted stream is recorded once with the tokens seen so far.
 */
import { createHash } from 'node:crypto';
import { request } from 'node:http';
import Anthropic from '@anthropic-ai/sdk';
import OpenAI from 'openai';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { countPromptTokens, DEMO_CONFIG, startSimulator, type Simulator } from '../fakes/llama-swap/index.js';
import type { TestGateway } from '../helpers/gateway.js';
import { rawRequest } from '../helpers/http.js';
import { createKey, listRequests, recordFor, requestId, startUsageGateway } from './usage-helpers.js';

const TOKENS = 6;
let sim: Simulator;
let gateway: TestGateway;
let key: { id: string; name: string; secret: string };

beforeAll(async () => {
  sim = await startSimulator({ config: DEMO_CONFIG, knobs: { tokens: TOKENS } });
  gateway = await startUsageGateway(sim.url);
  key = await createKey(gateway, { name: 'accounting' });
});
afterAll(async () => {
  await gateway?.close();
  await sim?.close();
});
beforeEach(() => {
  sim.knobs.tokens = TOKENS;
  sim.knobs.tokensPerSecond = 0;
});

const openai = () => new OpenAI({ baseURL: `${gateway.url}/v1`, apiKey: key.secret, maxRetries: 0 });
const anthropic = () => new Anthropic({ baseURL: gateway.url, apiKey: key.secret, maxRetries: 0 });
const MESSAGES = [{ role: 'user' as const, content: 'Count the tokens of this prompt please' }];
const PROMPT_TOKENS = countPromptTokens({ messages: MESSAGES });

describe('token accounting', () => {
  it('records a non-streamed OpenAI chat with its usage, key, model and timings', async () => {
    const id = requestId('openai-json');
    const completion = await openai().chat.completions.create(
      { model: 'qwen', messages: MESSAGES },
      { headers: { 'x-request-id': id } },
    );
    expect(completion.usage).toMatchObject({ prompt_tokens: PROMPT_TOKENS, completion_tokens: TOKENS });
    const record = await recordFor(gateway, id);
    expect(record).toMatchObject({
      requestId: id,
      key: { id: key.id, name: 'accounting' },
      model: 'qwen',
      method: 'POST',
      endpoint: '/v1/chat/completions',
      status: 200,
      streamed: false,
      inputTokens: PROMPT_TOKENS,
      outputTokens: TOKENS,
      cachedTokens: 0,
      tokensSource: 'usage',
      clientAborted: false,
      errorClass: null,
      captured: false,
    });
    expect(record.bytesIn).toBeGreaterThan(0);
    expect(record.bytesOut).toBeGreaterThan(0);
    expect(record.ttfbMs).toBeGreaterThan(0);
    expect(record.ttftMs!).toBeGreaterThanOrEqual(record.ttfbMs!);
    expect(record.durationMs).toBeGreaterThanOrEqual(record.ttftMs!);
    expect(Date.parse(record.at)).toBeGreaterThan(Date.now() - 60_000);
  });

  it('counts an OpenAI stream from llama.cpp timings when the client did not ask for usage', async () => {
    const id = requestId('openai-stream');
    const stream = await openai().chat.completions.create(
      { model: 'qwen', stream: true, messages: MESSAGES },
      { headers: { 'x-request-id': id } },
    );
    let text = '';
    for await (const chunk of stream) text += chunk.choices[0]?.delta?.content ?? '';
    expect(text.split(' ')).toHaveLength(TOKENS);
    expect(await recordFor(gateway, id)).toMatchObject({
      streamed: true,
      status: 200,
      inputTokens: PROMPT_TOKENS,
      outputTokens: TOKENS,
      cachedTokens: 0,
      tokensSource: 'timings',
    });
  });

  it('counts an OpenAI stream from its usage chunk when the client asked for it', async () => {
    const id = requestId('openai-stream-usage');
    const stream = await openai().chat.completions.create(
      {
        model: 'llama-3.2-3b',
        stream: true,
        stream_options: { include_usage: true },
        messages: MESSAGES,
        max_tokens: 4,
      },
      { headers: { 'x-request-id': id } },
    );
    let usage: unknown;
    for await (const chunk of stream) usage = chunk.usage ?? usage;
    expect(usage).toMatchObject({ prompt_tokens: PROMPT_TOKENS, completion_tokens: 4 });
    expect(await recordFor(gateway, id)).toMatchObject({
      model: 'llama-3.2-3b',
      streamed: true,
      inputTokens: PROMPT_TOKENS,
      outputTokens: 4,
      tokensSource: 'usage',
    });
  });

  it('records a non-streamed Anthropic message with its usage', async () => {
    const id = requestId('anthropic-json');
    const message = await anthropic().messages.create(
      { model: 'qwen', max_tokens: 100, messages: MESSAGES },
      { headers: { 'x-request-id': id } },
    );
    expect(message.usage).toMatchObject({ input_tokens: PROMPT_TOKENS, output_tokens: TOKENS });
    expect(await recordFor(gateway, id)).toMatchObject({
      endpoint: '/v1/messages',
      streamed: false,
      inputTokens: PROMPT_TOKENS,
      outputTokens: TOKENS,
      tokensSource: 'usage',
    });
  });

  it('counts an Anthropic stream from message_start and message_delta', async () => {
    const id = requestId('anthropic-stream');
    const stream = anthropic().messages.stream(
      { model: 'qwen', max_tokens: 3, messages: MESSAGES },
      { headers: { 'x-request-id': id } },
    );
    const final = await stream.finalMessage();
    expect(final.usage).toMatchObject({ input_tokens: PROMPT_TOKENS, output_tokens: 3 });
    const record = await recordFor(gateway, id);
    expect(record).toMatchObject({
      endpoint: '/v1/messages',
      streamed: true,
      inputTokens: PROMPT_TOKENS,
      outputTokens: 3,
      tokensSource: 'usage',
      clientAborted: false,
    });
    expect(record.ttftMs!).toBeGreaterThanOrEqual(record.ttfbMs!);
  });

  it('counts the legacy completions API, streamed, and embeddings (input only)', async () => {
    const id = requestId('completions');
    const stream = await openai().completions.create(
      { model: 'qwen', prompt: 'one two three', stream: true },
      { headers: { 'x-request-id': id } },
    );
    for await (const _chunk of stream) void _chunk;
    expect(await recordFor(gateway, id)).toMatchObject({
      endpoint: '/v1/completions',
      inputTokens: countPromptTokens({ prompt: 'one two three' }),
      outputTokens: TOKENS,
      tokensSource: 'timings',
    });

    const embedId = requestId('embeddings');
    await openai().embeddings.create(
      { model: 'nomic-embed', input: 'hello there' },
      { headers: { 'x-request-id': embedId } },
    );
    const embed = await recordFor(gateway, embedId);
    expect(embed).toMatchObject({
      endpoint: '/v1/embeddings',
      model: 'nomic-embed',
      streamed: false,
      inputTokens: countPromptTokens({ input: 'hello there' }),
      outputTokens: 0,
      tokensSource: 'usage',
    });
  });

  it('records an aborted stream once, marked aborted, with the tokens it carried before the client left', async () => {
    sim.knobs.tokens = 40;
    sim.knobs.tokensPerSecond = 40;
    const id = requestId('abort');
    const body = JSON.stringify({ model: 'qwen', stream: true, messages: MESSAGES });
    const received = await new Promise<string>((resolve, reject) => {
      const req = request(
        `${gateway.url}/v1/chat/completions`,
        {
          method: 'POST',
          headers: { 'content-type': 'application/json', authorization: `Bearer ${key.secret}`, 'x-request-id': id },
          agent: false,
        },
        (res) => {
          let text = '';
          res.on('data', (chunk: Buffer) => {
            text += chunk.toString('utf8');
            // Leave after the 4th generated token (role chunk first).
            if ((text.match(/"content":"/g) ?? []).length >= 4) {
              req.destroy();
              resolve(text);
            }
          });
        },
      );
      req.on('error', (error) =>
        error.message.includes('socket hang up') || error.message.includes('aborted') ? undefined : reject(error),
      );
      req.end(body);
    });
    const upstreamSide = await sim.waitForAbort((r) => r.headers['x-request-id'] === id);
    expect(upstreamSide.aborted).toBe(true);
    const record = await recordFor(gateway, id);
    const seen = (received.match(/"content":"/g) ?? []).length;
    expect(record).toMatchObject({
      streamed: true,
      status: 200,
      clientAborted: true,
      errorClass: 'client_abort',
      tokensSource: 'estimate',
      inputTokens: null,
    });
    // At least what the client saw; never more than what was generated (40).
    expect(record.outputTokens!).toBeGreaterThanOrEqual(seen);
    expect(record.outputTokens!).toBeLessThan(40);
    // Still exactly once after a later call was recorded: nothing was left to write it again.
    sim.knobs.tokensPerSecond = 0;
    const later = requestId('after-abort');
    await openai().chat.completions.create(
      { model: 'qwen', messages: MESSAGES },
      { headers: { 'x-request-id': later } },
    );
    await recordFor(gateway, later);
    expect((await listRequests(gateway, 'limit=500')).requests.filter((r) => r.requestId === id)).toHaveLength(1);
  });

  it('records an aborted Anthropic stream with its input tokens from message_start', async () => {
    sim.knobs.tokens = 40;
    sim.knobs.tokensPerSecond = 40;
    const id = requestId('abort-anthropic');
    const controller = new AbortController();
    const stream = anthropic().messages.stream(
      { model: 'qwen', max_tokens: 100, messages: MESSAGES },
      { headers: { 'x-request-id': id }, signal: controller.signal },
    );
    let deltas = 0;
    await new Promise<void>((resolve) => {
      stream.on('text', () => {
        deltas++;
        if (deltas === 3) {
          controller.abort();
          resolve();
        }
      });
      stream.on('error', () => resolve());
      stream.on('abort', () => resolve());
    });
    await sim.waitForAbort((r) => r.headers['x-request-id'] === id);
    const record = await recordFor(gateway, id);
    expect(record).toMatchObject({
      endpoint: '/v1/messages',
      clientAborted: true,
      inputTokens: PROMPT_TOKENS,
      tokensSource: 'estimate',
    });
    expect(record.outputTokens!).toBeGreaterThanOrEqual(3);
    expect(record.outputTokens!).toBeLessThan(40);
  });

  it('records refused calls too: a bad key (401) without a key id', async () => {
    const id = requestId('bad-key');
    const res = await rawRequest(`${gateway.url}/v1/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: 'Bearer sk-not-a-real-key', 'x-request-id': id },
      body: '{"model":"qwen"}',
    });
    expect(res.status).toBe(401);
    expect(await recordFor(gateway, id)).toMatchObject({
      status: 401,
      key: null,
      errorClass: 'invalid_api_key',
      inputTokens: null,
      outputTokens: null,
      tokensSource: null,
    });
  });
});

describe('byte identity', () => {
  let quiet: TestGateway;
  beforeAll(async () => {
    quiet = await startUsageGateway(sim.url, { usageRecording: false });
  });
  afterAll(async () => {
    await quiet?.close();
  });

  const body = JSON.stringify({
    model: 'qwen',
    stream: true,
    messages: [{ role: 'user', content: 'identical bytes please' }],
  });
  const normalise = (bytes: Buffer) =>
    bytes
      .toString('utf8')
      .replace(/chatcmpl-sim\d+/g, 'ID')
      .replace(/"created":\d+/g, '"created":0');

  async function streamThrough(target: TestGateway, headers: Record<string, string> = {}) {
    const id = requestId('identity');
    const res = await rawRequest(`${target.url}/v1/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-request-id': id, ...headers },
      body,
    });
    const upstreamSide = await sim.waitForClosed((r) => r.headers['x-request-id'] === id);
    return { res, upstreamSide, id };
  }

  it('gives the client exactly the bytes llama-swap sent, and sends llama-swap exactly the body the client sent, with recording on', async () => {
    const { res, upstreamSide, id } = await streamThrough(gateway, { authorization: `Bearer ${key.secret}` });
    expect(res.body.equals(upstreamSide.sentBytes)).toBe(true);
    // No stream_options were injected: the body upstream got is byte for byte the client's.
    expect(upstreamSide.bodySha256).toBe(createHash('sha256').update(body).digest('hex'));
    // ...and the gateway still learned the tokens (llama.cpp timings on the last frame).
    expect(await recordFor(gateway, id)).toMatchObject({ outputTokens: TOKENS, tokensSource: 'timings' });
  });

  it('streams the same bytes with recording off as with recording on', async () => {
    const on = await streamThrough(gateway, { authorization: `Bearer ${key.secret}` });
    const off = await streamThrough(quiet);
    expect(off.res.body.equals(off.upstreamSide.sentBytes)).toBe(true);
    expect(normalise(on.res.body)).toBe(normalise(off.res.body));
    expect(on.res.headers['content-type']).toBe(off.res.headers['content-type']);
    // Recording off writes nothing.
    expect((await listRequests(quiet)).requests).toEqual([]);
  });
});
