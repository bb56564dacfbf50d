/**
 * The usage tap: watches each response body on the side of `forward` and learns the token
 * counts, without delaying or altering a byte (the chunk is written to the client by `forward`
 * whatever happens here; this only reads it).
 *
 * Streams (`text/event-stream`) are read frame by frame, as the stream's one SSE parser (run by
 * the forwarder, `core/sse-decoder.ts`) hands them over (`onFrame`).
 * - unnamed frames (OpenAI chat and completions, llama.cpp) are read once, key by key
 *   (`scanFrame`, token-fields.ts), which tells whether a frame carried generated text (the first-token time and
 *   the estimate for a cut stream) and where its `usage` or `timings` object starts. Only the
 *   last frame holding each is kept and parsed when the call is recorded: vLLM-style usage on
 *   every frame and llama.cpp's timings on every frame are cumulative, so the last one counts.
 * - named events (Anthropic `message_start` / `message_delta`, OpenAI Responses
 *   `response.completed`): searched as they come, except the many content deltas, which never
 *   carry counts.
 * Only the small `usage` / `timings` objects found are JSON.parsed (token-fields.ts).
 *
 * Other bodies are kept (bounded) when they are JSON and searched once at the end.
 *
 * No `stream_options.include_usage` is injected: llama-server puts `timings` on the last frame of
 * every stream and Anthropic streams always carry `usage`; rewriting the request and stripping the
 * extra frame would break the byte-for-byte pass-through. For a backend with neither, output
 * tokens are counted from the generated frames (`source: 'estimate'`). See README.md.
 */
import type { ObservedTokens, ProxyContext, UsageProbe } from '../core/context.js';
import type { ResponseTap, TapFactory } from '../core/steps.js';
import { BodyCapture } from './body-capture.js';
import {
  GENERATED_TEXT,
  HAS_TIMINGS,
  HAS_USAGE,
  readTimingsCounts,
  readUsageCounts,
  scanFrame,
  timingsCountsAt,
  usageCountsAt,
  type ObjectOffsets,
  type TokenCounts,
} from './token-fields.js';

export interface UsageTapOptions {
  /** Bytes of each response body to keep for the request log; 0 = none. */
  captureBytes: number;
}

const DONE = Buffer.from('[DONE]');
/** JSON bodies up to this size are searched whole; beyond, only the head and a tail window. */
const JSON_KEEP_BYTES = 4 * 1024 * 1024;
const JSON_TAIL_BYTES = 256 * 1024;

export function createUsageTap(options: UsageTapOptions): TapFactory {
  return function usageTap(ctx, _status, contentType): ResponseTap | undefined {
    const capture = options.captureBytes > 0 ? new BodyCapture(options.captureBytes, contentType) : undefined;
    let tap: ResponseTap & UsageProbe;
    if (contentType?.startsWith('text/event-stream') === true) {
      tap = new StreamTap(ctx, capture);
    } else {
      const json = isJson(contentType);
      if (!json && !capture) return undefined;
      tap = new BodyTap(ctx, json, capture);
    }
    ctx.outcome.usage = tap;
    return tap;
  };
}

/** llama.cpp's compute time, as a field to spread: absent when the timings did not carry it. */
function gpuOf(timings: TokenCounts | undefined): { gpuMs?: number } {
  return timings?.gpuMs === undefined ? {} : { gpuMs: timings.gpuMs };
}

function isJson(contentType: string | undefined): boolean {
  if (contentType === undefined) return false;
  // What llama-server and nearly every backend send, without a regular expression per call.
  if (contentType.startsWith('application/json')) return true;
  return /^application\/(?:[\w.+-]*\+)?json/i.test(contentType);
}

class StreamTap implements ResponseTap, UsageProbe {
  readonly #ctx: ProxyContext;
  readonly #capture: BodyCapture | undefined;
  /** Where `scanFrame` puts the objects it found in the frame it just read. */
  readonly #offsets: ObjectOffsets = { usage: 0, timings: 0 };
  /** Counts from `usage` objects, merged field by field (Anthropic splits them over two frames). */
  #reported: TokenCounts | undefined;
  /** A `usage` that comes at the end was seen (not only Anthropic's `message_start`). */
  #final = false;
  /**
   * The chunks holding the last unnamed frame's `usage` / `timings` object, and the offset of
   * its `{`; parsed by `tokens()`, not before.
   */
  #usageBytes: Buffer | undefined;
  #usageAt = 0;
  #timingsBytes: Buffer | undefined;
  #timingsAt = 0;
  #timings: TokenCounts | undefined;
  #generatedFrames = 0;
  #firstTokenMs: number | undefined;

  constructor(ctx: ProxyContext, capture: BodyCapture | undefined) {
    this.#ctx = ctx;
    this.#capture = capture;
  }

  onChunk(chunk: Buffer): void {
    this.#capture?.add(chunk);
  }

  onEnd(): void {}

  onFrame(event: string, bytes: Buffer, start: number, end: number): void {
    if (event === '') {
      if (end - start === DONE.length && DONE.compare(bytes, start, end) === 0) return;
      const found = scanFrame(bytes, start, end, this.#offsets);
      if (found & GENERATED_TEXT) this.#generated();
      if (found & HAS_USAGE) {
        this.#usageBytes = bytes;
        this.#usageAt = this.#offsets.usage;
      }
      if (found & HAS_TIMINGS) {
        this.#timingsBytes = bytes;
        this.#timingsAt = this.#offsets.timings;
      }
      return;
    }
    if (event === 'content_block_delta') return this.#generated(); // Anthropic text; never counts
    if (event.startsWith('response.') && event.endsWith('.delta')) return this.#generated(); // OpenAI Responses
    this.#readCounts(bytes.subarray(start, end), event !== 'message_start');
  }

  #generated(): void {
    this.#generatedFrames++;
    this.#firstTokenMs ??= performance.now() - this.#ctx.request.startedAt;
  }

  /** Merges a frame's `usage` (field by field: Anthropic splits it over two frames) and `timings`. */
  #readCounts(data: Buffer, final: boolean): void {
    this.#mergeUsage(readUsageCounts(data), final);
    const timings = readTimingsCounts(data);
    if (timings) this.#timings = timings;
  }

  #mergeUsage(counts: TokenCounts | undefined, final: boolean): void {
    if (counts) {
      const before = this.#reported;
      this.#reported = {
        input: counts.input ?? before?.input ?? null,
        output: counts.output ?? before?.output ?? null,
        cached: counts.cached ?? before?.cached ?? null,
      };
      // message_start carries the prompt side at the start of the stream; its output is not final.
      if (final) this.#final = true;
    }
  }

  tokens(): ObservedTokens | undefined {
    const usageBytes = this.#usageBytes;
    const timingsBytes = this.#timingsBytes;
    this.#usageBytes = undefined;
    this.#timingsBytes = undefined;
    // Each from the last frame that held it: both are cumulative where a backend repeats them.
    if (usageBytes) this.#mergeUsage(usageCountsAt(usageBytes, this.#usageAt), true);
    if (timingsBytes) {
      const timings = timingsCountsAt(timingsBytes, this.#timingsAt);
      if (timings) this.#timings = timings;
    }
    const reported = this.#reported;
    const timings = this.#timings;
    const gpuMs = gpuOf(timings);
    if (reported && this.#final) {
      return {
        input: reported.input ?? timings?.input ?? null,
        output: reported.output ?? timings?.output ?? 0,
        cached: reported.cached ?? timings?.cached ?? null,
        source: 'usage',
        ...gpuMs,
      };
    }
    if (timings && timings.output !== null) {
      return {
        input: reported?.input ?? timings.input,
        output: timings.output,
        cached: reported?.cached ?? timings.cached,
        source: 'timings',
        ...gpuMs,
      };
    }
    if (reported || this.#generatedFrames > 0) {
      // Cut short (client gone, upstream broke) or a backend that reports nothing: the frames
      // that carried generated text are the tokens seen so far (llama-server sends one per token).
      return {
        input: reported?.input ?? null,
        output: Math.max(reported?.output ?? 0, this.#generatedFrames),
        cached: reported?.cached ?? null,
        source: 'estimate',
        ...gpuMs,
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
    this.#firstByteMs ??= performance.now() - this.#ctx.request.startedAt;
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
      const c = readUsageCounts(body);
      // llama.cpp's timings fill what usage lacks, and carry the compute time (gpuMs).
      const timings = readTimingsCounts(body);
      if (c) {
        this.#tokens = {
          input: c.input ?? timings?.input ?? null,
          output: c.output ?? timings?.output ?? 0,
          cached: c.cached ?? timings?.cached ?? null,
          source: 'usage',
          ...gpuOf(timings),
        };
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
