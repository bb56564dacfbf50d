/**
 * `docs/llama-swap.md` ("What the simulator plays") and the simulator agree: the doc's list of
 * behaviours and the checks below have the same titles, and each check plays its behaviour
 * against a real simulator.
 */
import { readFileSync } from 'node:fs';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { startSimulator, type Simulator } from '../fakes/llama-swap/index.js';
import { BodyReader, chatBody, json, parseSse, postJson, type Json } from './helpers.js';

const DOC = readFileSync(new URL('../../docs/llama-swap.md', import.meta.url), 'utf8');

/** The bold titles of the list in the doc's "What the simulator plays" section. */
function documentedTitles(): string[] {
  const start = DOC.indexOf('\n## What the simulator plays');
  if (start < 0) throw new Error('docs/llama-swap.md has no "What the simulator plays" section');
  const rest = DOC.slice(start + 1);
  const next = rest.indexOf('\n## ');
  const section = next < 0 ? rest : rest.slice(0, next);
  return [...section.matchAll(/^- \*\*(.+?)\*\*/gm)].map((m) => m[1]!);
}

const CONFIG = {
  sendLoadingState: false,
  profiles: { fast: { description: 'small models', pins: { chat: 'chat' } } },
  hooks: { on_startup: { profile: 'fast' } },
  models: {
    chat: { cmd: 'llama-server --port ${PORT} -m chat.gguf' },
    thinker: { cmd: 'llama-server --port ${PORT} -m t.gguf --reasoning-format deepseek' },
    embed: { cmd: 'llama-server --port ${PORT} -m e.gguf --embeddings' },
    loader: { cmd: 'llama-server --port ${PORT} -m l.gguf', sendLoadingState: true },
    filtered: {
      cmd: 'llama-server --port ${PORT} -m f.gguf',
      aliases: ['filtered-short'],
      filters: { setParams: { 'max_tokens?': 2 }, setParamsByID: { 'filtered-short': { max_tokens: 1 } } },
    },
  },
};

const TOOLS = [
  {
    type: 'function',
    function: { name: 'get_weather', parameters: { type: 'object', properties: { city: { type: 'string' } } } },
  },
];
const ANTHROPIC_TOOLS = [
  { name: 'get_weather', input_schema: { type: 'object', properties: { city: { type: 'string' } } } },
];
const RESPONSES_TOOLS = [
  { type: 'function', name: 'shell', parameters: { type: 'object', properties: { command: { type: 'string' } } } },
];

let sim: Simulator;

async function sse(path: string, body: Record<string, unknown>): Promise<{ event?: string; data: Json }[]> {
  const text = await (await postJson(`${sim.url}${path}`, { ...body, stream: true })).text();
  return parseSse(text)
    .filter((f) => f.data !== '[DONE]')
    .map((f) => ({ event: f.event, data: JSON.parse(f.data) }));
}

const CHECKS: Record<string, () => Promise<void>> = {
  'tool calls in chat streams': async () => {
    const frames = await sse('/v1/chat/completions', chatBody('chat', { tools: TOOLS }));
    const calls = frames.flatMap((f) => (f.data.choices?.[0]?.delta?.tool_calls ?? []) as Json[]);
    expect(calls[0]).toEqual({
      index: 0,
      id: expect.any(String),
      type: 'function',
      function: { name: 'get_weather', arguments: '' },
    });
    expect(calls.length).toBeGreaterThan(2);
    for (const later of calls.slice(1)) expect(Object.keys(later).sort()).toEqual(['function', 'index']);
    expect(JSON.parse(calls.map((c) => c.function.arguments).join(''))).toEqual({ city: 'alpha' });
    expect(frames.at(-1)!.data.choices[0].finish_reason).toBe('tool_calls');
  },

  'tool calls without streaming': async () => {
    const body = await json(await postJson(`${sim.url}/v1/chat/completions`, chatBody('chat', { tools: TOOLS })));
    expect(body.choices[0].message).toEqual({
      role: 'assistant',
      content: null,
      tool_calls: [
        { type: 'function', function: { name: 'get_weather', arguments: '{"city":"alpha"}' }, id: expect.any(String) },
      ],
    });
    const none = await json(
      await postJson(`${sim.url}/v1/chat/completions`, chatBody('chat', { tools: TOOLS, tool_choice: 'none' })),
    );
    expect(none.choices[0].message.tool_calls).toBeUndefined();
  },

  'anthropic tool_use blocks': async () => {
    const body = {
      model: 'chat',
      max_tokens: 100,
      tools: ANTHROPIC_TOOLS,
      messages: [{ role: 'user', content: 'hi' }],
    };
    const frames = await sse('/v1/messages', body);
    const start = frames.find((f) => f.event === 'content_block_start')!.data;
    expect(start.content_block).toEqual({ type: 'tool_use', id: expect.any(String), name: 'get_weather', input: {} });
    const partial = frames
      .filter((f) => f.data.delta?.type === 'input_json_delta')
      .map((f) => f.data.delta.partial_json as string);
    expect(JSON.parse(partial.join(''))).toEqual({ city: 'alpha' });
    expect(frames.find((f) => f.event === 'message_delta')!.data.delta.stop_reason).toBe('tool_use');
    const full = await json(await postJson(`${sim.url}/v1/messages`, body));
    expect(full.content).toEqual([
      { type: 'tool_use', id: expect.any(String), name: 'get_weather', input: { city: 'alpha' } },
    ]);
  },

  'deferred tools are never called': async () => {
    const deferred = { name: 'DeferredToolPlaceholder', input_schema: { type: 'object' }, defer_loading: true };
    const ask = (tools: unknown[]) =>
      postJson(`${sim.url}/v1/messages`, {
        model: 'chat',
        max_tokens: 100,
        tools,
        messages: [{ role: 'user', content: 'hi' }],
      });
    const called = await json(await ask([deferred, ...ANTHROPIC_TOOLS]));
    expect(called.content).toEqual([
      { type: 'tool_use', id: expect.any(String), name: 'get_weather', input: { city: 'alpha' } },
    ]);
    const onlyDeferred = await json(await ask([deferred]));
    expect(onlyDeferred.content.map((b: Json) => b.type)).toEqual(['text']);
    const chat = await json(
      await postJson(
        `${sim.url}/v1/chat/completions`,
        chatBody('chat', {
          tools: [
            { ...TOOLS[0], defer_loading: true },
            { type: 'function', function: { name: 'later', parameters: {} } },
          ],
        }),
      ),
    );
    expect(chat.choices[0].message.tool_calls.map((c: Json) => c.function.name)).toEqual(['later']);
  },

  'embeddings from a chat model refused': async () => {
    const res = await postJson(`${sim.url}/v1/embeddings`, { model: 'chat', input: 'hello' });
    expect(res.status).toBe(501);
    expect(await json(res)).toEqual({
      error: {
        code: 501,
        message: 'This server does not support embeddings. Start it with `--embeddings`',
        type: 'not_supported_error',
      },
    });
    const embedded = await postJson(`${sim.url}/v1/embeddings`, { model: 'embed', input: 'hello' });
    expect(embedded.status).toBe(200);
  },

  'responses api events': async () => {
    const frames = await sse('/v1/responses', { model: 'chat', input: 'hi' });
    expect(frames.map((f) => f.event)).toEqual([
      'response.created',
      'response.in_progress',
      'response.output_item.added',
      'response.content_part.added',
      ...Array(8).fill('response.output_text.delta'),
      'response.output_text.done',
      'response.content_part.done',
      'response.output_item.done',
      'response.completed',
    ]);
    expect(frames.map((f) => f.data.sequence_number)).toEqual(frames.map((_, i) => i));
    expect(frames.at(-1)!.data.response.usage).toMatchObject({ output_tokens: 8 });
    const cut = await sse('/v1/responses', { model: 'chat', input: 'hi', max_output_tokens: 2 });
    expect(cut.at(-1)!.event).toBe('response.incomplete');
  },

  'responses api function calls': async () => {
    const frames = await sse('/v1/responses', { model: 'chat', input: 'ls', tools: RESPONSES_TOOLS });
    const added = frames.find((f) => f.event === 'response.output_item.added')!.data.item;
    expect(added).toMatchObject({ type: 'function_call', name: 'shell', arguments: '' });
    const deltas = frames.filter((f) => f.event === 'response.function_call_arguments.delta').map((f) => f.data.delta);
    const done = frames.find((f) => f.event === 'response.function_call_arguments.done')!.data.arguments;
    expect(deltas.join('')).toBe(done);
    expect(JSON.parse(done as string)).toEqual({ command: 'alpha' });
    const afterOutput = await json(
      await postJson(`${sim.url}/v1/responses`, {
        model: 'chat',
        tools: RESPONSES_TOOLS,
        input: [
          { role: 'user', content: 'ls' },
          { type: 'function_call_output', call_id: added.call_id, output: 'a' },
        ],
      }),
    );
    expect(afterOutput.output[0].type).toBe('message');
  },

  'reasoning_content deltas': async () => {
    const frames = await sse('/v1/chat/completions', chatBody('thinker'));
    const kinds = frames.map((f) => Object.keys(f.data.choices?.[0]?.delta ?? {}).join(','));
    const lastReasoning = kinds.lastIndexOf('reasoning_content');
    expect(lastReasoning).toBeGreaterThan(0);
    expect(kinds.indexOf('content')).toBe(lastReasoning + 1);
    const body = await json(await postJson(`${sim.url}/v1/chat/completions`, chatBody('thinker')));
    expect(body.choices[0].message.reasoning_content).toMatch(/\S/);
    expect(body.usage.completion_tokens).toBe(8 + 4);
    const plain = await json(await postJson(`${sim.url}/v1/chat/completions`, chatBody('chat')));
    expect(plain.choices[0].message.reasoning_content).toBeUndefined();
  },

  'anthropic thinking blocks': async () => {
    const frames = await sse('/v1/messages', {
      model: 'thinker',
      max_tokens: 100,
      messages: [{ role: 'user', content: 'hi' }],
    });
    const blocks = frames.filter((f) => f.event?.startsWith('content_block'));
    expect(blocks[0]!.data).toMatchObject({ index: 0, content_block: { type: 'thinking' } });
    const thinking = blocks.filter((f) => f.data.index === 0).map((f) => f.data.delta?.type ?? f.event);
    expect(thinking.at(-2)).toBe('signature_delta');
    expect(thinking.at(-1)).toBe('content_block_stop');
    expect(thinking).toContain('thinking_delta');
    expect(blocks.find((f) => f.data.index === 1)!.data.content_block.type).toBe('text');
  },

  'anthropic ping': async () => {
    const frames = await sse('/v1/messages', {
      model: 'chat',
      max_tokens: 100,
      messages: [{ role: 'user', content: 'hi' }],
    });
    expect(frames.slice(0, 2).map((f) => f.event)).toEqual(['message_start', 'ping']);
    expect(frames[1]!.data).toEqual({ type: 'ping' });
  },

  'base64 embeddings': async () => {
    const floats = await json(await postJson(`${sim.url}/v1/embeddings`, { model: 'embed', input: 'hello' }));
    const b64 = await json(
      await postJson(`${sim.url}/v1/embeddings`, { model: 'embed', input: 'hello', encoding_format: 'base64' }),
    );
    const bytes = Buffer.from(b64.data[0].embedding as string, 'base64');
    const decoded = Array.from({ length: bytes.length / 4 }, (_, i) => bytes.readFloatLE(i * 4));
    expect(decoded).toEqual(Array.from(Float32Array.from(floats.data[0].embedding as number[])));
  },

  'llama-server cors header': async () => {
    const withOrigin = await postJson(`${sim.url}/v1/chat/completions`, chatBody('chat'), {
      origin: 'http://app.test',
    });
    expect(withOrigin.headers.get('access-control-allow-origin')).toBe('http://app.test');
    const without = await postJson(`${sim.url}/v1/chat/completions`, chatBody('chat'));
    expect(without.headers.get('access-control-allow-origin')).toBe('');
    const llamaSwapOwn = await fetch(`${sim.url}/running`, { headers: { origin: 'http://app.test' } });
    expect(llamaSwapOwn.headers.get('access-control-allow-origin')).toBeNull();
  },

  'send loading state': async () => {
    sim.knobs.loadDelayMs = 900;
    const frames = await sse('/v1/chat/completions', chatBody('loader'));
    const reasoning = frames.filter((f) => f.data.choices[0].delta.reasoning_content !== undefined);
    const text = reasoning.map((f) => f.data.choices[0].delta.reasoning_content as string).join('');
    expect(text).toMatch(/^━━━━━\nllama-swap loading model: loader\n\.+\nDone! \(\d+\.\d\ds\)\n━━━━━\n \n$/);
    expect(reasoning[1]!.data).toEqual({ choices: [{ delta: { reasoning_content: '\n' } }] });
    const answer = frames.slice(reasoning.length);
    expect(answer[0]!.data.choices[0].delta).toEqual({ role: 'assistant', content: null });
    // Ready now: no loading text.
    const again = await sse('/v1/chat/completions', chatBody('loader'));
    expect(again[0]!.data.choices[0].delta).toEqual({ role: 'assistant', content: null });
  },

  'clean end on a crash': async () => {
    sim.knobs.failAfterChunks = 3;
    const reader = new BodyReader(await postJson(`${sim.url}/v1/chat/completions`, chatBody('chat', { stream: true })));
    const text = await reader.rest();
    expect(parseSse(text)).toHaveLength(3);
    expect(text).not.toContain('[DONE]');
  },

  '499 in activity': async () => {
    await postJson(`${sim.url}/v1/chat/completions`, chatBody('chat'));
    // A stream the client leaves after it started keeps its 200.
    sim.knobs.tokensPerSecond = 20;
    const started = new AbortController();
    const stream = await postJson(
      `${sim.url}/v1/chat/completions`,
      chatBody('chat', { stream: true }),
      {},
      started.signal,
    );
    await new BodyReader(stream).until((t) => t.includes('"content"'));
    started.abort();
    // A client that leaves while its model loads gets 499, which it never sees.
    sim.knobs.loadDelayMs = 5_000;
    const queued = new AbortController();
    const pending = postJson(`${sim.url}/v1/chat/completions`, chatBody('thinker'), {}, queued.signal).catch(
      () => null,
    );
    await sim.waitForState('thinker', 'starting');
    queued.abort();
    expect(await pending).toBeNull();
    await sim.waitFor(() => sim.activity().length === 3);
    const page = await json(await fetch(`${sim.url}/api/metrics/activity`));
    expect(page).toMatchObject({ page: 1, limit: 25, total: 3, total_pages: 1 });
    expect(page.data.map((e: Json) => [e.model, e.resp_status_code])).toEqual([
      ['thinker', 499],
      ['chat', 200],
      ['chat', 200],
    ]);
    expect(page.data[2]).toMatchObject({
      req_path: '/v1/chat/completions',
      tokens: { input_tokens: 9, output_tokens: 8 },
    });
  },

  'concurrency limit 429': async () => {
    await sim.reload({ ...CONFIG, models: { ...CONFIG.models, chat: { ...CONFIG.models.chat, concurrencyLimit: 1 } } });
    await sim.load('chat');
    sim.knobs.headersDelayMs = 10_000;
    const held = postJson(`${sim.url}/v1/chat/completions`, chatBody('chat'));
    await sim.waitForRequest((r) => r.model === 'chat');
    const res = await postJson(`${sim.url}/v1/chat/completions`, chatBody('chat'), { accept: 'text/plain' });
    expect(res.status).toBe(429);
    expect(res.headers.get('retry-after')).toBe('1');
    expect((await json(res)).error.code).toBe('concurrency_limit');
    await sim.unload('chat');
    await held;
  },

  'global concurrency limit 429': async () => {
    await sim.reload({
      ...CONFIG,
      globalConcurrencyLimit: 1,
      groups: { all: { swap: false, members: ['chat', 'embed'] } },
    });
    await sim.load('chat');
    sim.knobs.headersDelayMs = 10_000;
    const held = postJson(`${sim.url}/v1/chat/completions`, chatBody('chat'));
    await sim.waitForRequest((r) => r.model === 'chat');
    const res = await postJson(`${sim.url}/v1/embeddings`, { model: 'embed', input: 'x' });
    expect(res.status).toBe(429);
    expect((await json(res)).error.code).toBe('concurrency_limit');
    await sim.unload();
    await held;
  },

  'setParams if absent': async () => {
    const usage = async (model: string, extra: Record<string, unknown> = {}) =>
      (await json(await postJson(`${sim.url}/v1/chat/completions`, chatBody(model, extra)))).usage
        .completion_tokens as number;
    expect(await usage('filtered')).toBe(2);
    expect(await usage('filtered', { max_tokens: 5 })).toBe(5);
    expect(await usage('filtered-short', { max_tokens: 5 })).toBe(1);
  },

  'on_startup profile': async () => {
    expect(await json(await fetch(`${sim.url}/api/profiles`))).toEqual({
      active: 'fast',
      profiles: [{ id: 'fast', description: 'small models', pins: { chat: 'chat' } }],
    });
    const cleared = await fetch(`${sim.url}/api/profiles/active`, {
      method: 'PUT',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ name: null }),
    });
    expect(await json(cleared)).toEqual({ active: null });
    expect((await json(await fetch(`${sim.url}/api/profiles`))).active).toBeNull();
    await sim.reload();
    expect((await json(await fetch(`${sim.url}/api/profiles`))).active).toBe('fast');
    const bad = await sim.reload({ ...CONFIG, hooks: { on_startup: { profile: 'nope' } } });
    expect(bad).toMatchObject({ ok: false, error: expect.stringContaining('nope') });
  },
};

describe('docs/llama-swap.md "What the simulator plays"', () => {
  it('lists exactly the behaviours checked here', () => {
    expect(documentedTitles().sort()).toEqual(Object.keys(CHECKS).sort());
  });

  describe('each documented behaviour', () => {
    beforeEach(async () => {
      sim = await startSimulator({ config: CONFIG });
    });
    afterEach(() => sim.close());

    for (const [title, check] of Object.entries(CHECKS)) it(title, check);
  });
});
