/**
 * What a batch of records becomes before any SQL runs: the COPY text PostgreSQL receives, the
 * statement parameters of a request row, a record read back from a row, and the rollup sums.
 * Expected values are written out literally, not derived from the column table under test.
 */
import { describe, expect, it } from 'vitest';
import type { UsageRecord } from '../../src/store/records.js';
import {
  copyRows,
  HOUR_MS,
  MINUTE_MS,
  recordFromRow,
  requestValues,
  ROLLUP_COLUMNS,
  rollupRows,
} from '../../src/store/usage-rows.js';

const FULL: UsageRecord = {
  id: '00000000a-test-000001',
  at: 1_000,
  requestId: 'req-1',
  keyId: 'key_a',
  keyName: 'alice',
  model: 'qwen',
  method: 'POST',
  endpoint: '/v1/chat/completions',
  status: 200,
  streamed: true,
  inputTokens: 10,
  outputTokens: 5,
  cachedTokens: 2,
  tokensSource: 'usage',
  ttfbMs: 1.5,
  ttftMs: 2.25,
  durationMs: 40,
  bytesIn: 120,
  bytesOut: 2000,
  clientAborted: false,
  errorClass: null,
  queueMs: 12.5,
  gpuMs: 33.5,
  requestBody: '{"a":"tab\there"}',
  responseBody: 'data: x\n\nback\\slash\r',
};

const BARE: UsageRecord = {
  ...FULL,
  id: '00000000b-test-000002',
  at: 61_000,
  keyId: null,
  keyName: null,
  model: 'bad\u0000model',
  streamed: false,
  status: 499,
  inputTokens: null,
  outputTokens: null,
  cachedTokens: null,
  tokensSource: null,
  ttfbMs: null,
  ttftMs: null,
  durationMs: 700_000,
  clientAborted: true,
  errorClass: 'client_abort',
  queueMs: null,
  gpuMs: null,
  requestBody: null,
  responseBody: null,
};

describe('usage request rows', () => {
  it('lays records out as COPY text: tab-separated, \\N for null, specials escaped, NUL as U+FFFD', () => {
    expect(copyRows([FULL, BARE])).toBe(
      [
        '00000000a-test-000001\t1000\treq-1\tkey_a\talice\tqwen\tPOST\t/v1/chat/completions\t200\t1\t10\t5\t2\t' +
          'usage\t1.5\t2.25\t40\t120\t2000\t0\t\\N\t12.5\t33.5\t{"a":"tab\\there"}\tdata: x\\n\\nback\\\\slash\\r',
        '00000000b-test-000002\t61000\treq-1\t\\N\t\\N\tbad\uFFFDmodel\tPOST\t/v1/chat/completions\t499\t0\t' +
          '\\N\t\\N\t\\N\t\\N\t\\N\t\\N\t700000\t120\t2000\t1\tclient_abort\t\\N\t\\N\t\\N\t\\N',
        '',
      ].join('\n'),
    );
  });

  it('gives the parameters of a row in column order, flags as 0/1', () => {
    expect(requestValues(FULL)).toEqual([
      '00000000a-test-000001',
      1000,
      'req-1',
      'key_a',
      'alice',
      'qwen',
      'POST',
      '/v1/chat/completions',
      200,
      1,
      10,
      5,
      2,
      'usage',
      1.5,
      2.25,
      40,
      120,
      2000,
      0,
      null,
      12.5,
      33.5,
      '{"a":"tab\there"}',
      'data: x\n\nback\\slash\r',
    ]);
  });

  it('reads a record back from a row as the drivers return it (int8 as text from pg, flags as integers)', () => {
    const row = {
      id: '00000000b-test-000002',
      at: '61000',
      request_id: 'req-1',
      key_id: null,
      key_name: null,
      model: 'm',
      method: 'POST',
      endpoint: '/v1/chat/completions',
      status: 499,
      streamed: 0,
      input_tokens: null,
      output_tokens: '7',
      cached_tokens: null,
      tokens_source: 'estimate',
      ttfb_ms: null,
      ttft_ms: 3.5,
      duration_ms: 12.5,
      bytes_in: '120',
      bytes_out: '0',
      client_aborted: 1,
      error_class: 'client_abort',
      queue_ms: 250,
      gpu_ms: 1250.5,
      request_body: null,
      response_body: 'x',
    };
    expect(recordFromRow(row)).toEqual({
      id: '00000000b-test-000002',
      at: 61000,
      requestId: 'req-1',
      keyId: null,
      keyName: null,
      model: 'm',
      method: 'POST',
      endpoint: '/v1/chat/completions',
      status: 499,
      streamed: false,
      inputTokens: null,
      outputTokens: 7,
      cachedTokens: null,
      tokensSource: 'estimate',
      ttfbMs: null,
      ttftMs: 3.5,
      durationMs: 12.5,
      bytesIn: 120,
      bytesOut: 0,
      clientAborted: true,
      errorClass: 'client_abort',
      queueMs: 250,
      gpuMs: 1250.5,
      requestBody: null,
      responseBody: 'x',
    });
  });
});

describe('usage rollup rows', () => {
  it('sums a batch per (bucket, key, model), sorted by that key, with the newest key name and a latency histogram', () => {
    const records: UsageRecord[] = [
      { ...FULL, at: 1_000, keyName: 'old name', durationMs: 4 },
      { ...FULL, at: 2_000, keyName: 'new name', durationMs: 250, status: 502, errorClass: 'upstream_status' },
      { ...BARE, at: 3_000, model: null },
      { ...FULL, at: MINUTE_MS + 1, durationMs: 1 },
    ];
    const columns = (row: unknown[]) =>
      Object.fromEntries(
        ROLLUP_COLUMNS.map((name, i) => [name, row[i]]).filter(([name, v]) => v !== 0 || name === 'bucket'),
      );
    expect(rollupRows(records, MINUTE_MS).map(columns)).toEqual([
      {
        bucket: 0,
        key_id: '',
        key_name: null,
        model: '',
        requests: 1,
        aborted: 1,
        duration_ms_sum: 700_000,
        lat_31: 1,
      },
      {
        bucket: 0,
        key_id: 'key_a',
        key_name: 'new name',
        model: 'qwen',
        requests: 2,
        errors: 1,
        input_tokens: 20,
        output_tokens: 10,
        cached_tokens: 4,
        duration_ms_sum: 254,
        lat_03: 1,
        lat_14: 1,
      },
      {
        bucket: MINUTE_MS,
        key_id: 'key_a',
        key_name: 'alice',
        model: 'qwen',
        requests: 1,
        input_tokens: 10,
        output_tokens: 5,
        cached_tokens: 2,
        duration_ms_sum: 1,
        lat_00: 1,
      },
    ]);
    expect(
      rollupRows(records, HOUR_MS)
        .map(columns)
        .map((row) => [row.key_id, row.requests]),
    ).toEqual([
      ['', 1],
      ['key_a', 3],
    ]);
  });
});
