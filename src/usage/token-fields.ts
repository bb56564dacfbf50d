/**
 * Finding token counts in response bytes without parsing whole responses: a byte search for
 * the key (`"usage"`, `"timings"`), a check that it really is a key holding an object, then a
 * scan of that object's bytes for the few numbers that matter (JSON.parse of the object alone
 * where the scan does not read it).
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

/** The offset of the `{` of the object the key at `at` holds, or -1 when it is not a key holding an object. */
function objectOfKey(buf: Buffer, at: number, keyLength: number): number {
  let before = at - 1;
  while (before >= 0 && isSpace(buf[before]!)) before--;
  if (before < 0 || (buf[before] !== OPEN && buf[before] !== COMMA)) return -1;
  let after = at + keyLength;
  while (after < buf.length && isSpace(buf[after]!)) after++;
  if (buf[after] !== COLON) return -1;
  after++;
  while (after < buf.length && isSpace(buf[after]!)) after++;
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

/**
 * The counts of the last `usage` object in `buf` (of any of the known shapes), or undefined.
 * Read straight from the bytes (`scanObject`); JSON.parse only where that scan gives up.
 */
export function readUsageCounts(buf: Buffer): TokenCounts | undefined {
  return readCounts(buf, USAGE_KEY, usageFromFields);
}

/** The counts of the last llama.cpp `timings` object in `buf`, or undefined. */
export function readTimingsCounts(buf: Buffer): TokenCounts | undefined {
  return readCounts(buf, TIMINGS_KEY, timingsFromFields);
}

/** The counts of the `usage` object whose `{` is at `start` (found by a caller that already read the key). */
export function usageCountsAt(buf: Buffer, start: number): TokenCounts | undefined {
  const counts = countsAt(buf, start, usageFromFields);
  return counts === TRUNCATED ? undefined : counts;
}

/** The counts of the `timings` object whose `{` is at `start`. */
export function timingsCountsAt(buf: Buffer, start: number): TokenCounts | undefined {
  const counts = countsAt(buf, start, timingsFromFields);
  return counts === TRUNCATED ? undefined : counts;
}

/** An object cut off by the end of the bytes: an earlier occurrence of its key may be whole. */
const TRUNCATED = Symbol('truncated');

/**
 * The counts of the object held by the last occurrence of `key` (a `"name"` needle) used as an
 * object key. Searched from the end, where responses put `usage`: one native search when it is
 * there. Occurrences inside strings are skipped: there a quote is always escaped, so a real key
 * is preceded by `{` or `,` (whitespace aside).
 */
function readCounts(buf: Buffer, key: Buffer, counts: (fields: Float64Array) => TokenCounts): TokenCounts | undefined {
  for (let at = buf.lastIndexOf(key); at !== -1; at = at === 0 ? -1 : buf.lastIndexOf(key, at - 1)) {
    const start = objectOfKey(buf, at, key.length);
    if (start === -1) continue;
    const found = countsAt(buf, start, counts);
    if (found !== TRUNCATED) return found;
  }
  return undefined;
}

/**
 * The counts of the object at `start`: scanned from the bytes when they are plain JSON of the
 * usual kind, else (escaped keys, deep nesting, anything invalid) JSON.parse decides, exactly as
 * before the scan existed. Undefined when the object is not valid JSON.
 */
function countsAt(buf: Buffer, start: number, counts: (fields: Float64Array) => TokenCounts): TokenCounts | undefined | typeof TRUNCATED {
  if (buf[start] !== OPEN) return undefined;
  fields.fill(Number.NaN);
  if (scanObject(buf, start, 0, TOP_LEVEL) !== FAIL) return counts(fields);
  const range = objectFrom(buf, start);
  if (!range) return TRUNCATED;
  const value = parseRange(buf, range);
  return value ? counts(fieldsOf(value)) : undefined;
}

function parseRange(buf: Buffer, range: { start: number; end: number }): Record<string, unknown> | undefined {
  try {
    const value: unknown = JSON.parse(buf.toString('utf8', range.start, range.end));
    return isRecord(value) ? value : undefined;
  } catch {
    return undefined;
  }
}

/*
 * The number fields the counts are made of, as slots of one array: the value a field holds when
 * it is a JSON number, NaN when it is absent or not a number. Filled either by the byte scan or
 * from a parsed object (`fieldsOf`), and read by one function per shape, so both ways give the
 * same counts by construction.
 *
 * Why a scan: in the gateway, JSON.parse of the few dozen bytes of a `usage` object (its string,
 * its keys looked up in V8's string table, its object) measured several times its cost in a
 * tight loop, most of what recording cost the proxy's thread per call (docs/benchmarks.md). The
 * scan reads bytes that have just arrived and allocates nothing.
 */
const PROMPT_TOKENS = 0;
const COMPLETION_TOKENS = 1;
const INPUT_TOKENS = 2;
const OUTPUT_TOKENS = 3;
const CACHE_READ = 4;
const CACHE_CREATION = 5;
const PROMPT_CACHED = 6;
const INPUT_CACHED = 7;
const PROMPT_N = 8;
const CACHE_N = 9;
const PREDICTED_N = 10;
const FIELD_COUNT = 11;

/** Where the scan writes; read right after it returns (everything here is synchronous). */
const fields = new Float64Array(FIELD_COUNT);

/** A field's slot for a key, or the object whose `cached_tokens` goes to a slot. */
interface KeyRole {
  name: Buffer;
  slot: number;
  /** The key holds an object whose `cached_tokens` is the slot, not a number. */
  details: boolean;
}

/** The keys scanned for, with the slot each fills; a `details` key holds an object whose `cached_tokens` fills it. */
const FIELD_KEYS: ReadonlyArray<readonly [name: string, slot: number, details: boolean]> = [
  ['prompt_tokens', PROMPT_TOKENS, false],
  ['completion_tokens', COMPLETION_TOKENS, false],
  ['input_tokens', INPUT_TOKENS, false],
  ['output_tokens', OUTPUT_TOKENS, false],
  ['cache_read_input_tokens', CACHE_READ, false],
  ['cache_creation_input_tokens', CACHE_CREATION, false],
  ['prompt_tokens_details', PROMPT_CACHED, true],
  ['input_tokens_details', INPUT_CACHED, true],
  ['prompt_n', PROMPT_N, false],
  ['cache_n', CACHE_N, false],
  ['predicted_n', PREDICTED_N, false],
];

/** Keys by byte length, for the scan. */
type KeyTable = Array<KeyRole[] | undefined>;

function keyTable(entries: ReadonlyArray<readonly [string, number, boolean]>): KeyTable {
  const byLength: KeyTable = [];
  for (const [name, slot, details] of entries) (byLength[name.length] ??= []).push({ name: Buffer.from(name), slot, details });
  return byLength;
}

/** A `usage` or `timings` object's keys (one table: a key of the other shape is ignored when counting). */
const TOP_LEVEL = keyTable(FIELD_KEYS);
/** Inside `prompt_tokens_details` / `input_tokens_details`: `cached_tokens`, into the slot of its parent. */
const DETAILS: KeyTable[] = [];
for (const [, slot, details] of FIELD_KEYS) if (details) DETAILS[slot] = keyTable([['cached_tokens', slot, false]]);

/** The slots from an object JSON.parse made, as the scan fills them from bytes. */
function fieldsOf(object: Record<string, unknown>): Float64Array {
  const out = new Float64Array(FIELD_COUNT);
  for (const [name, slot, details] of FIELD_KEYS) out[slot] = numberOrNaN(details ? nested(object[name], 'cached_tokens') : object[name]);
  return out;
}

function numberOrNaN(value: unknown): number {
  return typeof value === 'number' ? value : Number.NaN;
}

function usageFromFields(f: Float64Array): TokenCounts {
  const cacheRead = count(f[CACHE_READ]);
  const cacheCreation = count(f[CACHE_CREATION]);
  let input: number | null;
  let cached: number | null;
  if (count(f[PROMPT_TOKENS]) !== null) {
    input = count(f[PROMPT_TOKENS]);
    cached = count(f[PROMPT_CACHED]);
  } else if (cacheRead !== null || cacheCreation !== null) {
    // Anthropic: input_tokens counts only what was not read from or written to the cache.
    input = (count(f[INPUT_TOKENS]) ?? 0) + (cacheRead ?? 0) + (cacheCreation ?? 0);
    cached = cacheRead;
  } else {
    input = count(f[INPUT_TOKENS]);
    cached = count(f[INPUT_CACHED]);
  }
  const output = count(f[COMPLETION_TOKENS]) ?? count(f[OUTPUT_TOKENS]);
  return { input, output, cached };
}

function timingsFromFields(f: Float64Array): TokenCounts {
  const promptN = count(f[PROMPT_N]);
  const cacheN = count(f[CACHE_N]);
  return {
    input: promptN === null && cacheN === null ? null : (promptN ?? 0) + (cacheN ?? 0),
    output: count(f[PREDICTED_N]),
    cached: cacheN,
  };
}

/** The scan gave up: not JSON it reads (JSON.parse decides), or cut off. */
const FAIL = -1;
/** Containers deeper than this are left to JSON.parse. */
const MAX_DEPTH = 32;
const BRACKET = 0x5b;
const CLOSE_BRACKET = 0x5d;
const MINUS = 0x2d;
const ZERO = 0x30;
const NINE = 0x39;

/**
 * Scans the JSON object at `i` (its `{`), writing the number of each key `table` knows into its
 * slot (last occurrence wins, as with JSON.parse); returns the offset after its `}`, or FAIL.
 */
function scanObject(buf: Buffer, i: number, depth: number, table: KeyTable | undefined): number {
  if (depth > MAX_DEPTH) return FAIL;
  i = skipSpace(buf, i + 1);
  if (buf[i] === CLOSE) return i + 1;
  for (;;) {
    if (buf[i] !== QUOTE) return FAIL;
    const keyStart = i + 1;
    let keyEnd = keyStart;
    // A key with an escape (or a control byte) is left to JSON.parse.
    for (let b = buf[keyEnd]; b !== QUOTE; b = buf[++keyEnd]) if (b === undefined || b === BACKSLASH || b < 0x20) return FAIL;
    i = skipSpace(buf, keyEnd + 1);
    if (buf[i] !== COLON) return FAIL;
    i = skipSpace(buf, i + 1);
    const role = table === undefined ? undefined : findRole(buf, keyStart, keyEnd, table);
    if (role === undefined) {
      i = skipValue(buf, i, depth + 1);
    } else if (role.details) {
      fields[role.slot] = Number.NaN;
      i = buf[i] === OPEN ? scanObject(buf, i, depth + 1, DETAILS[role.slot]) : skipValue(buf, i, depth + 1);
    } else {
      if (buf[i] === MINUS || isDigit(buf[i])) {
        const end = numberEnd(buf, i);
        if (end === FAIL) return FAIL;
        fields[role.slot] = numberValue(buf, i, end);
        i = end;
      } else {
        fields[role.slot] = Number.NaN;
        i = skipValue(buf, i, depth + 1);
      }
    }
    if (i === FAIL) return FAIL;
    i = skipSpace(buf, i);
    if (buf[i] === CLOSE) return i + 1;
    if (buf[i] !== COMMA) return FAIL;
    i = skipSpace(buf, i + 1);
  }
}

function findRole(buf: Buffer, start: number, end: number, table: KeyTable): KeyRole | undefined {
  const candidates = table[end - start];
  if (candidates === undefined) return undefined;
  for (const role of candidates) if (bytesAt(buf, start, role.name)) return role;
  return undefined;
}

/** Whether `buf` holds `name` at `at`. A JS loop: a native compare costs more than these few bytes. */
function bytesAt(buf: Buffer, at: number, name: Buffer): boolean {
  if (at + name.length > buf.length) return false;
  for (let k = 0; k < name.length; k++) if (buf[at + k] !== name[k]) return false;
  return true;
}

/** Skips any JSON value at `i`, checking its syntax; the offset after it, or FAIL. */
function skipValue(buf: Buffer, i: number, depth: number): number {
  const byte = buf[i];
  if (byte === QUOTE) return stringEnd(buf, i);
  if (byte === OPEN) return scanObject(buf, i, depth, undefined);
  if (byte === BRACKET) return arrayEnd(buf, i, depth);
  if (byte === MINUS || isDigit(byte)) return numberEnd(buf, i);
  for (const literal of LITERALS) if (bytesAt(buf, i, literal)) return i + literal.length;
  return FAIL;
}

const LITERALS = [Buffer.from('null'), Buffer.from('true'), Buffer.from('false')];

function arrayEnd(buf: Buffer, i: number, depth: number): number {
  if (depth > MAX_DEPTH) return FAIL;
  i = skipSpace(buf, i + 1);
  if (buf[i] === CLOSE_BRACKET) return i + 1;
  for (;;) {
    i = skipValue(buf, i, depth + 1);
    if (i === FAIL) return FAIL;
    i = skipSpace(buf, i);
    if (buf[i] === CLOSE_BRACKET) return i + 1;
    if (buf[i] !== COMMA) return FAIL;
    i = skipSpace(buf, i + 1);
  }
}

/** The offset after the string whose opening quote is at `i`, or FAIL (cut off, a raw control byte, a bad escape). */
function stringEnd(buf: Buffer, i: number): number {
  for (i++; i < buf.length; i++) {
    const byte = buf[i]!;
    if (byte === QUOTE) return i + 1;
    if (byte < 0x20) return FAIL;
    if (byte === BACKSLASH) {
      const escaped = buf[++i];
      if (escaped === 0x75 /* u */) {
        for (let k = 1; k <= 4; k++) if (!isHex(buf[i + k])) return FAIL;
        i += 4;
      } else if (escaped === undefined || !SIMPLE_ESCAPES.includes(escaped)) {
        return FAIL;
      }
    }
  }
  return FAIL;
}

const SIMPLE_ESCAPES = [...'"\\/bfnrt'].map((c) => c.charCodeAt(0));

function isHex(byte: number | undefined): boolean {
  return byte !== undefined && ((byte >= ZERO && byte <= NINE) || (byte >= 0x61 && byte <= 0x66) || (byte >= 0x41 && byte <= 0x46));
}

/** The offset after the JSON number at `i` (`-? (0 | [1-9][0-9]*) (.[0-9]+)? ([eE][+-]?[0-9]+)?`), or FAIL. */
function numberEnd(buf: Buffer, i: number): number {
  if (buf[i] === MINUS) i++;
  if (buf[i] === ZERO) i++;
  else if (isDigit(buf[i])) while (isDigit(buf[i])) i++;
  else return FAIL;
  if (buf[i] === 0x2e /* . */) {
    if (!isDigit(buf[++i])) return FAIL;
    while (isDigit(buf[i])) i++;
  }
  if (buf[i] === 0x65 || buf[i] === 0x45 /* e E */) {
    i++;
    if (buf[i] === 0x2b || buf[i] === MINUS) i++;
    if (!isDigit(buf[i])) return FAIL;
    while (isDigit(buf[i])) i++;
  }
  return i;
}

/** The value of the number from `start` to `end` (checked by numberEnd): plain digits summed, anything else as JSON.parse reads it. */
function numberValue(buf: Buffer, start: number, end: number): number {
  if (end - start <= 15) {
    let value = 0;
    let i = start;
    for (; i < end; i++) {
      const byte = buf[i]!;
      if (byte < ZERO || byte > NINE) break;
      value = value * 10 + (byte - ZERO);
    }
    if (i === end) return value;
  }
  return Number(buf.toString('latin1', start, end));
}

function isDigit(byte: number | undefined): boolean {
  return byte !== undefined && byte >= ZERO && byte <= NINE;
}

function skipSpace(buf: Buffer, i: number): number {
  while (i < buf.length && isSpace(buf[i]!)) i++;
  return i;
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
