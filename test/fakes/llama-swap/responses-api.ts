/**
 * The Responses API of the fake llama-server (`POST /v1/responses`), complete enough for the
 * Codex CLI: output items (reasoning, message or function call), every item framed by
 * `response.output_item.added` / `.done`, text and arguments streamed as deltas, and
 * `response.completed` carrying the whole response with its usage. Event names and shapes follow
 * OpenAI's Responses streaming events, which llama-server's `to_json_oaicompat_resp_stream`
 * (`tools/server/server-task.cpp`) reproduces.
 */
import { JSON_HEADERS, namedFrame, nowSeconds, planTurn, SSE_HEADERS, type GenerationRequest } from './openai-api.js';
import { respondBody, respondFrames } from './stream.js';

type Item = Record<string, unknown>;

export async function responses(g: GenerationRequest): Promise<void> {
  const p = planTurn(g, 'responses');
  const seq = g.ctx.rec.seq;
  const respId = `resp_sim${seq}`;
  const createdAt = nowSeconds();
  const usage = {
    input_tokens: p.promptTokens,
    input_tokens_details: { cached_tokens: 0 },
    output_tokens: p.outputTokens,
    output_tokens_details: { reasoning_tokens: p.reasoning.length },
    total_tokens: p.promptTokens + p.outputTokens,
  };
  const reasoningText = p.reasoning.join('');
  const items: Item[] = [];
  if (p.reasoning.length > 0) {
    items.push({
      type: 'reasoning',
      id: `rs_sim${seq}`,
      summary: [],
      content: [{ type: 'reasoning_text', text: reasoningText }],
    });
  }
  const call = p.toolCall;
  if (call) {
    items.push({
      type: 'function_call',
      id: `fc_sim${seq}`,
      call_id: call.id,
      name: call.name,
      arguments: call.arguments,
      status: 'completed',
    });
  } else {
    items.push({
      type: 'message',
      id: `msg_sim${seq}`,
      status: 'completed',
      role: 'assistant',
      content: [{ type: 'output_text', text: p.text, annotations: [] }],
    });
  }
  const incomplete = p.truncated;
  const response = (status: string, output: Item[]) => ({
    id: respId,
    object: 'response',
    created_at: createdAt,
    status,
    model: g.responseModel,
    output,
    incomplete_details: status === 'incomplete' ? { reason: 'max_output_tokens' } : null,
    usage: status === 'in_progress' ? null : usage,
  });
  const finalStatus = incomplete ? 'incomplete' : 'completed';
  if (g.body.stream !== true) {
    return respondBody(g.ctx, 200, JSON_HEADERS, JSON.stringify(response(finalStatus, items)), p.outputTokens);
  }

  let n = 0;
  const frames: string[] = [];
  const emit = (type: string, fields: Record<string, unknown>) =>
    frames.push(namedFrame(type, { type, sequence_number: n++, ...fields }));
  emit('response.created', { response: response('in_progress', []) });
  emit('response.in_progress', { response: response('in_progress', []) });
  items.forEach((item, outputIndex) => {
    const at = { item_id: item.id, output_index: outputIndex };
    if (item.type === 'reasoning') {
      emit('response.output_item.added', { output_index: outputIndex, item: { ...item, content: [] } });
      for (const delta of p.reasoning) emit('response.reasoning_text.delta', { ...at, content_index: 0, delta });
      emit('response.reasoning_text.done', { ...at, content_index: 0, text: reasoningText });
    } else if (item.type === 'function_call' && call) {
      emit('response.output_item.added', {
        output_index: outputIndex,
        item: { ...item, arguments: '', status: 'in_progress' },
      });
      for (const delta of call.pieces) emit('response.function_call_arguments.delta', { ...at, delta });
      emit('response.function_call_arguments.done', { ...at, arguments: call.arguments });
    } else {
      emit('response.output_item.added', {
        output_index: outputIndex,
        item: { ...item, status: 'in_progress', content: [] },
      });
      const part = { type: 'output_text', text: '', annotations: [] };
      emit('response.content_part.added', { ...at, content_index: 0, part });
      for (const delta of p.pieces) emit('response.output_text.delta', { ...at, content_index: 0, delta });
      emit('response.output_text.done', { ...at, content_index: 0, text: p.text });
      emit('response.content_part.done', { ...at, content_index: 0, part: { ...part, text: p.text } });
    }
    emit('response.output_item.done', { output_index: outputIndex, item });
  });
  emit(`response.${finalStatus}`, { response: response(finalStatus, items) });
  return respondFrames(g.ctx, { ...SSE_HEADERS }, frames);
}
