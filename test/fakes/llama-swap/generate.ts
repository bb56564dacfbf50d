/**
 * Deterministic "inference": the same model and knobs always produce the same words, token
 * counts, vectors and bytes, so tests can assert exact bodies and usage numbers.
 *
 * Prompt token rule (exported as `countPromptTokens`): the number of whitespace-separated words
 * in every text the request carries (`messages[].content` strings and text parts, `system`,
 * `prompt`, `input`, `instructions`, rerank `query` + `documents`) plus `PROMPT_TOKEN_OVERHEAD`.
 * Completion tokens: `knobs.tokens`, lowered to the request's `max_tokens` /
 * `max_completion_tokens` / `max_output_tokens` / `n_predict` when that is smaller.
 */
import { createHash } from 'node:crypto';

const PROMPT_TOKEN_OVERHEAD = 4;

const VOCABULARY = [
  'alpha',
  'bravo',
  'charlie',
  'delta',
  'echo',
  'foxtrot',
  'golf',
  'hotel',
  'india',
  'juliett',
  'kilo',
  'lima',
  'mike',
  'november',
  'oscar',
  'papa',
  'quebec',
  'romeo',
  'sierra',
  'tango',
  'uniform',
  'victor',
  'whiskey',
  'xray',
  'yankee',
  'zulu',
  'amber',
  'basil',
  'cedar',
  'dune',
  'ember',
  'fjord',
] as const;

function fnv1a(text: string): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < text.length; i++) {
    h ^= text.charCodeAt(i);
    h = Math.imul(h, 0x01000193) >>> 0;
  }
  return h;
}

/** The `n` words a model "generates": consecutive vocabulary entries from a model-derived offset. */
function completionWords(modelId: string, n: number): string[] {
  const offset = fnv1a(modelId) % VOCABULARY.length;
  return Array.from({ length: n }, (_, i) => VOCABULARY[(offset + i) % VOCABULARY.length]!);
}

/** Stream pieces, one per token: the first word, then `' ' + word`; they concatenate to the text. */
export function completionPieces(modelId: string, n: number): string[] {
  return completionWords(modelId, n).map((w, i) => (i === 0 ? w : ` ${w}`));
}

export function completionText(modelId: string, n: number): string {
  return completionWords(modelId, n).join(' ');
}

function countWords(text: string): number {
  return text.split(/\s+/).filter((w) => w !== '').length;
}

/** All prompt text of a request body, in a stable order (see the module comment). */
function promptTexts(body: unknown): string[] {
  if (!isRecord(body)) return [];
  const out: string[] = [];
  collectContent(body.system, out);
  collectContent(body.instructions, out);
  if (Array.isArray(body.messages)) {
    for (const m of body.messages) if (isRecord(m)) collectContent(m.content, out);
  }
  collectContent(body.prompt, out);
  collectContent(body.input, out);
  collectContent(body.query, out);
  collectContent(body.documents, out);
  return out;
}

function collectContent(v: unknown, out: string[]): void {
  if (typeof v === 'string') {
    out.push(v);
  } else if (Array.isArray(v)) {
    for (const item of v) collectContent(item, out);
  } else if (isRecord(v)) {
    if (typeof v.text === 'string') out.push(v.text);
    else if (v.content !== undefined) collectContent(v.content, out);
  }
}

export function countPromptTokens(body: unknown): number {
  return promptTexts(body).reduce((sum, t) => sum + countWords(t), 0) + PROMPT_TOKEN_OVERHEAD;
}

/** Completion token count for a request: `knobs.tokens` capped by the request's own limit. */
export function completionTokens(body: unknown, knobTokens: number): { n: number; truncated: boolean } {
  const limits: number[] = [];
  if (isRecord(body)) {
    for (const key of ['max_tokens', 'max_completion_tokens', 'max_output_tokens', 'n_predict']) {
      const v = body[key];
      if (typeof v === 'number' && Number.isFinite(v) && v >= 0) limits.push(Math.floor(v));
    }
  }
  const limit = limits.length > 0 ? Math.min(...limits) : Infinity;
  return limit < knobTokens ? { n: limit, truncated: true } : { n: knobTokens, truncated: false };
}

/** llama-server `timings`, derived from the counts so they are deterministic too. */
export function timings(promptN: number, predictedN: number, tokensPerSecond: number): Record<string, number> {
  const promptMs = promptN * 0.5;
  const predictedMs = tokensPerSecond > 0 ? (predictedN * 1000) / tokensPerSecond : predictedN * 20;
  return {
    cache_n: 0,
    prompt_n: promptN,
    prompt_ms: promptMs,
    prompt_per_token_ms: promptN > 0 ? promptMs / promptN : 0,
    prompt_per_second: promptMs > 0 ? (promptN * 1000) / promptMs : 0,
    predicted_n: predictedN,
    predicted_ms: predictedMs,
    predicted_per_token_ms: predictedN > 0 ? predictedMs / predictedN : 0,
    predicted_per_second: predictedMs > 0 ? (predictedN * 1000) / predictedMs : 0,
  };
}

export const EMBEDDING_DIMS = 8;

/** A unit-length 8-dim vector from sha256(model, text), rounded to 6 decimals. */
export function embedding(modelId: string, text: string): number[] {
  const h = createHash('sha256').update(modelId).update('\0').update(text).digest();
  const raw = Array.from({ length: EMBEDDING_DIMS }, (_, i) => h.readUInt16BE(i * 2) / 65535 - 0.5);
  const norm = Math.sqrt(raw.reduce((s, x) => s + x * x, 0)) || 1;
  return raw.map((x) => Math.round((x / norm) * 1e6) / 1e6);
}

/** Rerank score: share of query words found in the document (case-insensitive). */
export function rerankScore(query: string, document: string): number {
  const q = query.toLowerCase().split(/\s+/).filter(Boolean);
  if (q.length === 0) return 0;
  const doc = new Set(document.toLowerCase().split(/\s+/).filter(Boolean));
  return Math.round((q.filter((w) => doc.has(w)).length / q.length) * 1e6) / 1e6;
}

/** Deterministic "MP3": an ID3 header followed by sha256-chained bytes, length grows with the text. */
export function speechBytes(modelId: string, input: string, voice: string): Buffer {
  const length = 256 + 16 * countWords(input);
  const out = Buffer.alloc(length);
  Buffer.from('ID3\x04\x00\x00\x00\x00\x00\x00', 'latin1').copy(out, 0);
  let block = createHash('sha256').update(`${modelId}\0${voice}\0${input}`).digest();
  for (let pos = 10; pos < length; pos += block.length) {
    block.copy(out, pos, 0, Math.min(block.length, length - pos));
    block = createHash('sha256').update(block).digest();
  }
  return out;
}

/** A 1×1 PNG. */
export const TINY_PNG_BASE64 =
  'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==';

function isRecord(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}
