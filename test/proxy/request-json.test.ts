import { describe, expect, it } from 'vitest';
import { RequestJsonReader, type JsonReading } from '../../src/proxy/request-json.js';
import { prng } from '../helpers/prng.js';
import { gjsonGet } from './gjson-reference.js';

/** Feeds `body` split at `at` (and byte by byte when `at` is -1). */
function read(body: Buffer, at?: number): JsonReading {
  const reader = new RequestJsonReader(new Set(['model']));
  if (at === undefined) reader.feed(body);
  else if (at === -1) for (let i = 0; i < body.length; i++) reader.feed(body.subarray(i, i + 1));
  else {
    reader.feed(body.subarray(0, at));
    reader.feed(body.subarray(at));
  }
  return reader.end();
}

function summary(reading: JsonReading): unknown {
  if (!reading.valid) return 'invalid';
  const m = reading.members.get('model');
  return m ? { kind: m.kind, text: m.text, conflicting: m.conflicting } : 'absent';
}

/** What gjson gives, as the reader should report it for a valid body. */
function reference(body: Buffer): { kind: string; text: string | undefined } | 'absent' {
  const r = gjsonGet(body, 'model');
  if (!r) return 'absent';
  const kind = r.type === 'json' ? (r.text.startsWith('{') ? 'object' : 'array') : r.type;
  const bytes = Buffer.from(r.text, 'latin1');
  const text = kind === 'object' || kind === 'array' ? undefined : bytes.toString('utf8');
  return { kind, text };
}

function isStrictJson(body: Buffer): boolean {
  const text = body[0] === 0xef && body[1] === 0xbb && body[2] === 0xbf ? body.subarray(3) : body;
  try {
    JSON.parse(new TextDecoder('utf-8', { fatal: true }).decode(text));
    return true;
  } catch {
    return false;
  }
}

const BOM = '\ufeff';

/** [name, body, the reader's answer]: valid bodies agree with gjson, invalid ones are refused. */
const TABLE: Array<[string, string, unknown]> = [
  ['plain', '{"model":"qwen","messages":[]}', { kind: 'string', text: 'qwen', conflicting: false }],
  [
    'escaped key',
    '{"mode\\u006c":"llama-3.2-3b","messages":[]}',
    { kind: 'string', text: 'llama-3.2-3b', conflicting: false },
  ],
  [
    'escaped key first, plain key second',
    '{"mod\\u0065l":"llama-3.2-3b","model":"qwen"}',
    { kind: 'string', text: 'llama-3.2-3b', conflicting: true },
  ],
  [
    'duplicate keys, same value',
    '{"model":"qwen","model":"qwen"}',
    { kind: 'string', text: 'qwen', conflicting: false },
  ],
  ['escaped value', '{"model":"m\\u0032"}', { kind: 'string', text: 'm2', conflicting: false }],
  ['escaped slash and quote in value', '{"model":"a\\/b\\"c"}', { kind: 'string', text: 'a/b"c', conflicting: false }],
  ['surrogate pair', '{"model":"\\ud83d\\ude00"}', { kind: 'string', text: '😀', conflicting: false }],
  ['lone surrogate', '{"model":"x\\ud800y"}', { kind: 'string', text: 'x\ufffdy', conflicting: false }],
  ['BOM', `${BOM}{"model":"qwen"}`, { kind: 'string', text: 'qwen', conflicting: false }],
  [
    'whitespace everywhere',
    ' \n\t{ "model" \r\n : \t "qwen" , "a" : 1 } \n',
    { kind: 'string', text: 'qwen', conflicting: false },
  ],
  [
    'nested model ignored',
    '{"messages":[{"model":"x"}],"tools":{"model":"y"},"model":"z"}',
    { kind: 'string', text: 'z', conflicting: false },
  ],
  [
    'strings that look like keys',
    '{"a":"\\"model\\":\\"x\\"","model":"y"}',
    { kind: 'string', text: 'y', conflicting: false },
  ],
  ['no model', '{"messages":[]}', 'absent'],
  ['null model', '{"model":null}', { kind: 'null', text: '', conflicting: false }],
  ['number model', '{"model":12}', { kind: 'number', text: '12', conflicting: false }],
  ['fraction model', '{"model":1.50}', { kind: 'number', text: '1.5', conflicting: false }],
  ['exponent model', '{"model":-2.5e3}', { kind: 'number', text: '-2500', conflicting: false }],
  ['true model', '{"model":true}', { kind: 'true', text: 'true', conflicting: false }],
  ['object model', '{"model":{"id":"x"}}', { kind: 'object', text: undefined, conflicting: false }],
  ['array model', '{"model":["x"]}', { kind: 'array', text: undefined, conflicting: false }],
  ['array at the top', '[{"model":"x"}]', 'absent'],
  ['string at the top', '"{\\"model\\":\\"x\\"}"', 'absent'],
  ['empty object', '{}', 'absent'],
  ['truncated inside the value', '{"model":"qw', 'invalid'],
  ['truncated after the value', '{"model":"qwen"', 'invalid'],
  ['truncated number', '{"model":"q","n":1.', 'invalid'],
  ['empty body', '', 'invalid'],
  ['trailing garbage', '{"model":"qwen"}x', 'invalid'],
  ['two values', '{"model":"a"}{"model":"b"}', 'invalid'],
  ['garbage before', 'x{"model":"qwen"}', 'invalid'],
  ['missing comma', '{"a":1 "model":"x"}', 'invalid'],
  ['trailing comma', '{"model":"x",}', 'invalid'],
  ['single quotes', "{'model':'x'}", 'invalid'],
  ['invalid escape', '{"model":"\\x41"}', 'invalid'],
  ['raw control character', '{"model":"a\tb"}', 'invalid'],
  ['leading zero', '{"n":01,"model":"x"}', 'invalid'],
  ['bare word', '{"model":qwen}', 'invalid'],
  ['half a BOM', '\u00ef{"model":"x"}', 'invalid'],
];

describe('the request JSON reader', () => {
  for (const [name, text, expected] of TABLE) {
    it(`reads "${name}" the same way at every split offset`, () => {
      const body = Buffer.from(text, 'utf8');
      expect(summary(read(body))).toEqual(expected);
      for (let at = 0; at <= body.length; at++) expect(summary(read(body, at)), `split at ${at}`).toEqual(expected);
      expect(summary(read(body, -1)), 'byte by byte').toEqual(expected);
    });
  }

  it('agrees with gjson on every valid body of the table, and refuses exactly the invalid ones', () => {
    for (const [name, text] of TABLE) {
      const body = Buffer.from(text, 'utf8');
      const reading = read(body);
      expect(reading.valid, name).toBe(isStrictJson(body));
      if (!reading.valid) continue;
      const m = reading.members.get('model');
      expect(m ? { kind: m.kind, text: m.text } : 'absent', name).toEqual(reference(body));
    }
  });

  it('agrees with gjson on generated bodies: same answer for valid ones, never an answer for invalid ones', () => {
    const random = prng(19);
    const pick = <T>(list: readonly T[]): T => list[Math.floor(random() * list.length)]!;
    const keys = ['"model"', '"mod\\u0065l"', '"m\\"odel"', '"messages"', '"model "'];
    const values = [
      '"qwen"',
      '"q\\u0077en"',
      '1',
      '-2.5e3',
      'true',
      'null',
      '"\\\\"',
      '"a\\\\\\"b"',
      '[]',
      '{"model":"x"}',
      '["model"]',
    ];
    const mutations = ['{', '}', '[', ']', ',', ':', '"', '\\', ' ', '\ufeff', 'u', '0', '.', 'e'];
    let valid = 0;
    let invalid = 0;
    for (let n = 0; n < 4000; n++) {
      const pairs = Array.from({ length: 1 + Math.floor(random() * 4) }, () => `${pick(keys)}:${pick(values)}`);
      let text = `{${pairs.join(',')}}`;
      if (random() < 0.5) {
        const at = Math.floor(random() * (text.length + 1));
        const op = random();
        text =
          op < 0.33
            ? text.slice(0, at) + text.slice(at + 1)
            : op < 0.66
              ? text.slice(0, at) + pick(mutations) + text.slice(at)
              : text.slice(0, at);
      }
      const body = Buffer.from(text, 'utf8');
      const reading = read(body);
      const at = Math.floor(random() * (body.length + 1));
      expect(summary(read(body, at)), `${text} split at ${at}`).toEqual(summary(reading));
      expect(reading.valid, text).toBe(isStrictJson(body));
      if (!reading.valid) {
        invalid++;
        continue;
      }
      valid++;
      const m = reading.members.get('model');
      const ours = m ? { kind: m.kind, text: m.text } : 'absent';
      expect(ours, text).toEqual(reference(body));
    }
    expect(valid).toBeGreaterThan(1000);
    expect(invalid).toBeGreaterThan(500);
  });

  it('reads valid generated objects with nesting exactly like gjson', () => {
    const random = prng(7);
    const key = () => ['"model"', '"mode\\u006c"', '"messages"', '"m"', '"\\u006dodel"'][Math.floor(random() * 5)]!;
    const value = (depth: number): string => {
      const r = random();
      if (depth > 2 || r < 0.4)
        return ['"qwen"', '"ll\\u0061ma"', '7', 'null', 'false', '"a\\"b"'][Math.floor(random() * 6)]!;
      if (r < 0.7) return `[${Array.from({ length: Math.floor(random() * 3) }, () => value(depth + 1)).join(',')}]`;
      return `{${Array.from({ length: Math.floor(random() * 3) }, () => `${key()}:${value(depth + 1)}`).join(',')}}`;
    };
    for (let n = 0; n < 2000; n++) {
      const text = `{${Array.from({ length: 1 + Math.floor(random() * 4) }, () => `${key()}:${value(0)}`).join(',')}}`;
      const body = Buffer.from(text, 'utf8');
      const reading = read(body);
      expect(reading.valid, text).toBe(true);
      if (!reading.valid) continue;
      const m = reading.members.get('model');
      expect(m ? { kind: m.kind, text: m.text } : 'absent', text).toEqual(reference(body));
    }
  });
});
