/**
 * The Anthropic Messages endpoints of the fake llama-server. Streams use named events:
 * message_start (input_tokens) → content_block_start → content_block_delta… →
 * content_block_stop → message_delta (output_tokens) → message_stop.
 */
import { completionPieces, completionText, completionTokens, countPromptTokens } from './generate.js';
import { JSON_HEADERS, SSE_HEADERS, namedFrame, type GenerationRequest } from './openai-api.js';
import { respondBody, respondFrames } from './stream.js';

export async function messages(g: GenerationRequest): Promise<void> {
  const inputTokens = countPromptTokens(g.body);
  const { n, truncated } = completionTokens(g.body, g.ctx.knobs.tokens);
  const stopReason = truncated ? 'max_tokens' : 'end_turn';
  const id = `msg_sim${g.ctx.rec.seq}`;
  if (g.body.stream !== true) {
    const body = {
      id,
      type: 'message',
      role: 'assistant',
      model: g.responseModel,
      content: [{ type: 'text', text: completionText(g.modelId, n) }],
      stop_reason: stopReason,
      stop_sequence: null,
      usage: { input_tokens: inputTokens, output_tokens: n },
    };
    return respondBody(g.ctx, 200, JSON_HEADERS, JSON.stringify(body), n);
  }
  const frames = [
    namedFrame('message_start', {
      type: 'message_start',
      message: {
        id,
        type: 'message',
        role: 'assistant',
        model: g.responseModel,
        content: [],
        stop_reason: null,
        stop_sequence: null,
        usage: { input_tokens: inputTokens, output_tokens: 0 },
      },
    }),
    namedFrame('content_block_start', {
      type: 'content_block_start',
      index: 0,
      content_block: { type: 'text', text: '' },
    }),
    ...completionPieces(g.modelId, n).map((text) =>
      namedFrame('content_block_delta', { type: 'content_block_delta', index: 0, delta: { type: 'text_delta', text } }),
    ),
    namedFrame('content_block_stop', { type: 'content_block_stop', index: 0 }),
    namedFrame('message_delta', {
      type: 'message_delta',
      delta: { stop_reason: stopReason, stop_sequence: null },
      usage: { output_tokens: n },
    }),
    namedFrame('message_stop', { type: 'message_stop' }),
  ];
  return respondFrames(g.ctx, { ...SSE_HEADERS }, frames);
}

export async function countTokens(g: GenerationRequest): Promise<void> {
  return respondBody(g.ctx, 200, JSON_HEADERS, JSON.stringify({ input_tokens: countPromptTokens(g.body) }));
}
