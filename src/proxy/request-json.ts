/**
 * The one reader of request JSON bodies: a strict, incremental JSON validator that also picks
 * out a few top-level members the way llama-swap's gjson `GetBytes(body, "<name>")` does — the
 * first top-level key equal to the name after unescaping wins, and the value is unescaped
 * (docs/model-reading.md). It is fed chunks in order, so the answer is ready when the body ends.
 *
 * Strict on purpose: gjson itself never validates, so on broken JSON it can read things no
 * validator would. The reader only answers for bodies that are valid JSON (after an optional
 * UTF-8 byte order mark, which gjson skips too); for anything else it says `invalid`, and a
 * caller that must be certain refuses the call.
 */
import type { JsonKind, JsonMember } from '../core/context.js';
import { decodeUtf8 } from './utf8.js';

export type JsonReading = { valid: true; members: ReadonlyMap<string, JsonMember> } | { valid: false; reason: string };

/** Longest string value kept (raw bytes between the quotes); longer ones are not kept. */
const MAX_KEPT_VALUE_BYTES = 4096;
/** Raw key bytes worth decoding: no wanted name is longer, even fully escaped. */
const MAX_KEY_BYTES = 256;
/** Nesting deeper than this is refused rather than tracked. */
const MAX_DEPTH = 512;

const enum S {
  Bom1,
  Bom2,
  Start,
  Value,
  ArrayFirst,
  ObjectFirst,
  ObjectKey,
  Colon,
  AfterValue,
  InString,
  Escape,
  Hex,
  Literal,
  NumMinus,
  NumZero,
  NumInt,
  NumDot,
  NumFrac,
  NumE,
  NumESign,
  NumExp,
  Done,
  Error,
}

const LITERALS: Record<number, string> = { 0x74: 'true', 0x66: 'false', 0x6e: 'null' };

export class RequestJsonReader {
  private state = S.Bom1;
  private error: string | undefined;
  /** 0 = object, 1 = array, one entry per open container. */
  private readonly stack: number[] = [];
  /** What the string being read is: a top-level key, a top-level value, or anything else. */
  private stringRole: 'key' | 'value' | 'other' = 'other';
  /** The string being read is a member name (at any depth). */
  private inKey = false;
  private hexLeft = 0;
  private literal = '';
  private literalAt = 0;
  /** Raw bytes of the top-level key or value being kept, or undefined when not kept. */
  private kept: Buffer[] | undefined;
  private keptBytes = 0;
  private keptOverflow = false;
  /** The decoded name of the current top-level member, when it is one of the wanted names. */
  private memberName: string | undefined;
  private readonly members = new Map<string, JsonMember>();
  private numberStart: Buffer[] | undefined;

  constructor(private readonly wanted: ReadonlySet<string>) {}

  feed(chunk: Buffer): void {
    let i = 0;
    const n = chunk.length;
    // Where the string or number being kept began in this chunk (-1: not in one, or not kept).
    let stringStart = this.state === S.InString || this.state === S.Escape || this.state === S.Hex ? 0 : -1;
    let numberFrom = this.numberStart ? 0 : -1;
    while (i < n) {
      const c = chunk[i]!;
      switch (this.state) {
        case S.Bom1:
          if (c === 0xef) {
            this.state = S.Bom2;
            this.literalAt = 1;
            i++;
            continue;
          }
          this.state = S.Start;
          continue;
        case S.Bom2: {
          const expected = this.literalAt === 1 ? 0xbb : 0xbf;
          if (c !== expected) return this.fail('bytes before the JSON value');
          if (this.literalAt === 2) this.state = S.Start;
          this.literalAt++;
          i++;
          continue;
        }
        case S.Start:
        case S.Value:
        case S.ArrayFirst:
          if (isSpace(c)) break;
          if (this.state === S.ArrayFirst && c === 0x5d) {
            this.close(1);
            break;
          }
          if (!this.startValue(c)) return;
          if ((this.state as S) === S.InString) {
            stringStart = i + 1;
          } else if (isNumberState(this.state) && this.memberName !== undefined && this.stack.length === 1) {
            this.numberStart = [];
            numberFrom = i;
          }
          break;
        case S.ObjectFirst:
        case S.ObjectKey:
          if (isSpace(c)) break;
          if (c === 0x22) {
            this.inKey = true;
            this.stringRole = this.stack.length === 1 ? 'key' : 'other';
            this.startKeeping(this.stringRole === 'key');
            this.state = S.InString;
            stringStart = i + 1;
            break;
          }
          if (this.state === S.ObjectFirst && c === 0x7d) {
            this.close(0);
            break;
          }
          return this.fail('expected a member name');
        case S.Colon:
          if (isSpace(c)) break;
          if (c !== 0x3a) return this.fail("expected ':'");
          this.state = S.Value;
          break;
        case S.AfterValue: {
          if (isSpace(c)) break;
          const top = this.stack[this.stack.length - 1];
          if (c === 0x2c) {
            if (top === 0) {
              this.memberName = undefined;
              this.state = S.ObjectKey;
            } else this.state = S.Value;
            break;
          }
          if (c === 0x7d && top === 0) {
            this.close(0);
            break;
          }
          if (c === 0x5d && top === 1) {
            this.close(1);
            break;
          }
          return this.fail("expected ',' or the end of the container");
        }
        case S.InString: {
          // The common case: a run of plain bytes.
          let j = i;
          while (j < n) {
            const d = chunk[j]!;
            if (d === 0x22 || d === 0x5c || d < 0x20) break;
            j++;
          }
          i = j;
          if (i >= n) continue;
          const d = chunk[i]!;
          if (d < 0x20) return this.fail('a control character inside a string');
          if (d === 0x5c) {
            this.state = S.Escape;
            break;
          }
          // The closing quote.
          if (stringStart >= 0) this.keep(chunk.subarray(stringStart, i));
          stringStart = -1;
          this.endString();
          break;
        }
        case S.Escape:
          if (c === 0x75) {
            this.state = S.Hex;
            this.hexLeft = 4;
          } else if (
            c === 0x22 ||
            c === 0x5c ||
            c === 0x2f ||
            c === 0x62 ||
            c === 0x66 ||
            c === 0x6e ||
            c === 0x72 ||
            c === 0x74
          ) {
            this.state = S.InString;
          } else return this.fail('an invalid escape in a string');
          break;
        case S.Hex:
          if (!isHex(c)) return this.fail('an invalid \\u escape');
          if (--this.hexLeft === 0) this.state = S.InString;
          break;
        case S.Literal:
          if (c !== this.literal.charCodeAt(this.literalAt)) return this.fail('an invalid literal');
          if (++this.literalAt === this.literal.length)
            this.endValue(this.literal as JsonKind, this.literal === 'null' ? '' : this.literal);
          break;
        case S.NumMinus:
          if (c === 0x30) this.state = S.NumZero;
          else if (isDigit(c)) this.state = S.NumInt;
          else return this.fail('an invalid number');
          break;
        case S.NumZero:
        case S.NumInt:
        case S.NumFrac:
        case S.NumExp:
          if (isDigit(c) && this.state !== S.NumZero) break;
          if (c === 0x2e && (this.state === S.NumZero || this.state === S.NumInt)) {
            this.state = S.NumDot;
            break;
          }
          if ((c === 0x65 || c === 0x45) && this.state !== S.NumExp) {
            this.state = S.NumE;
            break;
          }
          // The number ended at this byte, which belongs to what follows.
          if (numberFrom >= 0) this.numberStart?.push(chunk.subarray(numberFrom, i));
          numberFrom = -1;
          this.endNumber();
          continue;
        case S.NumDot:
          if (!isDigit(c)) return this.fail('an invalid number');
          this.state = S.NumFrac;
          break;
        case S.NumE:
          if (c === 0x2b || c === 0x2d) this.state = S.NumESign;
          else if (isDigit(c)) this.state = S.NumExp;
          else return this.fail('an invalid number');
          break;
        case S.NumESign:
          if (!isDigit(c)) return this.fail('an invalid number');
          this.state = S.NumExp;
          break;
        case S.Done:
          if (!isSpace(c)) return this.fail('more after the JSON value');
          break;
        case S.Error:
          return;
      }
      i++;
    }
    if ((this.state === S.InString || this.state === S.Escape || this.state === S.Hex) && stringStart >= 0) {
      this.keep(chunk.subarray(stringStart, n));
    }
    if (numberFrom >= 0 && this.numberStart) this.numberStart.push(chunk.subarray(numberFrom, n));
  }

  /** The body ended: the reading, or why the body is not valid JSON. */
  end(): JsonReading {
    if (
      this.state >= S.NumZero &&
      this.state <= S.NumExp &&
      this.state !== S.NumDot &&
      this.state !== S.NumE &&
      this.state !== S.NumESign
    ) {
      this.endNumber();
    }
    if (this.state === S.Error) return { valid: false, reason: this.error! };
    if (this.state !== S.Done)
      return {
        valid: false,
        reason:
          this.state === S.Bom1 || this.state === S.Start
            ? 'the body is empty'
            : 'the body ends before the JSON value does',
      };
    return { valid: true, members: this.members };
  }

  private fail(reason: string): void {
    this.state = S.Error;
    this.error = reason;
  }

  /** Begins the value whose first byte is `c`; false when no value starts with it. */
  private startValue(c: number): boolean {
    const topLevelValue = this.stack.length === 1 && this.memberName !== undefined;
    if (c === 0x22) {
      this.stringRole = topLevelValue ? 'value' : 'other';
      this.startKeeping(topLevelValue);
      this.state = S.InString;
    } else if (c === 0x7b || c === 0x5b) {
      if (topLevelValue) this.record(c === 0x7b ? 'object' : 'array', undefined);
      if (this.stack.length >= MAX_DEPTH) {
        this.fail('nesting too deep');
        return false;
      }
      this.stack.push(c === 0x7b ? 0 : 1);
      this.state = c === 0x7b ? S.ObjectFirst : S.ArrayFirst;
    } else if (c === 0x2d) this.state = S.NumMinus;
    else if (c === 0x30) this.state = S.NumZero;
    else if (isDigit(c)) this.state = S.NumInt;
    else if (LITERALS[c] !== undefined) {
      this.literal = LITERALS[c]!;
      this.literalAt = 1;
      this.state = S.Literal;
    } else {
      this.fail(this.state === S.Start ? 'the body is not JSON' : 'expected a value');
      return false;
    }
    return true;
  }

  private close(kind: number): void {
    this.stack.pop();
    if (kind === 0 && this.stack.length === 0) this.memberName = undefined;
    this.afterValue();
  }

  private afterValue(): void {
    this.state = this.stack.length === 0 ? S.Done : S.AfterValue;
  }

  private startKeeping(keep: boolean): void {
    this.kept = keep ? [] : undefined;
    this.keptBytes = 0;
    this.keptOverflow = false;
  }

  private keep(bytes: Buffer): void {
    if (!this.kept || this.keptOverflow || bytes.length === 0) return;
    const limit = this.stringRole === 'key' ? MAX_KEY_BYTES : MAX_KEPT_VALUE_BYTES;
    this.keptBytes += bytes.length;
    if (this.keptBytes > limit) {
      this.keptOverflow = true;
      this.kept = [];
      return;
    }
    this.kept.push(Buffer.from(bytes)); // a copy: the chunk may be reused by the caller
  }

  private endString(): void {
    const raw = this.kept && !this.keptOverflow ? Buffer.concat(this.kept) : undefined;
    const role = this.stringRole;
    this.kept = undefined;
    this.stringRole = 'other';
    if (this.inKey) {
      this.inKey = false;
      if (role === 'key') {
        const name = raw === undefined ? undefined : gjsonUnescape(raw);
        this.memberName = name !== undefined && this.wanted.has(name) ? name : undefined;
      }
      this.state = S.Colon;
      return;
    }
    if (role === 'value') this.endValue('string', raw === undefined ? undefined : gjsonUnescape(raw));
    else this.afterValue();
  }

  private endNumber(): void {
    const raw = this.numberStart ? Buffer.concat(this.numberStart).toString('latin1') : undefined;
    this.numberStart = undefined;
    this.endValue('number', raw === undefined ? undefined : gjsonNumberText(raw));
  }

  private endValue(kind: JsonKind, text: string | undefined): void {
    if (this.stack.length === 1 && this.memberName !== undefined) this.record(kind, text);
    this.afterValue();
  }

  private record(kind: JsonKind, text: string | undefined): void {
    const name = this.memberName!;
    this.memberName = undefined;
    const seen = this.members.get(name);
    if (!seen) {
      this.members.set(name, { kind, text, occurrences: 1, conflicting: false });
      return;
    }
    seen.occurrences++;
    if (seen.kind !== kind || seen.text !== text || text === undefined) seen.conflicting = true;
  }
}

/** Reads `names` from a whole JSON body (a convenience over the incremental reader). */
export function readJsonMembers(body: Buffer | readonly Buffer[], names: Iterable<string>): JsonReading {
  const reader = new RequestJsonReader(new Set(names));
  if (Buffer.isBuffer(body)) reader.feed(body);
  else for (const chunk of body) reader.feed(chunk);
  return reader.end();
}

/**
 * Unescapes the raw bytes of a valid JSON string as gjson's `unescape` does: a `\u` high
 * surrogate followed by another `\u` escape is decoded as a pair (an invalid pair gives U+FFFD
 * and both escapes are consumed), a lone surrogate gives U+FFFD. Returns `undefined` when the
 * result is not valid UTF-8 (gjson would keep the raw bytes; we cannot compare them safely).
 */
function gjsonUnescape(raw: Buffer): string | undefined {
  if (raw.indexOf(0x5c) < 0) return decodeUtf8(raw);
  const out: number[] = [];
  for (let i = 0; i < raw.length; i++) {
    const c = raw[i]!;
    if (c !== 0x5c) {
      out.push(c);
      continue;
    }
    const e = raw[++i]!;
    if (e !== 0x75) {
      out.push(SIMPLE_ESCAPES[e]!);
      continue;
    }
    let r = parseInt(raw.toString('latin1', i + 1, i + 5), 16);
    i += 4;
    if (r >= 0xd800 && r <= 0xdfff) {
      if (raw[i + 1] === 0x5c && raw[i + 2] === 0x75 && i + 6 < raw.length) {
        const low = parseInt(raw.toString('latin1', i + 3, i + 7), 16);
        r = r <= 0xdbff && low >= 0xdc00 && low <= 0xdfff ? 0x10000 + ((r - 0xd800) << 10) + (low - 0xdc00) : 0xfffd;
        i += 6;
      } else r = 0xfffd;
    }
    for (const byte of Buffer.from(String.fromCodePoint(r), 'utf8')) out.push(byte);
  }
  return decodeUtf8(Buffer.from(out));
}

/** gjson's `.String()` of a number: an integer as written, anything else as Go's FormatFloat(f, 'f', -1). */
function gjsonNumberText(raw: string): string {
  if (/^-?[0-9]+$/.test(raw)) return raw;
  const f = Number(raw);
  if (!Number.isFinite(f)) return f > 0 ? '+Inf' : '-Inf';
  const m = /^(-?)(\d)(?:\.(\d+))?e([+-]\d+)$/.exec(String(f));
  if (!m) return String(f);
  const [, sign, lead, frac = '', exp] = m;
  const digits = lead! + frac;
  const point = 1 + Number(exp);
  return point <= 0 ? `${sign}0.${'0'.repeat(-point)}${digits}` : `${sign}${digits.padEnd(point, '0')}`;
}

const SIMPLE_ESCAPES: Record<number, number> = {
  0x22: 0x22,
  0x5c: 0x5c,
  0x2f: 0x2f,
  0x62: 0x08,
  0x66: 0x0c,
  0x6e: 0x0a,
  0x72: 0x0d,
  0x74: 0x09,
};

function isNumberState(state: S): boolean {
  return state >= S.NumMinus && state <= S.NumExp;
}

function isSpace(c: number): boolean {
  return c === 0x20 || c === 0x0a || c === 0x0d || c === 0x09;
}

function isDigit(c: number): boolean {
  return c >= 0x30 && c <= 0x39;
}

function isHex(c: number): boolean {
  return isDigit(c) || (c >= 0x61 && c <= 0x66) || (c >= 0x41 && c <= 0x46);
}
