/**
 * The fake inference server behind every local model (and every peer): picks the endpoint from
 * the path the upstream sees (after `/v`, `/audioapi` or `/upstream/<model>` stripping).
 */
import { countTokens, messages } from './anthropic-api.js';
import { embeddings, images, llamaServerError, rerank, sdapi, speech, transcription, voices } from './media-api.js';
import { parseJsonLoose } from './model-request.js';
import { chatCompletions, completions, JSON_HEADERS, nativeCompletion, type GenerationRequest } from './openai-api.js';
import { responses } from './responses-api.js';
import { respondBody, type ResponderContext } from './stream.js';

export interface InferenceCall {
  ctx: ResponderContext;
  method: string;
  /** Decoded path as the upstream sees it, without query. */
  path: string;
  modelId: string;
  /** Replaces the body's `model` in responses (`useModelName`, peer FQN rewrite). */
  modelOverride: string | undefined;
  rawBody: Buffer;
  contentType: string;
  /** Started with `--embedding(s)`: llama-server then refuses every completion endpoint; without it, embeddings. */
  embeddingsOnly: boolean;
  /** Started with reasoning extraction on (`turn.ts` `usesReasoning`). */
  reasoning: boolean;
}

/** The endpoints llama-server answers through its completion handler, refused in embeddings mode. */
const COMPLETION_PATHS = new Set([
  '/chat/completions',
  '/completions',
  '/responses',
  '/messages',
  '/completion',
  '/infill',
]);

/** `--embedding` and `--embeddings` are the same llama-server flag. */
export function isEmbeddingsOnly(cmd: string): boolean {
  return /(^|\s)--embeddings?(\s|$)/.test(cmd);
}

type JsonEndpoint = (g: GenerationRequest) => Promise<void>;

const POST_JSON: Record<string, JsonEndpoint> = {
  '/chat/completions': chatCompletions,
  '/completions': completions,
  '/responses': responses,
  '/messages': messages,
  '/messages/count_tokens': countTokens,
  '/embeddings': embeddings,
  '/rerank': rerank,
  '/reranking': rerank,
  '/completion': nativeCompletion,
  '/infill': nativeCompletion,
  '/audio/speech': speech,
  '/audio/voices': voices,
  '/images/generations': images,
  '/sdapi/v1/txt2img': sdapi,
  '/sdapi/v1/img2img': sdapi,
};

export async function serveInference(call: InferenceCall): Promise<void> {
  const { ctx } = call;
  const key = call.path.startsWith('/v1/') ? call.path.slice(3) : call.path;
  const generation = (body: Record<string, unknown>): GenerationRequest => ({
    ctx,
    modelId: call.modelId,
    responseModel: call.modelOverride ?? (typeof body.model === 'string' ? body.model : call.modelId),
    body,
    reasoning: call.reasoning,
  });

  if (call.method === 'POST') {
    if (key === '/audio/transcriptions' || key === '/images/edits') {
      const fields = { model: undefined } as Record<string, unknown>;
      const g = generation(fields);
      return key === '/images/edits' ? images(g) : transcription(g, call.rawBody, call.contentType);
    }
    if (key === '/tasks/run') return respondBody(ctx, 200, JSON_HEADERS, JSON.stringify({ ok: true }));
    if (call.embeddingsOnly && COMPLETION_PATHS.has(key)) {
      // llama-server's words and status (501, not_supported_error).
      const message = 'This server does not support completions. Start it without `--embeddings`';
      return llamaServerError(ctx, 501, message, 'not_supported_error');
    }
    if (!call.embeddingsOnly && key === '/embeddings') {
      // A chat model cannot embed: llama-server's words and status (handle_embeddings_impl).
      const message = 'This server does not support embeddings. Start it with `--embeddings`';
      return llamaServerError(ctx, 501, message, 'not_supported_error');
    }
    const endpoint = POST_JSON[key];
    if (endpoint) {
      const body = parseJsonLoose(call.rawBody);
      if (typeof body !== 'object' || body === null || Array.isArray(body)) {
        return llamaServerError(ctx, 400, 'Invalid JSON in request body');
      }
      return endpoint(generation(body as Record<string, unknown>));
    }
  }
  if (call.method === 'GET' || call.method === 'HEAD') {
    switch (key) {
      case '/health':
        return respondBody(ctx, 200, JSON_HEADERS, JSON.stringify({ status: 'ok' }));
      case '/props':
        return respondBody(
          ctx,
          200,
          JSON_HEADERS,
          JSON.stringify({
            default_generation_settings: { n_ctx: 4096 },
            total_slots: 1,
            model_path: `/models/${call.modelId}.gguf`,
          }),
        );
      case '/models':
        return respondBody(
          ctx,
          200,
          JSON_HEADERS,
          JSON.stringify({
            object: 'list',
            data: [{ id: call.modelId, object: 'model', created: Math.floor(Date.now() / 1000), owned_by: 'llamacpp' }],
          }),
        );
      case '/audio/voices':
        return voices(generation({}));
      case '/sdapi/v1/loras':
        return respondBody(ctx, 200, JSON_HEADERS, '[]');
      case '/':
        return respondBody(
          ctx,
          200,
          { 'Content-Type': 'text/html; charset=utf-8', Server: 'llama.cpp' },
          `<!doctype html><html><head><title>llama.cpp - ${call.modelId}</title></head><body>simulated ` +
            `llama-server</body></html>`,
        );
    }
  }
  return llamaServerError(ctx, 404, 'File Not Found', 'not_found_error');
}
