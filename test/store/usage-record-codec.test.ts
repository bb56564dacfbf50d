/**
 * Usage records wait for their batch as bytes (record-codec.ts): whatever goes in must come
 * back field for field, nulls, empty strings, non-ASCII text and large captured bodies included.
 */
import { describe, expect, it } from 'vitest';
import { RecordSegment } from '../../src/store/usage-record-codec.js';
import { usageRecord } from './usage-contract.js';

describe('usage record segment', () => {
  it('gives back every record field for field, in the order appended', () => {
    const records = [
      usageRecord(),
      usageRecord({
        keyId: null,
        keyName: null,
        model: null,
        inputTokens: null,
        outputTokens: null,
        cachedTokens: null,
        tokensSource: null,
        ttfbMs: null,
        ttftMs: null,
        errorClass: 'upstream_timeout',
        status: 499,
        streamed: true,
        clientAborted: true,
      }),
      usageRecord({
        keyName: 'équipe 🚀 "quotes" \\ back\tslash',
        model: '',
        endpoint: '/v1/messages',
        method: 'DELETE',
        inputTokens: 0,
        outputTokens: 2 ** 40,
        cachedTokens: 0,
        tokensSource: 'estimate',
        ttfbMs: 0.001,
        ttftMs: 123_456.789,
        durationMs: 0,
        bytesIn: 51 * 1024 * 1024,
        bytesOut: Number.MAX_SAFE_INTEGER,
        requestBody: '',
        responseBody: `{"text":"${'ü€𝄞'.repeat(20_000)}"}`,
      }),
    ];
    const segment = new RecordSegment();
    for (const r of records) segment.append(r);
    expect(segment.count).toBe(3);
    expect(segment.decode()).toEqual(records);
  });

  it('keeps strings that turn non-ASCII after an ASCII start, and long ones, byte for byte', () => {
    const records = [
      usageRecord({ model: 'qwen-ñ', keyName: 'ascii then 🚀', endpoint: `/v1/${'a'.repeat(300)}`, requestId: 'x'.repeat(256) }),
      usageRecord({ model: `${'m'.repeat(255)}é`, keyName: '\u007f\u0080', endpoint: '/v1/chat/completions' }),
    ];
    const segment = new RecordSegment();
    for (const r of records) segment.append(r);
    expect(segment.decode()).toEqual(records);
  });

  it('writes a value repeated from the previous record once, and decodes every record whole', () => {
    // Runs of equal values broken by nulls and by changes, in every repeating field.
    const records = [
      usageRecord({ keyId: 'k1', keyName: 'alice', model: 'm1', tokensSource: 'usage', errorClass: null }),
      usageRecord({ keyId: 'k1', keyName: 'alice', model: 'm1', tokensSource: 'usage', errorClass: null }),
      usageRecord({ keyId: null, keyName: null, model: null, tokensSource: null, errorClass: 'upstream_timeout' }),
      usageRecord({ keyId: 'k1', keyName: 'alice', model: 'm1', tokensSource: 'usage', errorClass: 'upstream_timeout' }),
      usageRecord({ keyId: 'k2', keyName: 'bob', model: 'm1', method: 'GET', endpoint: '/v1/models', tokensSource: 'timings', errorClass: null }),
      usageRecord({ keyId: 'k1', keyName: 'bob', model: 'm2', method: 'GET', endpoint: '/v1/models', tokensSource: 'timings', errorClass: null }),
    ];
    const repeated = new RecordSegment();
    for (const r of records) repeated.append(r);
    expect(repeated.decode()).toEqual(records);

    // The same records with nothing shared (distinct ids of equal length) take more bytes.
    const alone = (r: (typeof records)[number]) => {
      const segment = new RecordSegment();
      segment.append(r);
      return segment.byteLength;
    };
    const separate = records.reduce((sum, r) => sum + alone(r), 0);
    expect(repeated.byteLength).toBeLessThan(separate);
  });

  it('grows past its first buffer without losing what it already holds', () => {
    const segment = new RecordSegment();
    const records = Array.from({ length: 2000 }, (_, i) => usageRecord({ at: 1_700_000_000_000 + i, requestId: `req-${i}-${'x'.repeat(i % 97)}` }));
    for (const r of records) segment.append(r);
    expect(segment.byteLength).toBeGreaterThan(32 * 1024);
    expect(segment.decode()).toEqual(records);
  });

  it('decodes an empty segment to no records', () => {
    expect(new RecordSegment().decode()).toEqual([]);
  });
});
