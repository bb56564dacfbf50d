/**
 * The usage tap: watches each response body on the side of `forward` and learns the token
 * counts, without delaying or altering a byte (the chunk is written to the client by `forward`
 * whatever happens here; this only reads it).
 *
 * Streams (`text/event-stream`) go through the one SSE parser, frame by frame. Per frame, one or
 * two native byte searches decide whether it carried generated text (the first-token time and
 * the estimate for a cut stream). Token counts are looked for where they are:
 * - unnamed frames (OpenAI chat and completions, llama.cpp): `usage` and `timings` come in the
 *   last frames before `[DONE]`, so only the last few frames are kept (views, a few hundred bytes)
 *   and searched once, when the call is recorded; vLLM-style usage on every frame and llama.cpp's
 *   timings on every frame are cumulative, so the last one is the one that counts;
 * - named events (Anthropic `message_start` / `message_delta`, OpenAI Responses
 *   `response.completed`): searched as they come, except the many content deltas, which never
 *   carry counts.
 * JSON.parse runs only on the small `usage` / `timings` objects found.
 *
 * Other bodies are kept (bounded) when they are JSON and searched once at the end.
 *
 * No `stream_options.include_usage` is injected: llama-server puts `timings` on the last frame of
 * every stream and Anthropic streams always carry `usage`; rewriting the request and stripping the
 * extra frame would break the byte-for-byte pass-through. For a backend with neither, output
 * tokens are counted from the generated frames (`source: 'estimate'`). See README.md.
 */
import type { ObservedTokens, ProxyContext, UsageProbe } from '../proxy/context.js';
import type { ResponseTap, TapFactory } from '../proxy/forward.js';
import { SseParser, type SseFrame } from '../proxy/sse-decoder.js';
import { BodyCapture } from './body-capture.js';
import { countsFromTimings, countsFromUsage, readObjectField, TIMINGS_KEY, USAGE_KEY, type TokenCounts } from './token-fields.js';

export interface UsageTapOptions {
  /** Bytes of each response body to keep for the request log; 0 = none. */
  captureBytes: number;
}

/** Frames longer than this are not usage frames; they are skipped, not buffered. */
const MAX_FRAME_LINE = 1024 * 1024;
/** Unnamed frames kept for the end: the finish frame, a usage frame after it, and one spare. */
const LAST_FRAMES = 3;
const DONE = Buffer.from('[DONE]');
/** JSON bodies up to this size are searched whole; beyond, only the head and a tail window. */
const JSON_KEEP_BYTES = 4 * 1024 * 1024;
const JSON_TAIL_BYTES = 256 * 1024;

const QUOTE = 0x22;
/** `content":"` also matches `reasoning_content`; `text` is the completions API. */
const GENERATED = [Buffer.from('content":"'), Buffer.from('"text":"'), Buffer.from('"arguments":"'), Buffer.from('"partial_json":"')];

export function createUsageTap(options: UsageTapOptions): TapFactory {
  return function usageTap(ctx, _status, contentType): ResponseTap | undefined {
    const capture = options.captureBytes > 0 ? new BodyCapture(options.captureBytes, contentType) : undefined;
    let tap: ResponseTap & UsageProbe;
    if (contentType?.startsWith('text/event-stream') === true) tap = new StreamTap(ctx, capture);
    else if (isJson(contentType) || capture) tap = new BodyTap(ctx, isJson(contentType), capture);
    else return undefined;
    ctx.usage = tap;
    return tap;
  };
}

function isJson(contentType: string | undefined): boolean {
  return contentType !== undefined && /^application\/(?:[\w.+-]*\+)?json/i.test(contentType);
}

class StreamTap implements ResponseTap, UsageProbe {
  readonly #ctx: ProxyContext;
  readonly #capture: BodyCapture | undefined;
  readonly #parser: SseParser;
  /** Counts from `usage` objects, merged field by field (Anthropic splits them over two frames). */
  #reported: TokenCounts | undefined;
  /** A `usage` that comes at the end was seen (not only Anthropic's `message_start`). */
  #final = false;
  /** The last unnamed data frames, oldest first (a ring of LAST_FRAMES), searched in `tokens()`. */
  readonly #lastFrames: Array<Buffer | undefined> = [];
  #framesSeen = 0;
  /** `#framesSeen` when `tokens()` last searched the kept frames. */
  #searchedUpTo = 0;
  #timings: TokenCounts | undefined;
  #generatedFrames = 0;
  #firstTokenMs: number | undefined;

  constructor(ctx: ProxyContext, capture: BodyCapture | undefined) {
    this.#ctx = ctx;
    this.#capture = capture;
    this.#parser = new SseParser((frame) => this.#frame(frame), { maxLineBytes: MAX_FRAME_LINE });
  }

  onChunk(chunk: Buffer): void {
    this.#capture?.add(chunk);
    this.#parser.push(chunk);
  }

  onEnd(): void {}

  #frame(frame: SseFrame): void {
    const { event, data } = frame;
    if (event === '') {
      if (hasNonEmptyString(data)) this.#generated();
      // `[DONE]` carries nothing; any other frame may turn out to be one of the last.
      if (data.length !== DONE.length || !data.equals(DONE)) this.#keep(data);
      return;
    }
    if (event === 'content_block_delta') return this.#generated(); // Anthropic text; never counts
    if (event.startsWith('response.') && event.endsWith('.delta')) return this.#generated(); // OpenAI Responses
    this.#readCounts(data, event !== 'message_start');
  }

  #generated(): void {
    this.#generatedFrames++;
    this.#firstTokenMs ??= performance.now() - this.#ctx.startedAt;
  }

  #keep(data: Buffer): void {
    this.#lastFrames[this.#framesSeen % LAST_FRAMES] = data;
    this.#framesSeen++;
  }

  /** Merges a frame's `usage` (field by field: Anthropic splits it over two frames) and `timings`. */
  #readCounts(data: Buffer, final: boolean): void {
    const usage = readObjectField(data, USAGE_KEY);
    if (usage) {
      const counts = countsFromUsage(usage);
      const before = this.#reported;
      this.#reported = {
        input: counts.input ?? before?.input ?? null,
        output: counts.output ?? before?.output ?? null,
        cached: counts.cached ?? before?.cached ?? null,
      };
      // message_start carries the prompt side at the start of the stream; its output is not final.
      if (final) this.#final = true;
    }
    const timings = data.indexOf(TIMINGS_KEY) === -1 ? undefined : readObjectField(data, TIMINGS_KEY);
    if (timings) this.#timings = countsFromTimings(timings);
  }

  tokens(): ObservedTokens | undefined {
    for (let i = Math.max(this.#searchedUpTo, this.#framesSeen - LAST_FRAMES); i < this.#framesSeen; i++) this.#readCounts(this.#lastFrames[i % LAST_FRAMES]!, true);
    this.#searchedUpTo = this.#framesSeen;
    const reported = this.#reported;
    const timings = this.#timings;
    if (reported && this.#final) {
      return {
        input: reported.input ?? timings?.input ?? null,
        output: reported.output ?? timings?.output ?? 0,
        cached: reported.cached ?? timings?.cached ?? null,
        source: 'usage',
      };
    }
    if (timings && timings.output !== null) {
      return { input: reported?.input ?? timings.input, output: timings.output, cached: reported?.cached ?? timings.cached, source: 'timings' };
    }
    if (reported || this.#generatedFrames > 0) {
      // Cut short (client gone, upstream broke) or a backend that reports nothing: the frames
      // that carried generated text are the tokens seen so far (llama-server sends one per token).
      return {
        input: reported?.input ?? null,
        output: Math.max(reported?.output ?? 0, this.#generatedFrames),
        cached: reported?.cached ?? null,
        source: 'estimate',
      };
    }
    return undefined;
  }

  firstTokenMs(): number | undefined {
    return this.#firstTokenMs;
  }

  responseBody(): string | undefined {
    return this.#capture?.text();
  }
}

/** Whether an unnamed frame carries generated text: the unit of "tokens seen so far" in a cut stream. */
function hasNonEmptyString(data: Buffer): boolean {
  for (const needle of GENERATED) {
    let at = data.indexOf(needle);
    while (at !== -1) {
      const next = at + needle.length;
      if (next < data.length && data[next] !== QUOTE) return true;
      at = data.indexOf(needle, next);
    }
  }
  return false;
}

class BodyTap implements ResponseTap, UsageProbe {
  readonly #ctx: ProxyContext;
  readonly #json: boolean;
  readonly #capture: BodyCapture | undefined;
  #head: Buffer[] = [];
  #headBytes = 0;
  #tail: Buffer[] = [];
  #tailBytes = 0;
  #firstByteMs: number | undefined;
  #tokens: ObservedTokens | undefined | null = null;

  constructor(ctx: ProxyContext, json: boolean, capture: BodyCapture | undefined) {
    this.#ctx = ctx;
    this.#json = json;
    this.#capture = capture;
  }

  onChunk(chunk: Buffer): void {
    this.#firstByteMs ??= performance.now() - this.#ctx.startedAt;
    this.#capture?.add(chunk);
    if (!this.#json) return;
    if (this.#headBytes + chunk.length <= JSON_KEEP_BYTES && this.#tailBytes === 0) {
      this.#head.push(chunk);
      this.#headBytes += chunk.length;
      return;
    }
    // A huge body (embeddings of a big batch): keep a window of the end, where `usage` is.
    this.#tail.push(chunk);
    this.#tailBytes += chunk.length;
    while (this.#tail.length > 1 && this.#tailBytes - this.#tail[0]!.length >= JSON_TAIL_BYTES) {
      this.#tailBytes -= this.#tail.shift()!.length;
    }
  }

  onEnd(): void {}

  tokens(): ObservedTokens | undefined {
    if (this.#tokens !== null) return this.#tokens;
    this.#tokens = undefined;
    if (!this.#json) return undefined;
    for (const parts of [this.#tail, this.#head]) {
      if (parts.length === 0) continue;
      const body = parts.length === 1 ? parts[0]! : Buffer.concat(parts);
      const usage = readObjectField(body, USAGE_KEY);
      const timingsObject = readObjectField(body, TIMINGS_KEY);
      const timings = timingsObject ? countsFromTimings(timingsObject) : undefined;
      if (usage) {
        const c = countsFromUsage(usage);
        this.#tokens = { input: c.input ?? timings?.input ?? null, output: c.output ?? timings?.output ?? 0, cached: c.cached ?? timings?.cached ?? null, source: 'usage' };
      } else if (timings) {
        this.#tokens = { ...timings, source: 'timings' };
      }
      if (this.#tokens) break;
    }
    this.#head = [];
    this.#tail = [];
    return this.#tokens;
  }

  firstTokenMs(): number | undefined {
    return this.#firstByteMs;
  }

  responseBody(): string | undefined {
    return this.#capture?.text();
  }
}
