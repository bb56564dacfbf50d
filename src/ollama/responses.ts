/**
 * llama-swap's OpenAI answers → Ollama's: an SSE stream becomes NDJSON (one object per line, the
 * last with `done: true` and the counts), a JSON body one Ollama object. The durations Ollama
 * reports (nanoseconds) come from llama.cpp's `timings`; the load time is not known and is 0.
 */
import { SseParser } from '../core/sse-decoder.js';
import type { ResponseTranslator } from '../core/translation.js';

export type AnswerShape = 'chat' | 'generate' | 'embed' | 'embeddings';

export interface AnswerOptions {
  shape: AnswerShape;
  /** The model name the client asked for, echoed in every object. */
  model: string;
  /** `think: false`: reasoning text is dropped, as Ollama does. */
  hideThinking: boolean;
  /** `performance.now()` when the call arrived, for `total_duration`. */
  startedAt: number;
  now?: () => number;
  /** Wall clock for `created_at`. */
  wallClock?: () => number;
}

const NDJSON = 'application/x-ndjson';
const JSON_TYPE = 'application/json; charset=utf-8';

/** The translator for a successful answer with this content type. */
export function answerTranslator(options: AnswerOptions, contentType: string | undefined): ResponseTranslator {
  if (
    contentType?.startsWith('text/event-stream') === true &&
    (options.shape === 'chat' || options.shape === 'generate')
  )
    return new StreamAnswer(options);
  return new WholeAnswer(options);
}

interface Counts {
  finishReason: string | undefined;
  usage: { prompt_tokens?: unknown; completion_tokens?: unknown } | undefined;
  timings: { prompt_n?: unknown; prompt_ms?: unknown; predicted_n?: unknown; predicted_ms?: unknown } | undefined;
}

interface ToolCallDelta {
  id?: string;
  name: string;
  arguments: string;
}

class StreamAnswer implements ResponseTranslator {
  readonly contentType = NDJSON;
  readonly #options: AnswerOptions;
  readonly #parser: SseParser;
  #out = '';
  #done = false;
  readonly #counts: Counts = { finishReason: undefined, usage: undefined, timings: undefined };
  readonly #calls: ToolCallDelta[] = [];

  constructor(options: AnswerOptions) {
    this.#options = options;
    this.#parser = new SseParser((event, bytes, start, end) => this.#frame(event, bytes.toString('utf8', start, end)));
  }

  chunk(chunk: Buffer): string {
    this.#parser.push(chunk);
    const out = this.#out;
    this.#out = '';
    return out;
  }

  end(): string {
    // A stream cut before `[DONE]` is ended by the forwarder's error line; one without it still ends done.
    if (this.#done) return '';
    this.#finish();
    const out = this.#out;
    this.#out = '';
    return out;
  }

  #frame(event: string, data: string): void {
    if (this.#done || (event !== '' && event !== 'message')) return;
    if (data === '[DONE]') return this.#finish();
    let frame: Record<string, unknown>;
    try {
      frame = JSON.parse(data) as Record<string, unknown>;
    } catch {
      return;
    }
    if (frame.error !== undefined) {
      const error = frame.error as { message?: unknown } | string;
      const message = typeof error === 'string' ? error : String(error.message ?? 'the model server failed');
      this.#line({ error: message });
      this.#done = true;
      return;
    }
    readCounts(frame, this.#counts);
    const choice = (frame.choices as Array<Record<string, unknown>> | undefined)?.[0];
    if (!choice) return;
    const delta = (choice.delta ?? {}) as Record<string, unknown>;
    const text = typeof delta.content === 'string' ? delta.content : typeof choice.text === 'string' ? choice.text : '';
    const reasoning = this.#options.hideThinking
      ? ''
      : typeof delta.reasoning_content === 'string'
        ? delta.reasoning_content
        : '';
    if (Array.isArray(delta.tool_calls)) collectToolCalls(delta.tool_calls, this.#calls);
    if (text !== '' || reasoning !== '') this.#line(this.#piece(text, reasoning, undefined));
  }

  #finish(): void {
    if (this.#done) return;
    this.#done = true;
    if (this.#calls.length > 0 && this.#options.shape === 'chat')
      this.#line(this.#piece('', '', toolCalls(this.#calls)));
    this.#line({ ...this.#base(), ...this.#emptyMessage(), ...finalFields(this.#counts, this.#options) });
  }

  #piece(text: string, reasoning: string, calls: unknown[] | undefined): Record<string, unknown> {
    const base = this.#base();
    if (this.#options.shape === 'generate')
      return { ...base, response: text, ...(reasoning !== '' ? { thinking: reasoning } : {}), done: false };
    const message: Record<string, unknown> = { role: 'assistant', content: text };
    if (reasoning !== '') message.thinking = reasoning;
    if (calls) message.tool_calls = calls;
    return { ...base, message, done: false };
  }

  #emptyMessage(): Record<string, unknown> {
    return this.#options.shape === 'generate' ? { response: '' } : { message: { role: 'assistant', content: '' } };
  }

  #base(): Record<string, unknown> {
    return { model: this.#options.model, created_at: createdAt(this.#options) };
  }

  #line(object: Record<string, unknown>): void {
    this.#out += `${JSON.stringify(object)}\n`;
  }
}

/** A whole JSON answer (no stream, or embeddings), translated once it is complete. */
class WholeAnswer implements ResponseTranslator {
  readonly contentType = JSON_TYPE;
  readonly #options: AnswerOptions;
  readonly #chunks: Buffer[] = [];

  constructor(options: AnswerOptions) {
    this.#options = options;
  }

  chunk(chunk: Buffer): string {
    this.#chunks.push(chunk);
    return '';
  }

  end(): string {
    let body: Record<string, unknown>;
    try {
      body = JSON.parse(Buffer.concat(this.#chunks).toString('utf8')) as Record<string, unknown>;
    } catch {
      return JSON.stringify({ error: 'llama-swap answered with a body that is not JSON' });
    }
    return JSON.stringify(this.#translate(body));
  }

  #translate(body: Record<string, unknown>): Record<string, unknown> {
    const options = this.#options;
    const counts: Counts = { finishReason: undefined, usage: undefined, timings: undefined };
    readCounts(body, counts);
    const data = Array.isArray(body.data) ? (body.data as Array<{ embedding?: unknown }>) : [];
    if (options.shape === 'embeddings') return { embedding: data[0]?.embedding ?? [] };
    const base = { model: options.model, created_at: createdAt(options) };
    if (options.shape === 'embed') {
      const final = finalFields(counts, options);
      return {
        model: options.model,
        embeddings: data.map((d) => d.embedding),
        total_duration: final.total_duration,
        load_duration: 0,
        prompt_eval_count: final.prompt_eval_count,
      };
    }
    const choice = (body.choices as Array<Record<string, unknown>> | undefined)?.[0] ?? {};
    const message = (choice.message ?? {}) as Record<string, unknown>;
    const text =
      typeof message.content === 'string' ? message.content : typeof choice.text === 'string' ? choice.text : '';
    const reasoning = options.hideThinking
      ? ''
      : typeof message.reasoning_content === 'string'
        ? message.reasoning_content
        : '';
    const calls: ToolCallDelta[] = [];
    if (Array.isArray(message.tool_calls)) collectToolCalls(message.tool_calls, calls);
    if (options.shape === 'generate')
      return {
        ...base,
        response: text,
        ...(reasoning ? { thinking: reasoning } : {}),
        ...finalFields(counts, options),
      };
    const out: Record<string, unknown> = { role: 'assistant', content: text };
    if (reasoning) out.thinking = reasoning;
    if (calls.length > 0) out.tool_calls = toolCalls(calls);
    return { ...base, message: out, ...finalFields(counts, options) };
  }
}

function readCounts(frame: Record<string, unknown>, counts: Counts): void {
  const choice = (frame.choices as Array<Record<string, unknown>> | undefined)?.[0];
  if (typeof choice?.finish_reason === 'string') counts.finishReason = choice.finish_reason;
  if (isRecord(frame.usage)) counts.usage = frame.usage;
  if (isRecord(frame.timings)) counts.timings = frame.timings;
}

/** OpenAI tool-call deltas (by `index`, arguments in pieces) or whole calls, gathered into whole calls. */
function collectToolCalls(deltas: unknown[], into: ToolCallDelta[]): void {
  for (const [i, raw] of deltas.entries()) {
    const delta = raw as { index?: unknown; id?: unknown; function?: { name?: unknown; arguments?: unknown } };
    const at = typeof delta.index === 'number' ? delta.index : into.length > i ? i : into.length;
    const call = (into[at] ??= { name: '', arguments: '' });
    if (typeof delta.id === 'string') call.id = delta.id;
    if (typeof delta.function?.name === 'string') call.name += delta.function.name;
    if (typeof delta.function?.arguments === 'string') call.arguments += delta.function.arguments;
  }
}

/** Whole calls in Ollama's shape: arguments as an object. */
function toolCalls(calls: ToolCallDelta[]): unknown[] {
  return calls.map((call, index) => ({
    ...(call.id !== undefined ? { id: call.id } : {}),
    function: { index, name: call.name, arguments: parseArguments(call.arguments) },
  }));
}

function parseArguments(text: string): unknown {
  if (text.trim() === '') return {};
  try {
    const parsed: unknown = JSON.parse(text);
    return isRecord(parsed) ? parsed : {};
  } catch {
    return {};
  }
}

/** Ollama's last-object fields, from llama.cpp's `timings` (or OpenAI's `usage` for the counts). */
function finalFields(
  counts: Counts,
  options: AnswerOptions,
): Record<string, unknown> & { total_duration: number; prompt_eval_count: number } {
  const { usage, timings } = counts;
  const promptCount = numberOr(timings?.prompt_n, numberOr(usage?.prompt_tokens, 0));
  const evalCount = numberOr(timings?.predicted_n, numberOr(usage?.completion_tokens, 0));
  const now = options.now ?? performance.now.bind(performance);
  return {
    done: true,
    done_reason: counts.finishReason === 'length' ? 'length' : 'stop',
    total_duration: nanoseconds(now() - options.startedAt),
    load_duration: 0,
    prompt_eval_count: promptCount,
    prompt_eval_duration: nanoseconds(numberOr(timings?.prompt_ms, 0)),
    eval_count: evalCount,
    eval_duration: nanoseconds(numberOr(timings?.predicted_ms, 0)),
  };
}

function createdAt(options: AnswerOptions): string {
  return new Date((options.wallClock ?? Date.now)()).toISOString();
}

function nanoseconds(ms: number): number {
  return Math.max(0, Math.round(ms * 1e6));
}

function numberOr(value: unknown, fallback: number): number {
  return typeof value === 'number' && Number.isFinite(value) ? value : fallback;
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}
