/**
 * Token counts found in response bytes (token-fields.ts) against a reference written out here on
 * purpose, independent of the module's own code: for random objects of every shape, among decoy
 * text, the module must find the right object and normalise it as the reference does.
 */
import { describe, expect, it } from 'vitest';
import { prng } from '../helpers/prng.js';
import {
  readTimingsCounts,
  readUsageCounts,
  timingsCountsAt,
  usageCountsAt,
  type TokenCounts,
} from '../../src/usage/token-fields.js';

type Json = Record<string, unknown>;

function count(value: unknown): number | null {
  return typeof value === 'number' && Number.isFinite(value) && value >= 0 ? Math.round(value) : null;
}
function cachedIn(details: unknown): number | null {
  return typeof details === 'object' && details !== null && !Array.isArray(details)
    ? count((details as Json).cached_tokens)
    : null;
}

/** The normalised counts of a parsed `usage` object: the rules of token-fields.ts, spelled out. */
function referenceUsage(u: Json): TokenCounts {
  const read = count(u.cache_read_input_tokens);
  const creation = count(u.cache_creation_input_tokens);
  const output = count(u.completion_tokens) ?? count(u.output_tokens);
  if (count(u.prompt_tokens) !== null)
    return { input: count(u.prompt_tokens), output, cached: cachedIn(u.prompt_tokens_details) };
  if (read !== null || creation !== null)
    return { input: (count(u.input_tokens) ?? 0) + (read ?? 0) + (creation ?? 0), output, cached: read };
  return { input: count(u.input_tokens), output, cached: cachedIn(u.input_tokens_details) };
}

function referenceTimings(t: Json): TokenCounts {
  const promptN = count(t.prompt_n);
  const cacheN = count(t.cache_n);
  return {
    input: promptN === null && cacheN === null ? null : (promptN ?? 0) + (cacheN ?? 0),
    output: count(t.predicted_n),
    cached: cacheN,
  };
}

const NUMBER_TEXTS = [
  '0',
  '7',
  '12',
  '4096',
  '123456789012345',
  '1234567890123456789',
  '-0',
  '-3',
  '2.5',
  '3.0',
  '1e2',
  '1E+2',
  '25e-1',
  '0.49999',
  '1e400',
  '-1e400',
];
const SCALARS = [
  'null',
  'true',
  'false',
  '"9"',
  '""',
  '"a \\"quoted\\" \\\\ \\u00e9 \\n text"',
  '"ünïcødé"',
  '[]',
  '[1, "two", {"three": [3]}]',
  '{}',
  '{"cached_tokens": 5}',
];
const KNOWN = [
  'prompt_tokens',
  'completion_tokens',
  'input_tokens',
  'output_tokens',
  'cache_read_input_tokens',
  'cache_creation_input_tokens',
  'prompt_n',
  'cache_n',
  'predicted_n',
  'total_tokens',
];
const DETAILS = ['prompt_tokens_details', 'input_tokens_details', 'completion_tokens_details'];

/**
 * JSON text of an object with random known, detail and unknown keys (duplicates allowed), random values and
 * spacing.
 */
function randomObjectText(next: () => number): string {
  const pick = <T>(list: readonly T[]): T => list[Math.floor(next() * list.length)]!;
  const space = () => pick(['', '', ' ', '\n  ', '\t']);
  const value = (): string => (next() < 0.7 ? pick(NUMBER_TEXTS) : pick(SCALARS));
  const entries: string[] = [];
  const n = Math.floor(next() * 8);
  for (let i = 0; i < n; i++) {
    const r = next();
    let key: string;
    let text: string;
    if (r < 0.6) {
      key = pick(KNOWN);
      text = value();
    } else if (r < 0.85) {
      key = pick(DETAILS);
      const inner: string[] = [];
      const m = Math.floor(next() * 3);
      for (let j = 0; j < m; j++)
        inner.push(
          `${space()}"${pick(['cached_tokens', 'audio_tokens', 'reasoning_tokens'])}"${space()}:${space()}${value()}`,
        );
      text = next() < 0.85 ? `{${inner.join(',')}${space()}}` : value();
    } else {
      key = pick(['id', 'model', 'cached_tokens', 'server_tool_use', 'x']);
      text = value();
    }
    entries.push(`${space()}"${key}"${space()}:${space()}${text}`);
  }
  return `{${entries.join(',')}${space()}}`;
}

describe('token counts read from bytes', () => {
  it('gives the counts JSON.parse gives, for 5,000 random usage and timings objects', () => {
    for (let seed = 1; seed <= 5_000; seed++) {
      const next = prng(seed);
      const object = randomObjectText(next);
      const body =
        `{"id":"chatcmpl-1","choices":[{"message":{"content":"usage: ` +
        `timings"}}],"usage":${object},"timings":${object}}`;
      const parsed = JSON.parse(object) as Json;
      const buf = Buffer.from(body);
      expect({ seed, counts: readUsageCounts(buf) }).toEqual({ seed, counts: referenceUsage(parsed) });
      expect({ seed, counts: readTimingsCounts(buf) }).toEqual({ seed, counts: referenceTimings(parsed) });
      const at = body.indexOf('{', body.indexOf('"usage"'));
      expect({ seed, counts: usageCountsAt(buf, at) }).toEqual({ seed, counts: referenceUsage(parsed) });
      expect({ seed, counts: timingsCountsAt(buf, at) }).toEqual({ seed, counts: referenceTimings(parsed) });
    }
  });

  it('reads the usual shapes exactly', () => {
    expect(
      readUsageCounts(Buffer.from('{"usage":{"prompt_tokens":9,"completion_tokens":3,"total_tokens":12}}')),
    ).toEqual({ input: 9, output: 3, cached: null });
    expect(
      readUsageCounts(
        Buffer.from(
          '{"usage": {"prompt_tokens": 20, "completion_tokens": 2, "prompt_tokens_details": {"cached_tokens": 16}}}',
        ),
      ),
    ).toEqual({ input: 20, output: 2, cached: 16 });
    expect(
      readUsageCounts(
        Buffer.from(
          '{"type":"message","usage":{"input_tokens":5,"cache_read_input_tokens":100,' +
            '"cache_creation_input_tokens":7,"output_tokens":9}}',
        ),
      ),
    ).toEqual({ input: 112, output: 9, cached: 100 });
    expect(
      readUsageCounts(
        Buffer.from('{"usage":{"input_tokens":30,"input_tokens_details":{"cached_tokens":10},"output_tokens":4}}'),
      ),
    ).toEqual({ input: 30, output: 4, cached: 10 });
    expect(
      readTimingsCounts(
        Buffer.from(
          '{"timings":{"prompt_n":3,"prompt_ms":1.5,"cache_n":40,"predicted_n":8,"predicted_per_second":55.2}}',
        ),
      ),
    ).toEqual({ input: 43, output: 8, cached: 40, gpuMs: 1.5 });
    expect(
      readTimingsCounts(
        Buffer.from('{"timings":{"prompt_n":3,"prompt_ms":12.25,"predicted_n":8,"predicted_ms":140.5}}'),
      ),
    ).toEqual({ input: 3, output: 8, cached: null, gpuMs: 152.75 });
  });

  it('takes the last value of a key that appears twice, as JSON.parse does', () => {
    expect(
      readUsageCounts(
        Buffer.from(
          '{"usage":{"prompt_tokens":1,"completion_tokens":2,"prompt_tokens":5,' +
            '"prompt_tokens_details":{"cached_tokens":3},"prompt_tokens_details":null}}',
        ),
      ),
    ).toEqual({ input: 5, output: 2, cached: null });
  });

  it('reads escaped keys, deep nesting and big numbers as JSON.parse does', () => {
    expect(readUsageCounts(Buffer.from('{"usage":{"prompt\\u005ftokens":8,"completion_tokens":1}}'))).toEqual({
      input: 8,
      output: 1,
      cached: null,
    });
    const deep = `${'['.repeat(60)}1${']'.repeat(60)}`;
    expect(readUsageCounts(Buffer.from(`{"usage":{"extra":${deep},"prompt_tokens":4,"completion_tokens":2}}`))).toEqual(
      { input: 4, output: 2, cached: null },
    );
    expect(
      readUsageCounts(Buffer.from('{"usage":{"prompt_tokens":12345678901234567890,"completion_tokens":2.5}}')),
    ).toEqual({ input: 12345678901234567000, output: 3, cached: null });
  });

  it('finds no counts in an object JSON.parse refuses, and takes an earlier one when the last is cut off', () => {
    for (const bad of [
      '{"prompt_tokens":01}',
      '{"prompt_tokens":1,}',
      '{"prompt_tokens":1 "completion_tokens":2}',
      '{"prompt_tokens":nul}',
      '{"a":"raw\ttab","prompt_tokens":1}',
      '{"a":"\\x","prompt_tokens":1}',
    ]) {
      expect({ bad, counts: readUsageCounts(Buffer.from(`{"usage":${bad}}`)) }).toEqual({ bad, counts: undefined });
    }
    expect(
      readUsageCounts(
        Buffer.from('{"usage":{"prompt_tokens":3,"completion_tokens":1}},{"usage":{"prompt_tokens":9,"compl'),
      ),
    ).toEqual({ input: 3, output: 1, cached: null });
    expect(readUsageCounts(Buffer.from('{"usage":{"prompt_tokens":9,"completion_tokens":1'))).toBeUndefined();
  });

  it('skips the key where it stands inside a string or holds no object', () => {
    expect(
      readUsageCounts(
        Buffer.from(
          '{"usage":{"prompt_tokens":2,"completion_tokens":1},"text":"say \\"usage\\":{\\"prompt_tokens\\":99}"}',
        ),
      ),
    ).toEqual({ input: 2, output: 1, cached: null });
    expect(readUsageCounts(Buffer.from('{"usage":null}'))).toBeUndefined();
  });
});
