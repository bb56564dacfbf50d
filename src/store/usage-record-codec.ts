/**
 * Usage records as bytes while they wait to be written.
 *
 * Why: the usage writer holds each record for up to half a second (a batch). As JS objects
 * (a record, its id and strings) they outlive one or two young-generation collections, so V8
 * copies and then promotes every one of them, and the old generation's marking pays for them
 * again: measured as the larger part of recording's cost per call (docs/benchmarks.md). Encoded
 * into a segment's off-heap buffer at the end of the call, a record leaves nothing on the JS
 * heap. The bytes are also what crosses to the usage write thread (usage-write-thread.ts): the
 * batch is decoded back into objects there, so the proxy's thread never builds a batch at all.
 *
 * Layout of one record (little-endian): a u16 null mask, a u8 flag byte, a u8 "same" mask,
 * u16 status, nine float64 numbers, then eleven strings, each a u32 byte length and UTF-8 bytes.
 * Nulls are in the null mask and take no bytes; so does a repeating field (key, model, method,
 * endpoint, token source, error class) whose value is the previous record's in the segment,
 * flagged in the "same" mask: consecutive calls mostly share them, and neither thread then
 * copies, compares or decodes those bytes again (the decoder hands out the same string).
 */
import type { TokensSource, UsageRecord } from './store.js';

const INITIAL_SEGMENT_BYTES = 32 * 1024;

// Null-mask bits, one per nullable field.
const N_KEY_ID = 1 << 0;
const N_KEY_NAME = 1 << 1;
const N_MODEL = 1 << 2;
const N_INPUT = 1 << 3;
const N_OUTPUT = 1 << 4;
const N_CACHED = 1 << 5;
const N_SOURCE = 1 << 6;
const N_TTFB = 1 << 7;
const N_TTFT = 1 << 8;
const N_ERROR = 1 << 9;
const N_REQUEST_BODY = 1 << 10;
const N_RESPONSE_BODY = 1 << 11;

const F_STREAMED = 1;
const F_ABORTED = 2;

/** Repeating fields, by their bit in the "same" mask: key id and name, model, method, endpoint, token source, error class. */
const R_KEY_ID = 0;
const R_KEY_NAME = 1;
const R_MODEL = 2;
const R_METHOD = 3;
const R_ENDPOINT = 4;
const R_SOURCE = 5;
const R_ERROR = 6;
const REPEATING_FIELDS = 7;

/** Bytes of the fixed part: null mask, flags, same mask, status, nine float64. */
const FIXED_BYTES = 2 + 1 + 1 + 2 + 9 * 8;

/**
 * Records appended as bytes; `count` of them. Grows by doubling; never shrinks (a sealed
 * segment is dropped as a whole once written).
 */
export class RecordSegment {
  #buf: Buffer = Buffer.allocUnsafeSlow(INITIAL_SEGMENT_BYTES);
  #end = 0;
  #count = 0;
  /** Each repeating field's last value written (null: none yet), for the "same" mask. */
  readonly #last: Array<string | null> = new Array<string | null>(REPEATING_FIELDS).fill(null);

  get count(): number {
    return this.#count;
  }

  get byteLength(): number {
    return this.#end;
  }

  append(r: UsageRecord): void {
    let mask = 0;
    if (r.keyId === null) mask |= N_KEY_ID;
    if (r.keyName === null) mask |= N_KEY_NAME;
    if (r.model === null) mask |= N_MODEL;
    if (r.inputTokens === null) mask |= N_INPUT;
    if (r.outputTokens === null) mask |= N_OUTPUT;
    if (r.cachedTokens === null) mask |= N_CACHED;
    if (r.tokensSource === null) mask |= N_SOURCE;
    if (r.ttfbMs === null) mask |= N_TTFB;
    if (r.ttftMs === null) mask |= N_TTFT;
    if (r.errorClass === null) mask |= N_ERROR;
    if (r.requestBody === null) mask |= N_REQUEST_BODY;
    if (r.responseBody === null) mask |= N_RESPONSE_BODY;
    const last = this.#last;
    let same = 0;
    if (r.keyId !== null && r.keyId === last[R_KEY_ID]) same |= 1 << R_KEY_ID;
    if (r.keyName !== null && r.keyName === last[R_KEY_NAME]) same |= 1 << R_KEY_NAME;
    if (r.model !== null && r.model === last[R_MODEL]) same |= 1 << R_MODEL;
    if (r.method === last[R_METHOD]) same |= 1 << R_METHOD;
    if (r.endpoint === last[R_ENDPOINT]) same |= 1 << R_ENDPOINT;
    if (r.tokensSource !== null && r.tokensSource === last[R_SOURCE]) same |= 1 << R_SOURCE;
    if (r.errorClass !== null && r.errorClass === last[R_ERROR]) same |= 1 << R_ERROR;

    // Worst case per string: 3 bytes per UTF-16 unit, plus its length word.
    this.#reserve(
      FIXED_BYTES +
        worstBytes(r.id) +
        worstBytes(r.requestId) +
        worstBytes(r.keyId) +
        worstBytes(r.keyName) +
        worstBytes(r.model) +
        worstBytes(r.method) +
        worstBytes(r.endpoint) +
        worstBytes(r.tokensSource) +
        worstBytes(r.errorClass) +
        worstBytes(r.requestBody) +
        worstBytes(r.responseBody),
    );

    const buf = this.#buf;
    let at = this.#end;
    at = buf.writeUInt16LE(mask, at);
    at = buf.writeUInt8((r.streamed ? F_STREAMED : 0) | (r.clientAborted ? F_ABORTED : 0), at);
    at = buf.writeUInt8(same, at);
    at = buf.writeUInt16LE(r.status, at);
    at = buf.writeDoubleLE(r.at, at);
    at = buf.writeDoubleLE(r.inputTokens ?? 0, at);
    at = buf.writeDoubleLE(r.outputTokens ?? 0, at);
    at = buf.writeDoubleLE(r.cachedTokens ?? 0, at);
    at = buf.writeDoubleLE(r.ttfbMs ?? 0, at);
    at = buf.writeDoubleLE(r.ttftMs ?? 0, at);
    at = buf.writeDoubleLE(r.durationMs, at);
    at = buf.writeDoubleLE(r.bytesIn, at);
    at = buf.writeDoubleLE(r.bytesOut, at);
    at = putString(buf, at, r.id);
    at = putString(buf, at, r.requestId);
    at = putRepeating(buf, at, r.keyId, same, R_KEY_ID, last);
    at = putRepeating(buf, at, r.keyName, same, R_KEY_NAME, last);
    at = putRepeating(buf, at, r.model, same, R_MODEL, last);
    at = putRepeating(buf, at, r.method, same, R_METHOD, last);
    at = putRepeating(buf, at, r.endpoint, same, R_ENDPOINT, last);
    at = putRepeating(buf, at, r.tokensSource, same, R_SOURCE, last);
    at = putRepeating(buf, at, r.errorClass, same, R_ERROR, last);
    at = putString(buf, at, r.requestBody);
    at = putString(buf, at, r.responseBody);
    this.#end = at;
    this.#count++;
  }

  /** The records, as objects again, in the order they were appended. */
  decode(): UsageRecord[] {
    return decodeRecords(this.#buf.subarray(0, this.#end), this.#count);
  }

  /**
   * A copy of the encoded bytes in an ArrayBuffer of their own, to transfer to another thread
   * (one memcpy; the segment keeps its bytes, so a failed write can be retried).
   */
  copyBytes(): Uint8Array {
    const copy = new Uint8Array(this.#end);
    copy.set(this.#buf.subarray(0, this.#end));
    return copy;
  }

  #reserve(bytes: number): void {
    const need = this.#end + bytes;
    if (need <= this.#buf.length) return;
    let size = this.#buf.length * 2;
    while (size < need) size *= 2;
    const grown = Buffer.allocUnsafeSlow(size);
    this.#buf.copy(grown, 0, 0, this.#end);
    this.#buf = grown;
  }
}

function worstBytes(s: string | null): number {
  return s === null ? 0 : 4 + s.length * 3;
}

/** Writes a length word and the string's bytes at `at` (nothing for null); returns the next offset. */
function putString(buf: Buffer, at: number, s: string | null): number {
  if (s === null) return at;
  const written = writeString(buf, s, at + 4);
  buf.writeUInt32LE(written, at);
  return at + 4 + written;
}

/** As putString, except for a value flagged in `same` (it is the previous one); notes it as the last. */
function putRepeating(buf: Buffer, at: number, s: string | null, same: number, field: number, last: Array<string | null>): number {
  if (s === null || (same & (1 << field)) !== 0) return at;
  last[field] = s;
  return putString(buf, at, s);
}

/** Strings up to this length are tried as ASCII first (ids, methods, paths, model names). */
const ASCII_TRY_MAX = 256;

/**
 * Writes `s` as UTF-8 at `at` (room is reserved) and returns the byte count. Short ASCII strings
 * are copied by a loop: a record has up to eleven strings, and a native `Buffer#write` per string
 * cost more than the bytes it copies (measured: ~2.5x for a typical record's strings).
 */
function writeString(buf: Buffer, s: string, at: number): number {
  const length = s.length;
  if (length <= ASCII_TRY_MAX) {
    let i = 0;
    for (; i < length; i++) {
      const c = s.charCodeAt(i);
      if (c > 0x7f) break;
      buf[at + i] = c;
    }
    if (i === length) return length;
  }
  return length === 0 ? 0 : buf.write(s, at);
}

/** Decodes `count` records from bytes written by `RecordSegment.append` (any thread). */
export function decodeRecords(bytes: Uint8Array, count: number): UsageRecord[] {
  const buf = Buffer.isBuffer(bytes) ? bytes : Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const out = new Array<UsageRecord>(count);
  let at = 0;
  const text = (): string => {
    const length = buf.readUInt32LE(at);
    const start = at + 4;
    at = start + length;
    return buf.toString('utf8', start, at);
  };
  // A repeating field flagged "same" is the previous record's string, handed out again.
  const lastText: string[] = new Array<string>(REPEATING_FIELDS).fill('');
  const repeating = (same: number, field: number): string => {
    if ((same & (1 << field)) !== 0) return lastText[field]!;
    const value = text();
    lastText[field] = value;
    return value;
  };
  for (let i = 0; i < count; i++) {
    const mask = buf.readUInt16LE(at);
    const flags = buf.readUInt8(at + 2);
    const same = buf.readUInt8(at + 3);
    const status = buf.readUInt16LE(at + 4);
    at += 6;
    const when = buf.readDoubleLE(at);
    const input = buf.readDoubleLE(at + 8);
    const output = buf.readDoubleLE(at + 16);
    const cached = buf.readDoubleLE(at + 24);
    const ttfb = buf.readDoubleLE(at + 32);
    const ttft = buf.readDoubleLE(at + 40);
    const duration = buf.readDoubleLE(at + 48);
    const bytesIn = buf.readDoubleLE(at + 56);
    const bytesOut = buf.readDoubleLE(at + 64);
    at += 72;
    // Object literal in UsageRecord's field order: every decoded record shares one shape.
    const id = text();
    const requestId = text();
    const keyId = mask & N_KEY_ID ? null : repeating(same, R_KEY_ID);
    const keyName = mask & N_KEY_NAME ? null : repeating(same, R_KEY_NAME);
    const model = mask & N_MODEL ? null : repeating(same, R_MODEL);
    const method = repeating(same, R_METHOD);
    const endpoint = repeating(same, R_ENDPOINT);
    const tokensSource = mask & N_SOURCE ? null : (repeating(same, R_SOURCE) as TokensSource);
    const errorClass = mask & N_ERROR ? null : repeating(same, R_ERROR);
    const requestBody = mask & N_REQUEST_BODY ? null : text();
    const responseBody = mask & N_RESPONSE_BODY ? null : text();
    out[i] = {
      id,
      at: when,
      requestId,
      keyId,
      keyName,
      model,
      method,
      endpoint,
      status,
      streamed: (flags & F_STREAMED) !== 0,
      inputTokens: mask & N_INPUT ? null : input,
      outputTokens: mask & N_OUTPUT ? null : output,
      cachedTokens: mask & N_CACHED ? null : cached,
      tokensSource,
      ttfbMs: mask & N_TTFB ? null : ttfb,
      ttftMs: mask & N_TTFT ? null : ttft,
      durationMs: duration,
      bytesIn,
      bytesOut,
      clientAborted: (flags & F_ABORTED) !== 0,
      errorClass,
      requestBody,
      responseBody,
    };
  }
  if (at !== buf.length) throw new Error(`usage batch: ${buf.length - at} bytes left after ${count} records`);
  return out;
}
