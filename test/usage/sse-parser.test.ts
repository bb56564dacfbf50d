/**
 * The one SSE parser (`src/core/sse-decoder.ts`), fed the same bytes cut at every offset (and
 * at every pair of offsets), must produce the same frames; and the usage tap built on it must
 * find the same token counts however the upstream chunks a stream.
 */
import { describe, expect, it } from 'vitest';
import type { ProxyContext } from '../../src/core/context.js';
import { SseDecoder, SseParser } from '../../src/core/sse-decoder.js';
import { streamFrames } from '../../src/proxy/stream-frames.js';
import { createUsageTap } from '../../src/usage/usage-tap.js';

const MIXED = Buffer.from(
  'event: message_start\ndata: {"a":1}\n\n' +
    ': keep-alive comment\r\n' +
    'data:no space\r\ndata: second line\r\n\r\n' +
    'event:ping\rdata: {"ü":"naïve ✓ 🚀"}\r\r' +
    'id: 7\nretry: 100\ndata\n\n' +
    'data: {"x":"split\\ncrlf"}\n\n' +
    'event: orphan\n\n' +
    'data: last\n\n',
  'utf8',
);

interface Plain {
  event: string;
  data: string;
}

function parse(chunks: Buffer[], maxLineBytes?: number): Plain[] {
  const out: Plain[] = [];
  const parser = new SseParser(
    (event, bytes, start, end) => out.push({ event, data: bytes.toString('utf8', start, end) }),
    maxLineBytes === undefined ? {} : { maxLineBytes },
  );
  for (const chunk of chunks) parser.push(chunk);
  return out;
}

describe('SSE parser', () => {
  const whole = parse([MIXED]);

  it('reads events, comments, CR/LF/CRLF line ends, multi-line data and fields without a space', () => {
    expect(whole).toEqual([
      { event: 'message_start', data: '{"a":1}' },
      { event: '', data: 'no space\nsecond line' },
      { event: 'ping', data: '{"ü":"naïve ✓ 🚀"}' },
      { event: '', data: '' },
      { event: '', data: '{"x":"split\\ncrlf"}' },
      { event: '', data: 'last' },
    ]);
  });

  it('gives the same frames with the bytes split at every offset, UTF-8 sequences and CRLF included', () => {
    for (let cut = 0; cut <= MIXED.length; cut++) {
      expect(parse([MIXED.subarray(0, cut), MIXED.subarray(cut)]), `cut at ${cut}`).toEqual(whole);
    }
  });

  it('gives the same frames with the bytes split at every pair of offsets', () => {
    for (let a = 0; a <= MIXED.length; a++) {
      for (let b = a; b <= MIXED.length; b++) {
        const frames = parse([MIXED.subarray(0, a), MIXED.subarray(a, b), MIXED.subarray(b)]);
        if (JSON.stringify(frames) !== JSON.stringify(whole)) expect(frames, `cuts at ${a} and ${b}`).toEqual(whole);
      }
    }
  });

  it('gives the same frames one byte at a time', () => {
    expect(parse([...MIXED].map((byte) => Buffer.from([byte])))).toEqual(whole);
  });

  it('drops a frame whose line is over the limit, wherever it is cut, and keeps the next ones', () => {
    const text = Buffer.from(`data: ${'x'.repeat(100)}\n\ndata: small\n\n`);
    for (let cut = 0; cut <= text.length; cut++) {
      expect(parse([text.subarray(0, cut), text.subarray(cut)], 64), `cut at ${cut}`).toEqual([
        { event: '', data: 'small' },
      ]);
    }
  });

  it('decodes to strings for the admin side, with the default event type', () => {
    const decoder = new SseDecoder();
    expect([
      ...decoder.push('data: one\n'),
      ...decoder.push(new Uint8Array(Buffer.from('\nevent: x\ndata: two\n\n'))),
    ]).toEqual([
      { event: 'message', data: 'one' },
      { event: 'x', data: 'two' },
    ]);
  });
});

function fakeCtx(): ProxyContext {
  return { request: { startedAt: performance.now() }, outcome: { usage: undefined } } as unknown as ProxyContext;
}

function tapTokens(chunks: Buffer[], contentType = 'text/event-stream') {
  const ctx = fakeCtx();
  const tap = createUsageTap({ captureBytes: 0 })(ctx, 200, contentType)!;
  const frames = streamFrames(tap, undefined);
  for (const c of chunks) {
    tap.onChunk(c);
    frames?.push(c);
  }
  tap.onEnd('complete');
  return ctx.outcome.usage!.tokens();
}

const OPENAI_STREAM = Buffer.from(
  [
    { choices: [{ delta: { role: 'assistant', content: null } }] },
    { choices: [{ delta: { content: 'alpha' } }] },
    { choices: [{ delta: { content: ' bravo' } }] },
    { choices: [{ delta: { reasoning_content: 'hmm' } }] },
    { choices: [{ finish_reason: 'stop', delta: {} }] },
    {
      choices: [],
      usage: { prompt_tokens: 11, completion_tokens: 3, total_tokens: 14, prompt_tokens_details: { cached_tokens: 4 } },
      timings: { prompt_n: 7, cache_n: 4, predicted_n: 3 },
    },
  ]
    .map((c) => `data: ${JSON.stringify(c)}\n\n`)
    .join('') + 'data: [DONE]\n\n',
);

const ANTHROPIC_STREAM = Buffer.from(
  [
    [
      'message_start',
      { type: 'message_start', message: { usage: { input_tokens: 5, cache_read_input_tokens: 10, output_tokens: 0 } } },
    ],
    ['content_block_start', { type: 'content_block_start', index: 0, content_block: { type: 'text', text: '' } }],
    [
      'content_block_delta',
      {
        type: 'content_block_delta',
        index: 0,
        delta: { type: 'text_delta', text: 'hi "usage": {"output_tokens": 999}' },
      },
    ],
    ['content_block_delta', { type: 'content_block_delta', index: 0, delta: { type: 'text_delta', text: ' there' } }],
    ['message_delta', { type: 'message_delta', delta: { stop_reason: 'end_turn' }, usage: { output_tokens: 2 } }],
    ['message_stop', { type: 'message_stop' }],
  ]
    .map(([event, data]) => `event: ${event as string}\r\ndata: ${JSON.stringify(data)}\r\n\r\n`)
    .join(''),
);

describe('usage tap on streams', () => {
  it('prefers the usage object of an OpenAI stream, wherever the stream is cut', () => {
    for (let cut = 0; cut <= OPENAI_STREAM.length; cut++) {
      expect(tapTokens([OPENAI_STREAM.subarray(0, cut), OPENAI_STREAM.subarray(cut)]), `cut at ${cut}`).toEqual({
        input: 11,
        output: 3,
        cached: 4,
        source: 'usage',
      });
    }
  });

  it('reads llama.cpp timings when the client did not ask for usage', () => {
    const noUsage = Buffer.from(OPENAI_STREAM.toString().replace(/"usage":\{[^}]*\{[^}]*\}\},/, ''));
    expect(noUsage.includes('"usage"')).toBe(false);
    for (let cut = 0; cut <= noUsage.length; cut += 7) {
      expect(tapTokens([noUsage.subarray(0, cut), noUsage.subarray(cut)])).toEqual({
        input: 11,
        output: 3,
        cached: 4,
        source: 'timings',
      });
    }
  });

  it('merges Anthropic message_start and message_delta usage, and ignores usage-like text inside strings', () => {
    for (let cut = 0; cut <= ANTHROPIC_STREAM.length; cut++) {
      expect(tapTokens([ANTHROPIC_STREAM.subarray(0, cut), ANTHROPIC_STREAM.subarray(cut)]), `cut at ${cut}`).toEqual({
        input: 15,
        output: 2,
        cached: 10,
        source: 'usage',
      });
    }
  });

  it('counts the generated frames of a stream cut before its usage', () => {
    const cut = ANTHROPIC_STREAM.indexOf('event: message_delta');
    expect(tapTokens([ANTHROPIC_STREAM.subarray(0, cut)])).toEqual({
      input: 15,
      output: 2,
      cached: 10,
      source: 'estimate',
    });
    const openaiCut = OPENAI_STREAM.indexOf('data: {"choices":[{"finish_reason"');
    expect(tapTokens([OPENAI_STREAM.subarray(0, openaiCut)])).toEqual({
      input: null,
      output: 3,
      cached: null,
      source: 'estimate',
    });
  });

  it('finds usage and timings in a JSON body split in many chunks', () => {
    const body = Buffer.from(
      JSON.stringify({
        choices: [{ message: { content: 'the "usage" word' } }],
        usage: { prompt_tokens: 9, completion_tokens: 8 },
        timings: { prompt_n: 9, cache_n: 0, predicted_n: 8 },
      }),
    );
    const chunks = [];
    for (let i = 0; i < body.length; i += 5) chunks.push(body.subarray(i, i + 5));
    expect(tapTokens(chunks, 'application/json; charset=utf-8')).toEqual({
      input: 9,
      output: 8,
      cached: 0,
      source: 'usage',
    });
  });
});
