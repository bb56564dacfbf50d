/**
 * The OpenAI-compatible endpoints of the fake llama-server: chat completions and completions
 * (the Responses API is `responses-api.ts`). Wire details follow llama-server: a role chunk first, one chunk per
 * token, a finish chunk, an optional usage chunk (`stream_options.include_usage`, with
 * `choices: []`), `timings` on the last chunk, then `data: [DONE]`.
 */
import { completionPieces, completionText, completionTokens, countPromptTokens, timings } from './generate.js';
import { respondBody, respondFrames, type ResponderContext } from './stream.js';
import { planToolCall, reasoningPieces, type Api } from './turn.js';

export interface GenerationRequest {
  ctx: ResponderContext;
  /** Real model ID: seeds the generated words. */
  modelId: string;
  /** The `model` value echoed in responses (what the client sent, or `useModelName`). */
  responseModel: string;
  body: Record<string, unknown>;
  /** The model's `cmd` asks for reasoning (see `turn.ts`). */
  reasoning: boolean;
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

export function nowSeconds(): number {
  return Math.floor(Date.now() / 1000);
}

/** Generated tokens and text of one turn: reasoning first, then either the answer or a tool call. */
export function planTurn(g: GenerationRequest, api: Api) {
  const promptTokens = countPromptTokens(g.body);
  const { n, truncated } = completionTokens(g.body, g.ctx.knobs.tokens);
  const toolCall = planToolCall(api, g.body, g.ctx.rec.seq);
  const reasoning = g.reasoning ? reasoningPieces(g.modelId) : [];
  // A tool call costs one token for its name and one per arguments piece.
  const answerTokens = toolCall ? toolCall.pieces.length + 1 : n;
  const outputTokens = reasoning.length + answerTokens;
  g.ctx.tokens = { input: promptTokens, output: outputTokens };
  return {
    promptTokens,
    n,
    outputTokens,
    truncated: truncated && !toolCall,
    toolCall,
    reasoning,
    usage: { completion_tokens: outputTokens, prompt_tokens: promptTokens, total_tokens: outputTokens + promptTokens },
    timings: timings(promptTokens, outputTokens, g.ctx.knobs.tokensPerSecond),
    pieces: completionPieces(g.modelId, n),
    text: completionText(g.modelId, n),
    includeUsage: isRecord(g.body.stream_options) && g.body.stream_options.include_usage === true,
  };
}

function plan(g: GenerationRequest) {
  const p = planTurn(g, 'chat');
  return { ...p, finishReason: p.toolCall ? 'tool_calls' : p.truncated ? 'length' : 'stop' };
}

/** Text completion endpoints: no chat template, so neither tool calls nor extracted reasoning. */
function textPlan(g: GenerationRequest) {
  return plan({ ...g, reasoning: false, body: { ...g.body, tools: undefined } });
}

/**
 * llama-server's chat deltas (`tools/server/server-task.cpp`, `to_json_oaicompat_chat_stream`):
 * `reasoning_content` pieces, then `content` pieces, or a tool call whose first delta carries
 * `index`, `id`, `type` and the function name with empty arguments, and whose later deltas carry
 * only `index` and the next piece of `function.arguments`.
 */
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
  const call = p.toolCall;
  if (g.body.stream !== true) {
    const message: Record<string, unknown> = { role: 'assistant', content: call ? null : p.text };
    if (p.reasoning.length > 0) message.reasoning_content = p.reasoning.join('');
    if (call)
      message.tool_calls = [
        { type: 'function', function: { name: call.name, arguments: call.arguments }, id: call.id },
      ];
    const body = {
      choices: [{ finish_reason: p.finishReason, index: 0, message }],
      created,
      model: g.responseModel,
      system_fingerprint: FINGERPRINT,
      object: 'chat.completion',
      usage: p.usage,
      id,
      timings: p.timings,
    };
    return respondBody(g.ctx, 200, JSON_HEADERS, JSON.stringify(body), p.outputTokens);
  }
  const delta = (d: Record<string, unknown>) => ({ choices: [{ finish_reason: null, index: 0, delta: d }], ...base });
  const answer = call
    ? [
        delta({
          tool_calls: [{ index: 0, id: call.id, type: 'function', function: { name: call.name, arguments: '' } }],
        }),
        ...call.pieces.map((piece) => delta({ tool_calls: [{ index: 0, function: { arguments: piece } }] })),
      ]
    : p.pieces.map((piece) => delta({ content: piece }));
  const chunks: Record<string, unknown>[] = [
    delta({ role: 'assistant', content: null }),
    ...p.reasoning.map((piece) => delta({ reasoning_content: piece })),
    ...answer,
    { choices: [{ finish_reason: p.finishReason, index: 0, delta: {} }], ...base },
  ];
  if (p.includeUsage) chunks.push({ choices: [], ...base, usage: p.usage });
  chunks[chunks.length - 1]!.timings = p.timings;
  return respondFrames(g.ctx, { ...SSE_HEADERS }, [...chunks.map(dataFrame), DONE_FRAME]);
}

export async function completions(g: GenerationRequest): Promise<void> {
  const p = textPlan(g);
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

/** llama.cpp's native `/completion` and `/infill`: `content` pieces, `stop: true` last. */
export async function nativeCompletion(g: GenerationRequest): Promise<void> {
  const p = textPlan(g);
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
