/**
 * The OpenAI-compatible endpoints of the fake llama-server: chat completions, completions and a
 * minimal Responses API. Wire details follow llama-server: a role chunk first, one chunk per
 * token, a finish chunk, an optional usage chunk (`stream_options.include_usage`, with
 * `choices: []`), `timings` on the last chunk, then `data: [DONE]`.
 */
import { completionPieces, completionText, completionTokens, countPromptTokens, timings } from './generate.js';
import { respondBody, respondFrames, type ResponderContext } from './stream.js';

export interface GenerationRequest {
  ctx: ResponderContext;
  /** Real model ID: seeds the generated words. */
  modelId: string;
  /** The `model` value echoed in responses (what the client sent, or `useModelName`). */
  responseModel: string;
  body: Record<string, unknown>;
}

export const SSE_HEADERS: Readonly<Record<string, string>> = Object.freeze({
  'Content-Type': 'text/event-stream',
  'Cache-Control': 'no-cache',
  Server: 'llama.cpp',
  // Added by llama-swap's ModifyResponse for event streams.
  'X-Accel-Buffering': 'no',
});

export const JSON_HEADERS: Readonly<Record<string, string>> = Object.freeze({
  'Content-Type': 'application/json; charset=utf-8',
  Server: 'llama.cpp',
});

const dataFrame = (value: unknown): string => `data: ${JSON.stringify(value)}\n\n`;
export const namedFrame = (event: string, value: unknown): string =>
  `event: ${event}\ndata: ${JSON.stringify(value)}\n\n`;
const DONE_FRAME = 'data: [DONE]\n\n';

const FINGERPRINT = 'b6000-simulated';

function nowSeconds(): number {
  return Math.floor(Date.now() / 1000);
}

function plan(g: GenerationRequest) {
  const promptTokens = countPromptTokens(g.body);
  const { n, truncated } = completionTokens(g.body, g.ctx.knobs.tokens);
  const usage = { completion_tokens: n, prompt_tokens: promptTokens, total_tokens: n + promptTokens };
  return {
    promptTokens,
    n,
    finishReason: truncated ? 'length' : 'stop',
    usage,
    timings: timings(promptTokens, n, g.ctx.knobs.tokensPerSecond),
    pieces: completionPieces(g.modelId, n),
    text: completionText(g.modelId, n),
    includeUsage: isRecord(g.body.stream_options) && g.body.stream_options.include_usage === true,
  };
}

export async function chatCompletions(g: GenerationRequest): Promise<void> {
  const p = plan(g);
  const id = `chatcmpl-sim${g.ctx.rec.seq}`;
  const created = nowSeconds();
  const base = {
    created,
    id,
    model: g.responseModel,
    system_fingerprint: FINGERPRINT,
    object: 'chat.completion.chunk',
  };
  if (g.body.stream !== true) {
    const body = {
      choices: [{ finish_reason: p.finishReason, index: 0, message: { role: 'assistant', content: p.text } }],
      created,
      model: g.responseModel,
      system_fingerprint: FINGERPRINT,
      object: 'chat.completion',
      usage: p.usage,
      id,
      timings: p.timings,
    };
    return respondBody(g.ctx, 200, JSON_HEADERS, JSON.stringify(body), p.n);
  }
  const chunks: Record<string, unknown>[] = [
    { choices: [{ finish_reason: null, index: 0, delta: { role: 'assistant', content: null } }], ...base },
    ...p.pieces.map((piece) => ({ choices: [{ finish_reason: null, index: 0, delta: { content: piece } }], ...base })),
    { choices: [{ finish_reason: p.finishReason, index: 0, delta: {} }], ...base },
  ];
  if (p.includeUsage) chunks.push({ choices: [], ...base, usage: p.usage });
  chunks[chunks.length - 1]!.timings = p.timings;
  return respondFrames(g.ctx, { ...SSE_HEADERS }, [...chunks.map(dataFrame), DONE_FRAME]);
}

export async function completions(g: GenerationRequest): Promise<void> {
  const p = plan(g);
  const id = `cmpl-sim${g.ctx.rec.seq}`;
  const created = nowSeconds();
  const base = { created, model: g.responseModel, system_fingerprint: FINGERPRINT, object: 'text_completion', id };
  if (g.body.stream !== true) {
    const body = {
      choices: [{ text: p.text, index: 0, logprobs: null, finish_reason: p.finishReason }],
      ...base,
      usage: p.usage,
      timings: p.timings,
    };
    return respondBody(g.ctx, 200, JSON_HEADERS, JSON.stringify(body), p.n);
  }
  const chunks: Record<string, unknown>[] = [
    ...p.pieces.map((piece) => ({
      choices: [{ text: piece, index: 0, logprobs: null, finish_reason: null }],
      ...base,
    })),
    { choices: [{ text: '', index: 0, logprobs: null, finish_reason: p.finishReason }], ...base },
  ];
  if (p.includeUsage) chunks.push({ choices: [], ...base, usage: p.usage });
  chunks[chunks.length - 1]!.timings = p.timings;
  return respondFrames(g.ctx, { ...SSE_HEADERS }, [...chunks.map(dataFrame), DONE_FRAME]);
}

/** Minimal Responses API: one message output item; SSE created → output_text.delta… → completed. */
export async function responses(g: GenerationRequest): Promise<void> {
  const p = plan(g);
  const seq = g.ctx.rec.seq;
  const respId = `resp_sim${seq}`;
  const msgId = `msg_sim${seq}`;
  const createdAt = nowSeconds();
  const usage = { input_tokens: p.promptTokens, output_tokens: p.n, total_tokens: p.promptTokens + p.n };
  const response = (status: string, text: string | undefined) => ({
    id: respId,
    object: 'response',
    created_at: createdAt,
    status,
    model: g.responseModel,
    output:
      text === undefined
        ? []
        : [
            {
              type: 'message',
              id: msgId,
              status: 'completed',
              role: 'assistant',
              content: [{ type: 'output_text', text, annotations: [] }],
            },
          ],
    usage: text === undefined ? null : usage,
  });
  if (g.body.stream !== true) {
    return respondBody(g.ctx, 200, JSON_HEADERS, JSON.stringify(response('completed', p.text)), p.n);
  }
  let n = 0;
  const frames = [
    namedFrame('response.created', {
      type: 'response.created',
      sequence_number: n++,
      response: response('in_progress', undefined),
    }),
    ...p.pieces.map((delta) =>
      namedFrame('response.output_text.delta', {
        type: 'response.output_text.delta',
        sequence_number: n++,
        item_id: msgId,
        output_index: 0,
        content_index: 0,
        delta,
      }),
    ),
    namedFrame('response.completed', {
      type: 'response.completed',
      sequence_number: n++,
      response: response('completed', p.text),
    }),
  ];
  return respondFrames(g.ctx, { ...SSE_HEADERS }, frames);
}

/** llama.cpp's native `/completion` and `/infill`: `content` pieces, `stop: true` last. */
export async function nativeCompletion(g: GenerationRequest): Promise<void> {
  const p = plan(g);
  const stopType = p.finishReason === 'length' ? 'limit' : 'eos';
  const final = {
    content: '',
    id_slot: 0,
    stop: true,
    model: g.responseModel,
    tokens_predicted: p.n,
    tokens_evaluated: p.promptTokens,
    stop_type: stopType,
    timings: p.timings,
  };
  if (g.body.stream !== true) {
    return respondBody(g.ctx, 200, JSON_HEADERS, JSON.stringify({ ...final, content: p.text }), p.n);
  }
  const frames = [...p.pieces.map((content) => dataFrame({ content, id_slot: 0, stop: false })), dataFrame(final)];
  return respondFrames(g.ctx, { ...SSE_HEADERS }, frames);
}

function isRecord(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}
