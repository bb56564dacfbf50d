import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import {
  completionPieces,
  completionText,
  countPromptTokens,
  DEFAULT_KNOBS,
  embedding,
  startSimulator,
  type Simulator,
} from '../fakes/llama-swap/index.js';
import { BodyReader, chatBody, json, parseSse, postJson, timerFiresFirst } from './helpers.js';

const CONFIG = {
  models: {
    chat: { cmd: 'llama-server --port ${PORT}', aliases: ['gpt-4o-mini'] },
    embed: { cmd: 'llama-server --port ${PORT} --embeddings' },
  },
};

describe('inference responses', () => {
  let sim: Simulator;
  beforeAll(async () => {
    sim = await startSimulator({ config: CONFIG });
  });
  afterAll(() => sim.close());
  afterEach(() => {
    Object.assign(sim.knobs, { ...DEFAULT_KNOBS, version: sim.knobs.version });
  });

  it('counts prompt tokens as words of all message text plus 4', () => {
    expect(countPromptTokens(chatBody('chat'))).toBe(9);
    expect(
      countPromptTokens({
        system: 'be brief',
        messages: [{ role: 'user', content: [{ type: 'text', text: 'one two' }] }],
      }),
    ).toBe(8);
    expect(countPromptTokens({ input: ['a b', 'c'] })).toBe(7);
  });

  it('streams OpenAI chat as role chunk, one chunk per token, finish chunk with timings, then [DONE]', async () => {
    const res = await postJson(`${sim.url}/v1/chat/completions`, chatBody('gpt-4o-mini', { stream: true }));
    expect(res.headers.get('content-type')).toBe('text/event-stream');
    expect(res.headers.get('x-accel-buffering')).toBe('no');
    const frames = parseSse(await res.text());
    expect(frames).toHaveLength(1 + 8 + 1 + 1);
    expect(frames.at(-1)!.data).toBe('[DONE]');
    const chunks = frames.slice(0, -1).map((f) => JSON.parse(f.data));
    expect(chunks[0].choices[0].delta).toEqual({ role: 'assistant', content: null });
    expect(chunks.slice(1, 9).map((c) => c.choices[0].delta.content)).toEqual(completionPieces('chat', 8));
    const last = chunks.at(-1);
    expect(last.choices[0]).toEqual({ finish_reason: 'stop', index: 0, delta: {} });
    expect(last.usage).toBeUndefined();
    expect(last.timings).toMatchObject({ prompt_n: 9, predicted_n: 8 });
    expect(chunks.every((c) => c.model === 'gpt-4o-mini' && c.object === 'chat.completion.chunk')).toBe(true);
  });

  it('adds a usage chunk with empty choices only when stream_options.include_usage is set', async () => {
    const res = await postJson(
      `${sim.url}/v1/chat/completions`,
      chatBody('chat', { stream: true, stream_options: { include_usage: true } }),
    );
    const frames = parseSse(await res.text());
    const usageChunk = JSON.parse(frames.at(-2)!.data);
    expect(usageChunk.choices).toEqual([]);
    expect(usageChunk.usage).toEqual({ completion_tokens: 8, prompt_tokens: 9, total_tokens: 17 });
    expect(usageChunk.timings.predicted_n).toBe(8);
    expect(JSON.parse(frames.at(-3)!.data).timings).toBeUndefined();
  });

  it('always includes usage and timings in non-streaming chat', async () => {
    const body = await json(await postJson(`${sim.url}/v1/chat/completions`, chatBody('chat')));
    expect(body.choices[0].message).toEqual({ role: 'assistant', content: completionText('chat', 8) });
    expect(body.usage).toEqual({ completion_tokens: 8, prompt_tokens: 9, total_tokens: 17 });
    expect(body.timings).toMatchObject({ prompt_n: 9, predicted_n: 8 });
  });

  it('stops at max_tokens with finish_reason length and honours the tokens knob', async () => {
    sim.knobs.tokens = 20;
    const capped = await json(await postJson(`${sim.url}/v1/chat/completions`, chatBody('chat', { max_tokens: 3 })));
    expect(capped.usage.completion_tokens).toBe(3);
    expect(capped.choices[0].finish_reason).toBe('length');
    const full = await json(await postJson(`${sim.url}/v1/chat/completions`, chatBody('chat')));
    expect(full.usage.completion_tokens).toBe(20);
  });

  it('streams legacy completions with text pieces and [DONE]', async () => {
    const res = await postJson(`${sim.url}/v1/completions`, { model: 'chat', prompt: 'Once upon', stream: true });
    const frames = parseSse(await res.text());
    expect(frames.at(-1)!.data).toBe('[DONE]');
    const chunks = frames.slice(0, -1).map((f) => JSON.parse(f.data));
    expect(chunks.map((c) => c.choices[0].text).join('')).toBe(completionText('chat', 8));
    expect(chunks.at(-1).choices[0].finish_reason).toBe('stop');
  });

  it('answers the Responses API as JSON and as item-framed created → output_text.delta → completed events', async () => {
    const full = await json(await postJson(`${sim.url}/v1/responses`, { model: 'chat', input: 'Hello there' }));
    expect(full).toMatchObject({
      object: 'response',
      status: 'completed',
      usage: { input_tokens: 6, output_tokens: 8, total_tokens: 14 },
    });
    expect(full.output[0].content[0].text).toBe(completionText('chat', 8));
    const frames = parseSse(
      await (await postJson(`${sim.url}/v1/responses`, { model: 'chat', input: 'Hello there', stream: true })).text(),
    );
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
    expect(
      frames
        .slice(4, 12)
        .map((f) => JSON.parse(f.data).delta)
        .join(''),
    ).toBe(completionText('chat', 8));
    expect(JSON.parse(frames.at(-1)!.data).response.usage.output_tokens).toBe(8);
  });

  it('streams Anthropic messages as named events with input and output token counts', async () => {
    const body = { model: 'chat', max_tokens: 100, stream: true, messages: [{ role: 'user', content: 'Hi Claude' }] };
    const frames = parseSse(await (await postJson(`${sim.url}/v1/messages`, body)).text());
    expect(frames.map((f) => f.event)).toEqual([
      'message_start',
      'ping',
      'content_block_start',
      ...Array(8).fill('content_block_delta'),
      'content_block_stop',
      'message_delta',
      'message_stop',
    ]);
    expect(JSON.parse(frames[0]!.data).message.usage).toEqual({ input_tokens: 6, output_tokens: 0 });
    expect(JSON.parse(frames.at(-2)!.data)).toEqual({
      type: 'message_delta',
      delta: { stop_reason: 'end_turn', stop_sequence: null },
      usage: { output_tokens: 8 },
    });
  });

  it('answers Anthropic non-streaming messages and count_tokens', async () => {
    const msg = await json(
      await postJson(`${sim.url}/v1/messages`, {
        model: 'chat',
        max_tokens: 2,
        messages: [{ role: 'user', content: 'Hi' }],
      }),
    );
    expect(msg).toMatchObject({
      type: 'message',
      stop_reason: 'max_tokens',
      usage: { input_tokens: 5, output_tokens: 2 },
    });
    const count = await json(
      await postJson(`${sim.url}/v1/messages/count_tokens`, {
        model: 'chat',
        messages: [{ role: 'user', content: 'a b c' }],
      }),
    );
    expect(count).toEqual({ input_tokens: 7 });
  });

  it('returns deterministic 8-dimensional embeddings', async () => {
    const body = await json(
      await postJson(`${sim.url}/v1/embeddings`, { model: 'embed', input: ['hello world', 'bye'] }),
    );
    expect(body.data).toHaveLength(2);
    expect(body.data[0].embedding).toHaveLength(8);
    expect(body.data[0].embedding).toEqual(embedding('embed', 'hello world'));
    expect(body.usage).toEqual({ prompt_tokens: 7, total_tokens: 7 });
  });

  it('refuses completions on a model started with --embeddings, as llama-server does (501)', async () => {
    for (const path of ['/v1/chat/completions', '/v1/completions', '/v1/responses', '/v1/messages']) {
      const res = await postJson(`${sim.url}${path}`, { ...chatBody('embed'), prompt: 'hi', input: 'hi' });
      expect(res.status, path).toBe(501);
      expect(await json(res), path).toEqual({
        error: {
          code: 501,
          message: 'This server does not support completions. Start it without `--embeddings`',
          type: 'not_supported_error',
        },
      });
    }
    expect((await postJson(`${sim.url}/v1/chat/completions`, chatBody('chat'))).status).toBe(200);
  });

  it('ranks documents by query-word overlap in /v1/rerank', async () => {
    const body = await json(
      await postJson(`${sim.url}/v1/rerank`, {
        model: 'embed',
        query: 'red apple',
        documents: ['green pear', 'red apple pie', 'red car'],
      }),
    );
    expect(body.results).toEqual([
      { index: 1, relevance_score: 1 },
      { index: 2, relevance_score: 0.5 },
      { index: 0, relevance_score: 0 },
    ]);
  });

  it('returns deterministic audio bytes for speech and base64 images', async () => {
    const a = Buffer.from(
      await (
        await postJson(`${sim.url}/v1/audio/speech`, { model: 'chat', input: 'hello', voice: 'nova' })
      ).arrayBuffer(),
    );
    const res = await postJson(`${sim.url}/v1/audio/speech`, { model: 'chat', input: 'hello', voice: 'nova' });
    expect(res.headers.get('content-type')).toBe('audio/mpeg');
    expect(Buffer.from(await res.arrayBuffer()).equals(a)).toBe(true);
    expect(a.subarray(0, 3).toString()).toBe('ID3');
    const img = await json(
      await postJson(`${sim.url}/v1/images/generations`, { model: 'chat', prompt: 'a cat', n: 2 }),
    );
    expect(img.data).toHaveLength(2);
    expect(Buffer.from(img.data[0].b64_json, 'base64').subarray(1, 4).toString()).toBe('PNG');
  });

  it('records the exact bytes it sent so tests can compare byte for byte', async () => {
    const res = await postJson(`${sim.url}/v1/chat/completions?bytes`, chatBody('chat', { stream: true }));
    const received = Buffer.from(await res.arrayBuffer());
    const rec = await sim.waitForClosed((r) => r.path === '/v1/chat/completions?bytes');
    expect(rec.sentBytes.equals(received)).toBe(true);
    expect(rec.status).toBe(200);
    expect(rec.finishedAt).toBeGreaterThan(rec.receivedAt);
  });
});

describe('timing and failure knobs', () => {
  let sim: Simulator;
  beforeAll(async () => {
    sim = await startSimulator({ config: CONFIG });
  });
  afterAll(() => sim.close());
  afterEach(() => {
    Object.assign(sim.knobs, { ...DEFAULT_KNOBS, version: sim.knobs.version });
  });

  it('failAfterChunks with failMode destroy drops the connection after N frames without [DONE]', async () => {
    sim.knobs.failAfterChunks = 3;
    sim.knobs.failMode = 'destroy';
    const reader = new BodyReader(
      await postJson(`${sim.url}/v1/chat/completions?fail`, chatBody('chat', { stream: true })),
    );
    await expect(reader.rest()).rejects.toThrow();
    expect(parseSse(reader.text)).toHaveLength(3);
    expect(reader.text).not.toContain('[DONE]');
    const rec = await sim.waitForClosed((r) => r.path === '/v1/chat/completions?fail');
    expect(rec.cutByServer).toBe(true);
    expect(rec.aborted).toBe(false);
  });

  it('by default a model server crash (failAfterChunks) ends the body cleanly, still without [DONE]', async () => {
    sim.knobs.failAfterChunks = 2;
    const text = await (await postJson(`${sim.url}/v1/chat/completions`, chatBody('chat', { stream: true }))).text();
    expect(parseSse(text)).toHaveLength(2);
    expect(text).not.toContain('[DONE]');
  });

  it('headersDelayMs holds back the response headers', async () => {
    await sim.load('chat');
    sim.knobs.headersDelayMs = 250;
    const answer = postJson(`${sim.url}/v1/chat/completions`, chatBody('chat', { stream: true }));
    expect(await timerFiresFirst(250, answer)).toBe(true);
    const res = await answer;
    expect(res.status).toBe(200);
    await res.text();
  });

  it('stallAfterChunks pauses the stream mid-way for stallMs', async () => {
    sim.knobs.stallAfterChunks = 2;
    sim.knobs.stallMs = 250;
    // The stall starts after the request, so a 250 ms timer started before it fires first.
    let reader: BodyReader | undefined;
    const thirdFrame = (async () => {
      reader = new BodyReader(await postJson(`${sim.url}/v1/chat/completions`, chatBody('chat', { stream: true })));
      await reader.until((t) => parseSse(t).length >= 3);
    })();
    expect(await timerFiresFirst(250, thirdFrame)).toBe(true);
    expect(await reader!.rest()).toContain('[DONE]');
  });

  it('tokensPerSecond paces the frames', async () => {
    sim.knobs.tokensPerSecond = 100;
    sim.knobs.tokens = 10;
    const stream = (async () =>
      (await postJson(`${sim.url}/v1/chat/completions`, chatBody('chat', { stream: true }))).text())();
    // 13 frames, 12 gaps of 10 ms.
    expect(await timerFiresFirst(110, stream)).toBe(true);
  });

  it('emptyBody502 answers 502 with an empty body like a dead upstream', async () => {
    sim.knobs.emptyBody502 = true;
    const res = await postJson(`${sim.url}/v1/chat/completions`, chatBody('chat'));
    expect(res.status).toBe(502);
    expect(await res.text()).toBe('');
  });

  it('records a client that disconnects mid-stream as aborted and stops writing to it', async () => {
    sim.knobs.tokensPerSecond = 50;
    sim.knobs.tokens = 100;
    const controller = new AbortController();
    const res = await postJson(
      `${sim.url}/v1/chat/completions?abort`,
      chatBody('chat', { stream: true }),
      {},
      controller.signal,
    );
    const reader = new BodyReader(res);
    await reader.until((t) => t.includes('"content":"'));
    controller.abort();
    const rec = await sim.waitForAbort((r) => r.path === '/v1/chat/completions?abort');
    expect(rec.aborted).toBe(true);
    expect(rec.cutByServer).toBe(false);
    expect(rec.closedAt).toBeGreaterThan(rec.receivedAt);
    expect(rec.finishedAt).toBeUndefined();
    const sent = rec.sentBytes.length;
    await new Promise((r) => setTimeout(r, 60));
    expect(rec.sentBytes.length).toBe(sent);
  });

  it('records a client that gives up during headersDelayMs as aborted', async () => {
    await sim.load('chat');
    sim.knobs.headersDelayMs = 1000;
    const controller = new AbortController();
    const pending = postJson(`${sim.url}/v1/chat/completions?early`, chatBody('chat'), {}, controller.signal).catch(
      () => 'aborted',
    );
    await sim.waitForRequest((r) => r.path === '/v1/chat/completions?early');
    controller.abort();
    expect(await pending).toBe('aborted');
    const rec = await sim.waitForAbort((r) => r.path === '/v1/chat/completions?early');
    expect(rec.status).toBeUndefined();
  });
});
