/**
 * The Anthropic Messages endpoints of the fake llama-server. Streams use named events:
 * message_start (input_tokens) → ping → content blocks → message_delta (output_tokens) →
 * message_stop. Blocks, each framed by content_block_start / content_block_stop: a `thinking`
 * block for a reasoning model (`thinking_delta`s, then one `signature_delta` before it closes,
 * as llama-server's `tools/server/tests/unit/test_compat_anthropic.py` requires), then either a
 * `text` block (`text_delta`s) or a `tool_use` block (`input_json_delta`s).
 */
import { countPromptTokens } from './generate.js';
import { JSON_HEADERS, SSE_HEADERS, namedFrame, planTurn, type GenerationRequest } from './openai-api.js';
import { respondBody, respondFrames } from './stream.js';

/** llama-server signs nothing: the signature is empty, but the delta is sent. */
const SIGNATURE = '';

export async function messages(g: GenerationRequest): Promise<void> {
  const p = planTurn(g, 'messages');
  const call = p.toolCall;
  const stopReason = call ? 'tool_use' : p.truncated ? 'max_tokens' : 'end_turn';
  const id = `msg_sim${g.ctx.rec.seq}`;
  const thinking = p.reasoning.join('');
  const content: Record<string, unknown>[] = [];
  if (p.reasoning.length > 0) content.push({ type: 'thinking', thinking, signature: SIGNATURE });
  content.push(
    call
      ? { type: 'tool_use', id: call.id, name: call.name, input: JSON.parse(call.arguments) as unknown }
      : { type: 'text', text: p.text },
  );
  if (g.body.stream !== true) {
    const body = {
      id,
      type: 'message',
      role: 'assistant',
      model: g.responseModel,
      content,
      stop_reason: stopReason,
      stop_sequence: null,
      usage: { input_tokens: p.promptTokens, output_tokens: p.outputTokens },
    };
    return respondBody(g.ctx, 200, JSON_HEADERS, JSON.stringify(body), p.outputTokens);
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
        usage: { input_tokens: p.promptTokens, output_tokens: 0 },
      },
    }),
    namedFrame('ping', { type: 'ping' }),
  ];
  const block = (index: number, start: Record<string, unknown>, deltas: Record<string, unknown>[]) => {
    frames.push(namedFrame('content_block_start', { type: 'content_block_start', index, content_block: start }));
    for (const delta of deltas)
      frames.push(namedFrame('content_block_delta', { type: 'content_block_delta', index, delta }));
    frames.push(namedFrame('content_block_stop', { type: 'content_block_stop', index }));
  };
  let index = 0;
  if (p.reasoning.length > 0) {
    block(index++, { type: 'thinking', thinking: '', signature: '' }, [
      ...p.reasoning.map((t) => ({ type: 'thinking_delta', thinking: t })),
      { type: 'signature_delta', signature: SIGNATURE },
    ]);
  }
  if (call) {
    block(
      index,
      { type: 'tool_use', id: call.id, name: call.name, input: {} },
      call.pieces.map((partial_json) => ({ type: 'input_json_delta', partial_json })),
    );
  } else {
    block(
      index,
      { type: 'text', text: '' },
      p.pieces.map((text) => ({ type: 'text_delta', text })),
    );
  }
  frames.push(
    namedFrame('message_delta', {
      type: 'message_delta',
      delta: { stop_reason: stopReason, stop_sequence: null },
      usage: { output_tokens: p.outputTokens },
    }),
    namedFrame('message_stop', { type: 'message_stop' }),
  );
  return respondFrames(g.ctx, { ...SSE_HEADERS }, frames);
}

export async function countTokens(g: GenerationRequest): Promise<void> {
  return respondBody(g.ctx, 200, JSON_HEADERS, JSON.stringify({ input_tokens: countPromptTokens(g.body) }));
}
