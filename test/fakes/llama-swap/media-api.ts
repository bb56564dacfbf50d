/**
 * Non-chat endpoints of the fake inference server: embeddings, rerank, audio (speech,
 * transcription, voices), image generation/edits and the stable-diffusion passthroughs.
 */
import { countPromptTokens, embedding, rerankScore, speechBytes, TINY_PNG_BASE64 } from './generate.js';
import { parseMultipart } from './multipart.js';
import { JSON_HEADERS, type GenerationRequest } from './openai-api.js';
import { respondBody, type ResponderContext } from './stream.js';

const json = (ctx: ResponderContext, status: number, value: unknown) =>
  respondBody(ctx, status, JSON_HEADERS, JSON.stringify(value));

/** llama-server's own error shape (never carries `src`). */
export function llamaServerError(
  ctx: ResponderContext,
  status: number,
  message: string,
  type = 'invalid_request_error',
) {
  return json(ctx, status, { error: { code: status, message, type } });
}

export async function embeddings(g: GenerationRequest): Promise<void> {
  const input = g.body.input;
  const texts = Array.isArray(input) ? input.map(String) : typeof input === 'string' ? [input] : undefined;
  if (!texts) return llamaServerError(g.ctx, 400, '"input" must be a string or an array of strings');
  const promptTokens = countPromptTokens({ input: texts });
  g.ctx.tokens = { input: promptTokens, output: 0 };
  const base64 = g.body.encoding_format === 'base64';
  return json(g.ctx, 200, {
    model: g.responseModel,
    object: 'list',
    usage: { prompt_tokens: promptTokens, total_tokens: promptTokens },
    data: texts.map((t, index) => {
      const vector = embedding(g.modelId, t);
      return { embedding: base64 ? float32Base64(vector) : vector, index, object: 'embedding' };
    }),
  });
}

/**
 * `encoding_format: "base64"`: the raw little-endian float32 bytes, base64 encoded, as
 * llama-server's `format_embeddings_response_oaicompat` (`tools/server/server-common.cpp`) sends
 * them and the OpenAI SDK decodes them.
 */
function float32Base64(vector: number[]): string {
  const bytes = Buffer.alloc(vector.length * 4);
  vector.forEach((x, i) => bytes.writeFloatLE(x, i * 4));
  return bytes.toString('base64');
}

export async function rerank(g: GenerationRequest): Promise<void> {
  const query = typeof g.body.query === 'string' ? g.body.query : undefined;
  const docs = Array.isArray(g.body.documents)
    ? g.body.documents.map((d) => (typeof d === 'string' ? d : String((d as { text?: unknown })?.text ?? '')))
    : undefined;
  if (query === undefined || !docs) return llamaServerError(g.ctx, 400, '"query" and "documents" are required');
  const topN = typeof g.body.top_n === 'number' ? g.body.top_n : docs.length;
  const results = docs
    .map((d, index) => ({ index, relevance_score: rerankScore(query, d) }))
    .sort((a, b) => b.relevance_score - a.relevance_score || a.index - b.index)
    .slice(0, topN);
  const promptTokens = countPromptTokens({ query, documents: docs });
  return json(g.ctx, 200, {
    model: g.responseModel,
    object: 'list',
    usage: { prompt_tokens: promptTokens, total_tokens: promptTokens },
    results,
  });
}

export async function speech(g: GenerationRequest): Promise<void> {
  const input = typeof g.body.input === 'string' ? g.body.input : '';
  const voice = typeof g.body.voice === 'string' ? g.body.voice : 'alloy';
  return respondBody(g.ctx, 200, { 'Content-Type': 'audio/mpeg' }, speechBytes(g.modelId, input, voice));
}

export async function voices(g: GenerationRequest): Promise<void> {
  return json(g.ctx, 200, { model: g.responseModel, voices: ['alloy', 'echo', 'nova'] });
}

/** Multipart upload; the answer names the uploaded file's byte length so tests can check the body arrived intact. */
export async function transcription(g: GenerationRequest, rawBody: Buffer, contentType: string): Promise<void> {
  let parts;
  try {
    parts = parseMultipart(rawBody, contentType);
  } catch (err) {
    return llamaServerError(g.ctx, 400, `invalid multipart body: ${(err as Error).message}`);
  }
  const file = parts.find((p) => p.name === 'file');
  if (!file) return llamaServerError(g.ctx, 400, 'no "file" field in multipart body');
  return json(g.ctx, 200, { text: `Transcribed ${file.data.length} bytes of audio with ${g.responseModel}.` });
}

export async function images(g: GenerationRequest): Promise<void> {
  const n = typeof g.body.n === 'number' && g.body.n > 0 ? Math.min(Math.floor(g.body.n), 10) : 1;
  return json(g.ctx, 200, {
    created: Math.floor(Date.now() / 1000),
    data: Array.from({ length: n }, () => ({ b64_json: TINY_PNG_BASE64 })),
  });
}

export async function sdapi(g: GenerationRequest): Promise<void> {
  return json(g.ctx, 200, { images: [TINY_PNG_BASE64], parameters: {}, info: '' });
}
