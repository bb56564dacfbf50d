/**
 * A reference for gjson's `GetBytes(body, "<name>").String()` on a one-part path, written from
 * gjson's `Get`, `parseObject`, `parseString`, `parseSquash`, `parseLiteral`, `parseNumber` and
 * `unescape` (tidwall/gjson, gjson.go): lenient, no validation, first matching key wins. Tests
 * hold the gateway's strict reader against it.
 */

export interface GjsonResult {
  type: 'string' | 'number' | 'true' | 'false' | 'null' | 'json';
  /** `.String()` */
  text: string;
}

const Q = 0x22;
const BS = 0x5c;

export function gjsonGet(json: Buffer, name: string): GjsonResult | undefined {
  for (let i = 0; i < json.length; i++) {
    if (json[i] === 0x7b) return parseObject(json, i + 1, name);
    if (json[i] === 0x5b) return undefined; // an array has no member called `name`
  }
  return undefined;
}

function parseObject(json: Buffer, start: number, name: string): GjsonResult | undefined {
  let i = start;
  while (i < json.length) {
    let key: Buffer | undefined;
    let kesc = false;
    let found = false;
    for (; i < json.length; i++) {
      if (json[i] === Q) {
        i++;
        const s = i;
        for (; i < json.length; i++) {
          if (json[i]! > BS) continue;
          if (json[i] === Q) {
            key = json.subarray(s, i);
            i++;
            found = true;
            break;
          }
          if (json[i] === BS) {
            i++;
            for (; i < json.length; i++) {
              if (json[i]! > BS) continue;
              if (json[i] === Q && !escapedQuote(json, i)) {
                key = json.subarray(s, i);
                kesc = true;
                i++;
                found = true;
                break;
              }
            }
            break;
          }
        }
        break;
      }
      if (json[i] === 0x7d) return undefined;
    }
    if (!found || key === undefined) return undefined;
    const hit = (kesc ? unescape(key) : key.toString('latin1')) === latin1(name);
    for (; i < json.length; i++) {
      const c = json[i]!;
      if (c === Q) {
        const [end, raw, vesc, ok] = parseString(json, i + 1);
        i = end;
        if (!ok) return undefined;
        if (hit)
          return {
            type: 'string',
            text: vesc ? unescape(raw.subarray(1, raw.length - 1)) : raw.toString('latin1', 1, raw.length - 1),
          };
        break;
      }
      if (c === 0x7b || c === 0x5b) {
        const [end, raw] = parseSquash(json, i);
        i = end;
        if (hit) return { type: 'json', text: raw.toString('latin1') };
        break;
      }
      if ((c === 0x6e && json[i + 1] === 0x75) || c === 0x74 || c === 0x66) {
        const [end] = parseLiteral(json, i);
        i = end;
        if (hit)
          return c === 0x74
            ? { type: 'true', text: 'true' }
            : c === 0x66
              ? { type: 'false', text: 'false' }
              : { type: 'null', text: '' };
        break;
      }
      if (
        c === 0x6e ||
        c === 0x2b ||
        c === 0x2d ||
        (c >= 0x30 && c <= 0x39) ||
        c === 0x69 ||
        c === 0x49 ||
        c === 0x4e
      ) {
        const [end, raw] = parseNumber(json, i);
        i = end;
        if (hit) return { type: 'number', text: numberString(raw.toString('latin1')) };
        break;
      }
    }
  }
  return undefined;
}

function escapedQuote(json: Buffer, i: number): boolean {
  if (json[i - 1] !== BS) return false;
  let n = 0;
  for (let j = i - 2; j > 0 && json[j] === BS; j--) n++;
  return n % 2 === 0;
}

function parseString(json: Buffer, start: number): [number, Buffer, boolean, boolean] {
  const s = start;
  for (let i = start; i < json.length; i++) {
    if (json[i]! > BS) continue;
    if (json[i] === Q) return [i + 1, json.subarray(s - 1, i + 1), false, true];
    if (json[i] === BS) {
      for (i++; i < json.length; i++) {
        if (json[i]! > BS) continue;
        if (json[i] === Q && !escapedQuote(json, i)) return [i + 1, json.subarray(s - 1, i + 1), true, true];
      }
      break;
    }
  }
  return [json.length, json.subarray(s - 1), false, false];
}

function parseSquash(json: Buffer, start: number): [number, Buffer] {
  let depth = 1;
  let i = start + 1;
  while (i < json.length) {
    const c = json[i]!;
    if (c === Q) {
      const s2 = i + 1;
      for (i = s2; i < json.length; i++) {
        if (json[i] !== Q) continue;
        if (json[i - 1] === BS) {
          let n = 0;
          for (let j = i - 2; j > s2 - 1 && json[j] === BS; j--) n++;
          if (n % 2 === 0) continue;
        }
        break;
      }
    } else if (c === 0x7b || c === 0x5b || c === 0x28) depth++;
    else if (c === 0x7d || c === 0x5d || c === 0x29) {
      depth--;
      if (depth === 0) return [i + 1, json.subarray(start, i + 1)];
    }
    i++;
  }
  return [i, json.subarray(start)];
}

function parseLiteral(json: Buffer, start: number): [number, Buffer] {
  let i = start + 1;
  while (i < json.length && json[i]! >= 0x61 && json[i]! <= 0x7a) i++;
  return [i, json.subarray(start, i)];
}

function parseNumber(json: Buffer, start: number): [number, Buffer] {
  let i = start + 1;
  while (i < json.length && !(json[i]! <= 0x20 || json[i] === 0x2c || json[i] === 0x5d || json[i] === 0x7d)) i++;
  return [i, json.subarray(start, i)];
}

/** `Result.String()` of a number: integer literals as written, others through ParseFloat. */
function numberString(raw: string): string {
  if (/^-?[0-9]+$/.test(raw)) return raw;
  const f = Number(raw);
  if (Number.isNaN(f)) return 'NaN';
  if (!Number.isFinite(f)) return f > 0 ? '+Inf' : '-Inf';
  return plainDecimal(f);
}

/** Go's FormatFloat(f, 'f', -1, 64): the shortest digits, never an exponent. */
function plainDecimal(f: number): string {
  const text = String(f);
  const m = /^(-?)(\d)(?:\.(\d+))?e([+-]\d+)$/.exec(text);
  if (!m) return text;
  const [, sign, lead, frac = '', exp] = m;
  const digits = lead! + frac;
  const point = 1 + Number(exp);
  if (point <= 0) return `${sign}0.${'0'.repeat(-point)}${digits}`;
  return `${sign}${digits.padEnd(point, '0')}`;
}

/** gjson's `unescape`, byte for byte, returning the bytes as a latin1 string. */
function unescape(raw: Buffer): string {
  const out: number[] = [];
  for (let i = 0; i < raw.length; i++) {
    const c = raw[i]!;
    if (c < 0x20) break;
    if (c !== BS) {
      out.push(c);
      continue;
    }
    i++;
    if (i >= raw.length) break;
    const e = raw[i]!;
    const simple: Record<number, number> = {
      0x5c: 0x5c,
      0x2f: 0x2f,
      0x62: 8,
      0x66: 12,
      0x6e: 10,
      0x72: 13,
      0x74: 9,
      0x22: 0x22,
    };
    if (simple[e] !== undefined) {
      out.push(simple[e]);
      continue;
    }
    if (e !== 0x75) break;
    if (i + 5 > raw.length) break;
    let r = runeit(raw, i + 1);
    i += 5;
    if (r >= 0xd800 && r < 0xe000 && raw.length - i >= 6 && raw[i] === BS && raw[i + 1] === 0x75) {
      const r2 = runeit(raw, i + 2);
      r = r < 0xdc00 && r2 >= 0xdc00 && r2 < 0xe000 ? 0x10000 + ((r - 0xd800) << 10) + (r2 - 0xdc00) : 0xfffd;
      i += 6;
    }
    if (r >= 0xd800 && r < 0xe000) r = 0xfffd;
    for (const b of Buffer.from(String.fromCodePoint(r), 'utf8')) out.push(b);
    i--;
  }
  return Buffer.from(out).toString('latin1');
}

/** strconv.ParseUint(s[:4], 16): 0 when the four bytes are not all hex. */
function runeit(raw: Buffer, at: number): number {
  const hex = raw.toString('latin1', at, at + 4);
  return /^[0-9a-fA-F]{4}$/.test(hex) ? parseInt(hex, 16) : 0;
}

function latin1(text: string): string {
  return Buffer.from(text, 'utf8').toString('latin1');
}
