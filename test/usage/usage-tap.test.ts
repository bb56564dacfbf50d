/**
 * The stream tap on its own, fed bytes the way upstreams send them: where each kind of stream
 * puts its counts, and what a cut stream is worth. (End to end, against the simulator, in
 * token-accounting.test.ts.)
 */
import { describe, expect, it } from 'vitest';
import type { ProxyContext, UsageProbe } from '../../src/core/context.js';
import { streamFrames } from '../../src/proxy/stream-frames.js';
import { createUsageTap } from '../../src/usage/usage-tap.js';

function streamTap(): { push: (text: string) => void; probe: () => UsageProbe } {
  const ctx = { request: { startedAt: performance.now() }, outcome: { usage: undefined } } as unknown as ProxyContext;
  const tap = createUsageTap({ captureBytes: 0 })(ctx, 200, 'text/event-stream; charset=utf-8')!;
  const frames = streamFrames(tap, undefined)!;
  const push = (text: string) => {
    const chunk = Buffer.from(text);
    tap.onChunk(chunk);
    frames.push(chunk);
  };
  return { push, probe: () => ctx.outcome.usage! };
}

const frame = (payload: object) => `data: ${JSON.stringify(payload)}\n\n`;
const chunk = (delta: object, extra: object = {}) =>
  frame({ object: 'chat.completion.chunk', choices: [{ index: 0, delta, finish_reason: null }], ...extra });
const DONE = 'data: [DONE]\n\n';

describe('usage tap on streams', () => {
  it('takes the usage chunk an OpenAI stream sends after its finish chunk', () => {
    const { push, probe } = streamTap();
    push(chunk({ role: 'assistant', content: '' }));
    for (const word of ['Hel', 'lo', ' there']) push(chunk({ content: word }));
    push(`data: ${JSON.stringify({ choices: [{ index: 0, delta: {}, finish_reason: 'stop' }] })}\n\n`);
    push(
      frame({
        choices: [],
        usage: { prompt_tokens: 12, completion_tokens: 3, prompt_tokens_details: { cached_tokens: 4 } },
      }),
    );
    push(DONE);
    expect(probe().tokens()).toEqual({ input: 12, output: 3, cached: 4, source: 'usage' });
    expect(probe().firstTokenMs()).toBeGreaterThanOrEqual(0);
  });

  it('counts a llama.cpp stream from the timings of its last frame, also when every frame carries them', () => {
    const { push, probe } = streamTap();
    for (let n = 1; n <= 5; n++)
      push(chunk({ content: `t${n}` }, { timings: { prompt_n: 7, cache_n: 2, predicted_n: n } }));
    push(
      frame({
        choices: [{ index: 0, delta: {}, finish_reason: 'stop' }],
        timings: { prompt_n: 7, cache_n: 2, predicted_n: 5 },
      }),
    );
    push(DONE);
    expect(probe().tokens()).toEqual({ input: 9, output: 5, cached: 2, source: 'timings' });
  });

  it('takes the last of the usage objects a backend repeats on every frame', () => {
    const { push, probe } = streamTap();
    for (let n = 1; n <= 6; n++)
      push(chunk({ content: `t${n}` }, { usage: { prompt_tokens: 5, completion_tokens: n } }));
    push(DONE);
    expect(probe().tokens()).toEqual({ input: 5, output: 6, cached: null, source: 'usage' });
  });

  it('estimates a cut stream from the frames that carried text, not the role frame', () => {
    const { push, probe } = streamTap();
    push(chunk({ role: 'assistant', content: '' }));
    for (let n = 1; n <= 4; n++) push(chunk({ content: `t${n}` }));
    expect(probe().tokens()).toEqual({ input: null, output: 4, cached: null, source: 'estimate' });
  });

  it('reads frames split across chunks at any byte, and asks again after more arrived', () => {
    const { push, probe } = streamTap();
    const text = chunk({ content: 'a' }) + chunk({ content: 'b' });
    for (const ch of text) push(ch);
    expect(probe().tokens()).toMatchObject({ output: 2, source: 'estimate' });
    const tail = frame({ choices: [], usage: { prompt_tokens: 3, completion_tokens: 2 } }) + DONE;
    push(tail.slice(0, 17));
    push(tail.slice(17));
    expect(probe().tokens()).toEqual({ input: 3, output: 2, cached: null, source: 'usage' });
  });

  it('reads frames written with spaces around the colons (Python json.dumps), and every kind of generated text', () => {
    const { push, probe } = streamTap();
    const spaced = (value: object) => `data: ${JSON.stringify(value).replace(/":/g, '": ').replace(/,"/g, ', "')}\n\n`;
    push(spaced({ choices: [{ index: 0, delta: { role: 'assistant', content: '' } }] }));
    push(spaced({ choices: [{ index: 0, delta: { reasoning_content: 'Thinking' } }] }));
    push(spaced({ choices: [{ index: 0, delta: { content: 'Hi' } }] }));
    push(spaced({ choices: [{ index: 0, text: ' there' }] }));
    push(
      spaced({ choices: [{ index: 0, delta: { tool_calls: [{ index: 0, function: { arguments: '{"a":1}' } }] } }] }),
    );
    // Keys that only look alike, and a quoted "usage" inside generated text, count for nothing.
    push(
      spaced({
        choices: [{ index: 0, delta: { context: 'x', subtext: 'y', content: 'say "usage": {"prompt_tokens": 99}' } }],
      }),
    );
    expect(probe().tokens()).toEqual({ input: null, output: 5, cached: null, source: 'estimate' });
    push(spaced({ choices: [], usage: { prompt_tokens: 8, completion_tokens: 5 } }));
    push(DONE);
    expect(probe().tokens()).toEqual({ input: 8, output: 5, cached: null, source: 'usage' });
  });

  it('takes usage and timings each from the last frame that held it', () => {
    const { push, probe } = streamTap();
    push(
      chunk(
        { content: 'a' },
        { usage: { prompt_tokens: 5, completion_tokens: 1 }, timings: { prompt_n: 4, cache_n: 1, predicted_n: 1 } },
      ),
    );
    push(chunk({ content: 'b' }, { usage: { prompt_tokens: 5, completion_tokens: 2 } }));
    push(chunk({ content: 'c' }, { timings: { prompt_n: 4, cache_n: 1, predicted_n: 3 } }));
    push(DONE);
    // usage from the second frame (not the first's), the cached count from the latest timings.
    expect(probe().tokens()).toEqual({ input: 5, output: 2, cached: 1, source: 'usage' });
  });

  it('merges an Anthropic stream: input from message_start, output from message_delta', () => {
    const { push, probe } = streamTap();
    const event = (name: string, data: object) =>
      `event: ${name}\ndata: ${JSON.stringify({ type: name, ...data })}\n\n`;
    push(
      event('message_start', {
        message: { usage: { input_tokens: 20, cache_read_input_tokens: 5, output_tokens: 1 } },
      }),
    );
    push(event('content_block_start', { index: 0, content_block: { type: 'text', text: '' } }));
    for (const text of ['Hi', ' you'])
      push(event('content_block_delta', { index: 0, delta: { type: 'text_delta', text } }));
    push(event('content_block_stop', { index: 0 }));
    expect(probe().tokens()).toEqual({ input: 25, output: 2, cached: 5, source: 'estimate' });
    push(event('message_delta', { delta: { stop_reason: 'end_turn' }, usage: { output_tokens: 2 } }));
    push(event('message_stop', {}));
    expect(probe().tokens()).toEqual({ input: 25, output: 2, cached: 5, source: 'usage' });
  });
});
