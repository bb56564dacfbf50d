/**
 * The usage side's one reader of JSON bytes: finding token counts in responses without parsing
 * them whole. A key is found either by a byte search from the end (`"usage"`, `"timings"` in a
 * JSON body: `readUsageCounts`) or by one pass over a stream frame's keys (`scanFrame`); either
 * way the same check says it really is a key holding an object, and only that object's bytes are
 * JSON.parsed, then normalised below.
 *
 * Shapes understood (whichever the response has):
 * - OpenAI chat/completions `usage`: `prompt_tokens`, `completion_tokens`,
 *   `prompt_tokens_details.cached_tokens` (prompt_tokens includes the cached ones);
 * - OpenAI Responses `usage`: `input_tokens`, `output_tokens`, `input_tokens_details.cached_tokens`;
 * - Anthropic `usage`: `input_tokens` EXCLUDES cached tokens; `cache_read_input_tokens` and
 *   `cache_creation_input_tokens` come on top (llama-server reports it the same way);
 * - llama.cpp `timings`: `prompt_n` (evaluated, without the cache), `cache_n`, `predicted_n`, and
 *   `prompt_ms` + `predicted_ms`, the model server's compute time (`gpuMs`).
 *
 * Normalised meaning everywhere: `input` = every prompt token, cached included; `cached` = the
 * part of `input` served from a cache; `output` = generated tokens.
 */

export interface TokenCounts {
  input: number | null;
  output: number | null;
  cached: number | null;
  /** llama.cpp's own compute time (`timings`: prompt_ms + predicted_ms); only timings carry it. */
  gpuMs?: number;
}

const QUOTE = 0x22;
const BACKSLASH = 0x5c;
const OPEN = 0x7b;
const CLOSE = 0x7d;
const COMMA = 0x2c;
const COLON = 0x3a;

/** Needles are encoded once; `Buffer#indexOf` with a Buffer needle is a native search. */
const USAGE_KEY = Buffer.from('"usage"');
const TIMINGS_KEY = Buffer.from('"timings"');

/**
 * Whether the key whose opening quote is at `open` stands where an object key does: after `{`
 * or `,` (whitespace aside), never before `floor`. Inside a JSON string a quote is always
 * escaped, so a match there is never preceded by either.
 */
function standsAsKey(buf: Buffer, open: number, floor: number): boolean {
  let before = open - 1;
  while (before > floor && isSpace(buf[before]!)) before--;
  return before >= floor && (buf[before] === OPEN || buf[before] === COMMA);
}

/** The first byte that is not whitespace in `buf[from, end)`, or `end`. */
function skipSpace(buf: Buffer, from: number, end: number): number {
  while (from < end && isSpace(buf[from]!)) from++;
  return from;
}

/** The offset of the `{` of the object the key at `at` holds, or -1 when it is not a key holding an object. */
function objectOfKey(buf: Buffer, at: number, keyLength: number): number {
  if (!standsAsKey(buf, at, 0)) return -1;
  let after = skipSpace(buf, at + keyLength, buf.length);
  if (buf[after] !== COLON) return -1;
  after = skipSpace(buf, after + 1, buf.length);
  return buf[after] === OPEN ? after : -1;
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

/** The counts of the last `usage` object in `buf` (of any of the known shapes), or undefined. */
export function readUsageCounts(buf: Buffer): TokenCounts | undefined {
  return readCounts(buf, USAGE_KEY, usageCounts);
}

/** The counts of the last llama.cpp `timings` object in `buf`, or undefined. */
export function readTimingsCounts(buf: Buffer): TokenCounts | undefined {
  return readCounts(buf, TIMINGS_KEY, timingsCounts);
}

/** The counts of the `usage` object whose `{` is at `start` (found by a caller that already read the key). */
export function usageCountsAt(buf: Buffer, start: number): TokenCounts | undefined {
  const counts = countsAt(buf, start, usageCounts);
  return counts === TRUNCATED ? undefined : counts;
}

/** The counts of the `timings` object whose `{` is at `start`. */
export function timingsCountsAt(buf: Buffer, start: number): TokenCounts | undefined {
  const counts = countsAt(buf, start, timingsCounts);
  return counts === TRUNCATED ? undefined : counts;
}

/** An object cut off by the end of the bytes: an earlier occurrence of its key may be whole. */
const TRUNCATED = Symbol('truncated');

type Normalise = (object: Record<string, unknown>) => TokenCounts;

/**
 * The counts of the object held by the last occurrence of `key` (a `"name"` needle) used as an
 * object key. Searched from the end, where responses put `usage`: one native search when it is
 * there. Occurrences inside strings are skipped: there a quote is always escaped, so a real key
 * is preceded by `{` or `,` (whitespace aside).
 */
function readCounts(buf: Buffer, key: Buffer, normalise: Normalise): TokenCounts | undefined {
  for (let at = buf.lastIndexOf(key); at !== -1; at = at === 0 ? -1 : buf.lastIndexOf(key, at - 1)) {
    const start = objectOfKey(buf, at, key.length);
    if (start === -1) continue;
    const found = countsAt(buf, start, normalise);
    if (found !== TRUNCATED) return found;
  }
  return undefined;
}

/** The counts of the object whose `{` is at `start`; undefined when it is not valid JSON. */
function countsAt(buf: Buffer, start: number, normalise: Normalise): TokenCounts | undefined | typeof TRUNCATED {
  if (buf[start] !== OPEN) return undefined;
  const range = objectFrom(buf, start);
  if (!range) return TRUNCATED;
  let value: unknown;
  try {
    value = JSON.parse(buf.toString('utf8', range.start, range.end));
  } catch {
    return undefined;
  }
  return isRecord(value) ? normalise(value) : undefined;
}

/**
 * The normalisation of a `usage` object, by shape: OpenAI chat when `prompt_tokens` is there,
 * Anthropic when a cache count is, else OpenAI Responses. Output is `completion_tokens` or
 * `output_tokens` in every shape.
 */
function usageCounts(u: Record<string, unknown>): TokenCounts {
  const cacheRead = count(u.cache_read_input_tokens);
  const cacheCreation = count(u.cache_creation_input_tokens);
  const output = count(u.completion_tokens) ?? count(u.output_tokens);
  if (count(u.prompt_tokens) !== null)
    return { input: count(u.prompt_tokens), output, cached: count(nested(u.prompt_tokens_details, 'cached_tokens')) };
  if (cacheRead !== null || cacheCreation !== null) {
    // Anthropic: input_tokens counts only what was not read from or written to the cache.
    return { input: (count(u.input_tokens) ?? 0) + (cacheRead ?? 0) + (cacheCreation ?? 0), output, cached: cacheRead };
  }
  return { input: count(u.input_tokens), output, cached: count(nested(u.input_tokens_details, 'cached_tokens')) };
}

/** The normalisation of llama.cpp `timings`: `prompt_n` excludes the `cache_n` tokens read from the cache. */
function timingsCounts(t: Record<string, unknown>): TokenCounts {
  const promptN = count(t.prompt_n);
  const cacheN = count(t.cache_n);
  const promptMs = duration(t.prompt_ms);
  const predictedMs = duration(t.predicted_ms);
  const counts: TokenCounts = {
    input: promptN === null && cacheN === null ? null : (promptN ?? 0) + (cacheN ?? 0),
    output: count(t.predicted_n),
    cached: cacheN,
  };
  if (promptMs !== null || predictedMs !== null) counts.gpuMs = (promptMs ?? 0) + (predictedMs ?? 0);
  return counts;
}

/** A duration in ms: a finite, non-negative JSON number (fractions kept). */
function duration(value: unknown): number | null {
  return typeof value === 'number' && Number.isFinite(value) && value >= 0 ? value : null;
}

/** A token count: a finite, non-negative JSON number, rounded; anything else is no count. */
function count(value: unknown): number | null {
  return typeof value === 'number' && Number.isFinite(value) && value >= 0 ? Math.round(value) : null;
}

function nested(value: unknown, key: string): unknown {
  return isRecord(value) ? value[key] : undefined;
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** What `scanFrame` found in a frame, as bits. */
export const GENERATED_TEXT = 1;
export const HAS_USAGE = 2;
export const HAS_TIMINGS = 4;

/** Where `scanFrame` found a frame's `usage` / `timings` object (offset of its `{`); one per caller. */
export interface ObjectOffsets {
  usage: number;
  timings: number;
}

/**
 * Keys whose non-empty string value is generated text. `content` also as the end of a longer
 * key (`reasoning_content`); `text` is the completions API, `arguments` a tool call's delta.
 */
const CONTENT = Buffer.from('content');
const EXACT_GENERATED = [Buffer.from('text'), Buffer.from('arguments'), Buffer.from('partial_json')];
const USAGE = Buffer.from('usage');
const TIMINGS = Buffer.from('timings');

/**
 * One pass over a JSON frame's keys: GENERATED_TEXT when a generated-text key holds a non-empty
 * string (the unit of "tokens seen so far" in a cut stream), HAS_USAGE / HAS_TIMINGS when a
 * `usage` / `timings` key holds an object (its `{` offset goes to `into`, which the caller owns). It hops from
 * colon to colon and reads the key before each colon backwards; whitespace around the colon is
 * allowed (Python's json.dumps writes `"key": value`). A colon inside a string value is passed over: it is
 * not preceded by a closing quote, and a quote inside a string is escaped.
 */
export function scanFrame(data: Buffer, start: number, end: number, into: ObjectOffsets): number {
  let found = 0;
  for (let colon = data.indexOf(COLON, start); colon !== -1 && colon < end; colon = data.indexOf(COLON, colon + 1)) {
    let keyEnd = colon - 1;
    while (keyEnd > start && isSpace(data[keyEnd]!)) keyEnd--;
    if (keyEnd <= start || data[keyEnd] !== QUOTE) continue;
    let value = colon + 1;
    while (value < end && isSpace(data[value]!)) value++;
    if (value >= end) break;
    const first = data[value];
    if (first === QUOTE) {
      if (
        (found & GENERATED_TEXT) === 0 &&
        value + 1 < end &&
        data[value + 1] !== QUOTE &&
        isGeneratedKey(data, start, keyEnd)
      )
        found |= GENERATED_TEXT;
    } else if (first === OPEN) {
      if (isKey(data, start, keyEnd, USAGE)) {
        found |= HAS_USAGE;
        into.usage = value;
      } else if (isKey(data, start, keyEnd, TIMINGS)) {
        found |= HAS_TIMINGS;
        into.timings = value;
      }
    }
  }
  return found;
}

/** Whether the key ending with the quote at `quote` is one whose string value is generated text. */
function isGeneratedKey(data: Buffer, start: number, quote: number): boolean {
  if (endsWith(data, start, quote, CONTENT)) return true;
  for (const name of EXACT_GENERATED)
    if (endsWith(data, start, quote, name) && data[quote - name.length - 1] === QUOTE) return true;
  return false;
}

/** Whether the key ending with the quote at `quote` is exactly `name`, and stands where an object key does. */
function isKey(data: Buffer, start: number, quote: number, name: Buffer): boolean {
  const open = quote - name.length - 1;
  if (open <= start || data[open] !== QUOTE || !endsWith(data, start, quote, name)) return false;
  return standsAsKey(data, open, start);
}

/** Whether the bytes of the frame right before `end` are `name` (the frame starts at `start`). */
function endsWith(data: Buffer, start: number, end: number, name: Buffer): boolean {
  const from = end - name.length;
  if (from < start) return false;
  for (let i = 0; i < name.length; i++) if (data[from + i] !== name[i]) return false;
  return true;
}
