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
 * Layout of one record (little-endian): a u16 null mask, a u8 flag byte, u16 status, nine
 * float64 numbers, then eleven strings, each a u32 byte length and UTF-8 bytes (nulls are in
 * the mask and take no bytes).
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

/** Fields decoded with `repeated()`: key id and name, model, method, endpoint, token source, error class. */
const REPEATING_FIELDS = 7;

/** Bytes of the fixed part: mask, flags, status, nine float64. */
const FIXED_BYTES = 2 + 1 + 2 + 9 * 8;

/**
 * Records appended as bytes; `count` of them. Grows by doubling; never shrinks (a sealed
 * segment is dropped as a whole once written).
 */
export class RecordSegment {
  #buf: Buffer = Buffer.allocUnsafeSlow(INITIAL_SEGMENT_BYTES);
  #end = 0;
  #count = 0;

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

    // Worst case per string: 3 bytes per UTF-16 unit, plus its length word.
    const strings = [r.id, r.requestId, r.keyId, r.keyName, r.model, r.method, r.endpoint, r.tokensSource, r.errorClass, r.requestBody, r.responseBody];
    let worst = FIXED_BYTES;
    for (const s of strings) worst += 4 + (s === null ? 0 : s.length * 3);
    this.#reserve(worst);

    const buf = this.#buf;
    let at = this.#end;
    at = buf.writeUInt16LE(mask, at);
    at = buf.writeUInt8((r.streamed ? F_STREAMED : 0) | (r.clientAborted ? F_ABORTED : 0), at);
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
    for (const s of strings) {
      if (s === null) continue;
      const written = writeString(buf, s, at + 4);
      buf.writeUInt32LE(written, at);
      at += 4 + written;
    }
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
  // Key, model, method, endpoint and the like repeat from one call to the next: a value equal
  // to the same field's in the previous record reuses that string (a byte comparison instead
  // of a new string per record, so a 500-record batch allocates little beyond ids).
  const lastStart = new Int32Array(REPEATING_FIELDS).fill(-1);
  const lastEnd = new Int32Array(REPEATING_FIELDS);
  const lastText: string[] = new Array<string>(REPEATING_FIELDS).fill('');
  const repeated = (field: number): string => {
    const length = buf.readUInt32LE(at);
    const start = at + 4;
    at = start + length;
    const prevStart = lastStart[field]!;
    if (prevStart >= 0 && lastEnd[field]! - prevStart === length && buf.compare(buf, prevStart, lastEnd[field], start, at) === 0) return lastText[field]!;
    const value = buf.toString('utf8', start, at);
    lastStart[field] = start;
    lastEnd[field] = at;
    lastText[field] = value;
    return value;
  };
  for (let i = 0; i < count; i++) {
    const mask = buf.readUInt16LE(at);
    const flags = buf.readUInt8(at + 2);
    const status = buf.readUInt16LE(at + 3);
    at += 5;
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
    const keyId = mask & N_KEY_ID ? null : repeated(0);
    const keyName = mask & N_KEY_NAME ? null : repeated(1);
    const model = mask & N_MODEL ? null : repeated(2);
    const method = repeated(3);
    const endpoint = repeated(4);
    const tokensSource = mask & N_SOURCE ? null : (repeated(5) as TokensSource);
    const errorClass = mask & N_ERROR ? null : repeated(6);
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
