/**
 * A stream that llama-swap ends cleanly but before its terminal frame (a crashed llama-server)
 * gets one terminal error event in the caller's format, so the official SDKs raise an error
 * instead of returning a truncated answer; the call is recorded as `upstream_truncated`.
 * Complete streams pass through byte for byte.
 */
import Anthropic from '@anthropic-ai/sdk';
import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startRecordingUpstream, type RecordingUpstream } from '../fakes/recording-upstream.js';
import { startTestGateway, type TestGateway } from '../helpers/gateway.js';
import { rawRequest } from '../helpers/http.js';
import { recordFor, requestId, startUsageGateway } from '../usage/usage-helpers.js';

const CHAT_DELTAS = [
  'data: {"id":"c1","object":"chat.completion.chunk","created":1,"model":"m",' +
    '"choices":[{"index":0,"delta":{"content":"Hel"},"finish_reason":null}]}\n\n',
  'data: {"id":"c1","object":"chat.completion.chunk","created":1,"model":"m",' +
    '"choices":[{"index":0,"delta":{"content":"lo"},"finish_reason":null}]}\n\n',
];
const CHAT_WHOLE = [...CHAT_DELTAS, 'data: [DONE]\n\n'];
const frame = (event: string, data: unknown) => `event: ${event}\ndata: ${JSON.stringify(data)}\n\n`;
const MESSAGE_START = frame('message_start', {
  type: 'message_start',
  message: {
    id: 'msg_1',
    type: 'message',
    role: 'assistant',
    model: 'm',
    content: [],
    stop_reason: null,
    stop_sequence: null,
    usage: { input_tokens: 3, output_tokens: 0 },
  },
});
const ANTHROPIC_CUT = [
  MESSAGE_START,
  frame('content_block_start', { type: 'content_block_start', index: 0, content_block: { type: 'text', text: '' } }),
  frame('content_block_delta', { type: 'content_block_delta', index: 0, delta: { type: 'text_delta', text: 'Hel' } }),
];
const ANTHROPIC_WHOLE = [
  ...ANTHROPIC_CUT,
  frame('content_block_stop', { type: 'content_block_stop', index: 0 }),
  frame('message_delta', {
    type: 'message_delta',
    delta: { stop_reason: 'end_turn', stop_sequence: null },
    usage: { output_tokens: 1 },
  }),
  frame('message_stop', { type: 'message_stop' }),
];
const RESPONSES_CUT = [
  frame('response.created', {
    type: 'response.created',
    sequence_number: 0,
    response: { id: 'r1', object: 'response', status: 'in_progress', output: [] },
  }),
  frame('response.output_text.delta', {
    type: 'response.output_text.delta',
    sequence_number: 1,
    item_id: 'i1',
    output_index: 0,
    content_index: 0,
    delta: 'Hel',
  }),
];
const RESPONSES_WHOLE = [
  ...RESPONSES_CUT,
  frame('response.completed', {
    type: 'response.completed',
    sequence_number: 2,
    response: {
      id: 'r1',
      object: 'response',
      status: 'completed',
      output: [],
      usage: { input_tokens: 3, output_tokens: 1, total_tokens: 4 },
    },
  }),
];

let upstream: RecordingUpstream;
let gateway: TestGateway;
let unrecorded: TestGateway;

/** The upstream answers 200 with these SSE frames, one write each, then ends the response cleanly. */
function streamFrames(frames: string[]): void {
  upstream.handle(async (_req, res) => {
    res.writeHead(200, { 'content-type': 'text/event-stream' });
    for (const f of frames) {
      res.write(f);
      await new Promise((r) => setImmediate(r));
    }
    res.end();
  });
}

beforeAll(async () => {
  upstream = await startRecordingUpstream();
  gateway = await startUsageGateway(upstream.url);
  unrecorded = await startTestGateway(upstream.url, { usageRecording: false });
});
afterAll(async () => {
  await gateway?.close();
  await unrecorded?.close();
  await upstream?.close();
});

const openai = (gw: TestGateway) => new OpenAI({ baseURL: `${gw.url}/v1`, apiKey: 'open-mode', maxRetries: 0 });
const anthropic = (gw: TestGateway) => new Anthropic({ baseURL: gw.url, apiKey: 'open-mode', maxRetries: 0 });

describe('a stream that ends before its terminal frame', () => {
  it('makes the OpenAI SDK throw after the deltas it got, and is recorded as upstream_truncated', async () => {
    streamFrames(CHAT_DELTAS);
    const id = requestId('cut-chat');
    const stream = await openai(gateway).chat.completions.create(
      { model: 'm', stream: true, messages: [{ role: 'user', content: 'hi' }] },
      { headers: { 'x-request-id': id } },
    );
    let text = '';
    const iterate = async () => {
      for await (const chunk of stream) text += chunk.choices[0]?.delta?.content ?? '';
    };
    await expect(iterate()).rejects.toMatchObject({
      constructor: OpenAI.APIError,
      code: 'upstream_truncated',
      type: 'server_error',
    });
    expect(text).toBe('Hello');
    const record = await recordFor(gateway, id);
    expect(record).toMatchObject({
      status: 200,
      streamed: true,
      errorClass: 'upstream_truncated',
      clientAborted: false,
    });
  });

  it('ends the bytes with exactly one OpenAI error frame after what upstream sent', async () => {
    streamFrames(CHAT_DELTAS);
    const res = await rawRequest(`${gateway.url}/v1/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: '{"model":"m","stream":true}',
    });
    const text = res.body.toString('utf8');
    expect(text.startsWith(CHAT_DELTAS.join(''))).toBe(true);
    const added = text.slice(CHAT_DELTAS.join('').length);
    expect(added).toMatch(/^data: \{"error":.*\}\n\n$/);
    expect(JSON.parse(added.slice(6))).toEqual({
      error: {
        message: 'The upstream stream ended without its final event: the answer is incomplete.',
        type: 'server_error',
        param: null,
        code: 'upstream_truncated',
      },
    });
  });

  it('makes the Anthropic SDK throw, with an `event: error` frame', async () => {
    streamFrames(ANTHROPIC_CUT);
    const stream = await anthropic(gateway).messages.create({
      model: 'm',
      max_tokens: 10,
      stream: true,
      messages: [{ role: 'user', content: 'hi' }],
    });
    const events: string[] = [];
    const iterate = async () => {
      for await (const event of stream) events.push(event.type);
    };
    await expect(iterate()).rejects.toBeInstanceOf(Anthropic.APIError);
    expect(events).toEqual(['message_start', 'content_block_start', 'content_block_delta']);

    const res = await rawRequest(`${gateway.url}/v1/messages`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: '{"model":"m","stream":true}',
    });
    const added = res.body.toString('utf8').slice(ANTHROPIC_CUT.join('').length);
    expect(added).toBe(
      `event: error\ndata: {"type":"error","error":{"type":"api_error","message":"The upstream stream ` +
        `ended without its final event: the answer is incomplete."}}\n\n`,
    );
  });

  it('makes the OpenAI SDK throw on a Responses stream without response.completed', async () => {
    streamFrames(RESPONSES_CUT);
    const stream = await openai(gateway).responses.create({ model: 'm', input: 'hi', stream: true });
    const events: string[] = [];
    const iterate = async () => {
      for await (const event of stream) events.push(event.type);
    };
    await expect(iterate()).rejects.toMatchObject({ code: 'upstream_truncated' });
    expect(events).toEqual(['response.created', 'response.output_text.delta']);
  });

  it('is caught with usage recording off too, and logged as upstream_truncated', async () => {
    streamFrames(CHAT_DELTAS);
    const stream = await openai(unrecorded).chat.completions.create(
      { model: 'm', stream: true, messages: [{ role: 'user', content: 'hi' }] },
      { headers: { 'x-request-id': 'cut-unrecorded' } },
    );
    const iterate = async () => {
      for await (const _chunk of stream);
    };
    await expect(iterate()).rejects.toMatchObject({ code: 'upstream_truncated' });
    await expect
      .poll(() => unrecorded.logLines().find((l) => l.req_id === 'cut-unrecorded'))
      .toMatchObject({ status: 200, error: 'upstream_truncated' });
  });

  it('ends a stream cut mid-frame with line breaks first, so the error stands as its own frame', async () => {
    streamFrames([CHAT_DELTAS[0]!, 'data: {"id":"c1","choi']);
    const res = await rawRequest(`${gateway.url}/v1/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: '{"model":"m","stream":true}',
    });
    const text = res.body.toString('utf8');
    expect(text.startsWith(`${CHAT_DELTAS[0]}data: {"id":"c1","choi\n\ndata: {"error":`)).toBe(true);
    expect(text.endsWith('"code":"upstream_truncated"}}\n\n')).toBe(true);
  });
});

describe('a complete stream', () => {
  for (const [path, frames] of [
    ['/v1/chat/completions', CHAT_WHOLE],
    ['/v1/messages', ANTHROPIC_WHOLE],
    ['/v1/responses', RESPONSES_WHOLE],
  ] as const) {
    it(`passes through ${path} byte for byte, recorded without an error`, async () => {
      streamFrames([...frames]);
      const id = requestId('whole');
      const res = await rawRequest(`${gateway.url}${path}`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'x-request-id': id },
        body: '{"model":"m","stream":true}',
      });
      expect(res.status).toBe(200);
      expect(res.body.equals(Buffer.from(frames.join(''), 'utf8'))).toBe(true);
      expect(await recordFor(gateway, id)).toMatchObject({ status: 200, errorClass: null });
    });
  }

  it('reaches the SDKs whole', async () => {
    streamFrames(ANTHROPIC_WHOLE);
    const message = await anthropic(gateway)
      .messages.stream({ model: 'm', max_tokens: 10, messages: [{ role: 'user', content: 'hi' }] })
      .finalMessage();
    expect(message.content).toEqual([{ type: 'text', text: 'Hel' }]);
    streamFrames(CHAT_WHOLE);
    const stream = await openai(gateway).chat.completions.create({
      model: 'm',
      stream: true,
      messages: [{ role: 'user', content: 'hi' }],
    });
    let text = '';
    for await (const chunk of stream) text += chunk.choices[0]?.delta?.content ?? '';
    expect(text).toBe('Hello');
  });
});
