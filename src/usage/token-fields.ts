/**
 * Finding token counts in response bytes without parsing whole responses: a byte search for
 * the key (`"usage"`, `"timings"`), a check that it really is a key holding an object, then
 * JSON.parse of that object alone (a few hundred bytes).
 *
 * Shapes understood (whichever the response has):
 * - OpenAI chat/completions `usage`: `prompt_tokens`, `completion_tokens`,
 *   `prompt_tokens_details.cached_tokens` (prompt_tokens includes the cached ones);
 * - OpenAI Responses `usage`: `input_tokens`, `output_tokens`, `input_tokens_details.cached_tokens`;
 * - Anthropic `usage`: `input_tokens` EXCLUDES cached tokens; `cache_read_input_tokens` and
 *   `cache_creation_input_tokens` come on top (llama-server reports it the same way);
 * - llama.cpp `timings`: `prompt_n` (evaluated, without the cache), `cache_n`, `predicted_n`.
 *
 * Normalised meaning everywhere: `input` = every prompt token, cached included; `cached` = the
 * part of `input` served from a cache; `output` = generated tokens.
 */

export interface TokenCounts {
  input: number | null;
  output: number | null;
  cached: number | null;
}

const QUOTE = 0x22;
const BACKSLASH = 0x5c;
const OPEN = 0x7b;
const CLOSE = 0x7d;
const COMMA = 0x2c;
const COLON = 0x3a;

/** Needles are encoded once; `Buffer#indexOf` with a Buffer needle is a native search. */
export const USAGE_KEY = Buffer.from('"usage"');
export const TIMINGS_KEY = Buffer.from('"timings"');

/**
 * The byte range of the object held by the last occurrence of `key` (a `"name"` needle) used as
 * an object key, or undefined. Searched from the end, where responses put `usage`: one native
 * search when it is there. Occurrences inside strings are skipped: there a quote is always
 * escaped, so a real key is preceded by `{` or `,` (whitespace aside).
 */
export function lastObjectField(buf: Buffer, key: Buffer): { start: number; end: number } | undefined {
  for (let at = buf.lastIndexOf(key); at !== -1; at = at === 0 ? -1 : buf.lastIndexOf(key, at - 1)) {
    const range = objectAfterKey(buf, at, key.length);
    if (range) return range;
  }
  return undefined;
}

function isKeyWithObject(buf: Buffer, at: number, keyLength: number): boolean {
  let before = at - 1;
  while (before >= 0 && isSpace(buf[before]!)) before--;
  if (before < 0 || (buf[before] !== OPEN && buf[before] !== COMMA)) return false;
  let after = at + keyLength;
  while (after < buf.length && isSpace(buf[after]!)) after++;
  if (buf[after] !== COLON) return false;
  after++;
  while (after < buf.length && isSpace(buf[after]!)) after++;
  return buf[after] === OPEN;
}

function objectAfterKey(buf: Buffer, at: number, keyLength: number): { start: number; end: number } | undefined {
  if (!isKeyWithObject(buf, at, keyLength)) return undefined;
  return objectFrom(buf, buf.indexOf(OPEN, at + keyLength));
}

/** The byte range of the JSON object whose `{` is at `start`, or undefined when it is cut off. */
function objectFrom(buf: Buffer, start: number): { start: number; end: number } | undefined {
  let depth = 0;
  let inString = false;
  for (let i = start; i < buf.length; i++) {
    const byte = buf[i]!;
    if (inString) {
      if (byte === BACKSLASH) i++;
      else if (byte === QUOTE) inString = false;
    } else if (byte === QUOTE) {
      inString = true;
    } else if (byte === OPEN) {
      depth++;
    } else if (byte === CLOSE) {
      depth--;
      if (depth === 0) return { start, end: i + 1 };
    }
  }
  return undefined; // truncated
}

function isSpace(byte: number): boolean {
  return byte === 0x20 || byte === 0x0a || byte === 0x0d || byte === 0x09;
}

/** Parses the object held by `key` in `buf` (the last one), or undefined. */
export function readObjectField(buf: Buffer, key: Buffer): Record<string, unknown> | undefined {
  return parseRange(buf, lastObjectField(buf, key));
}

/** Parses the JSON object whose `{` is at `start` (found by a caller that already read the key). */
export function parseObjectAt(buf: Buffer, start: number): Record<string, unknown> | undefined {
  return buf[start] === OPEN ? parseRange(buf, objectFrom(buf, start)) : undefined;
}

function parseRange(buf: Buffer, range: { start: number; end: number } | undefined): Record<string, unknown> | undefined {
  if (!range) return undefined;
  try {
    const value: unknown = JSON.parse(buf.toString('utf8', range.start, range.end));
    return isRecord(value) ? value : undefined;
  } catch {
    return undefined;
  }
}

/** Counts from a `usage` object of any of the known shapes; fields it lacks stay null. */
export function countsFromUsage(usage: Record<string, unknown>): TokenCounts {
  const cacheRead = count(usage.cache_read_input_tokens);
  const cacheCreation = count(usage.cache_creation_input_tokens);
  let input: number | null;
  let cached: number | null;
  if (count(usage.prompt_tokens) !== null) {
    input = count(usage.prompt_tokens);
    cached = count(nested(usage.prompt_tokens_details, 'cached_tokens'));
  } else if (cacheRead !== null || cacheCreation !== null) {
    // Anthropic: input_tokens counts only what was not read from or written to the cache.
    input = (count(usage.input_tokens) ?? 0) + (cacheRead ?? 0) + (cacheCreation ?? 0);
    cached = cacheRead;
  } else {
    input = count(usage.input_tokens);
    cached = count(nested(usage.input_tokens_details, 'cached_tokens'));
  }
  const output = count(usage.completion_tokens) ?? count(usage.output_tokens);
  return { input, output, cached };
}

/** Counts from llama.cpp `timings`. */
export function countsFromTimings(timings: Record<string, unknown>): TokenCounts {
  const promptN = count(timings.prompt_n);
  const cacheN = count(timings.cache_n);
  return {
    input: promptN === null && cacheN === null ? null : (promptN ?? 0) + (cacheN ?? 0),
    output: count(timings.predicted_n),
    cached: cacheN,
  };
}

function count(value: unknown): number | null {
  return typeof value === 'number' && Number.isFinite(value) && value >= 0 ? Math.round(value) : null;
}

function nested(value: unknown, key: string): unknown {
  return isRecord(value) ? value[key] : undefined;
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}
