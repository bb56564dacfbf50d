/**
 * The rows PostgreSQL's COPY receives: exactly what the column table (REQUEST_COLUMNS, which the
 * SQL is compiled from) says, column for column, in COPY's text format.
 */
import { describe, expect, it } from 'vitest';
import { copyRows, REQUEST_COLUMNS } from '../../src/store/usage-rows.js';
import { usageRecord } from './usage-contract.js';

const RECORDS = [
  usageRecord(),
  usageRecord({ keyId: null, keyName: null, model: null, inputTokens: null, outputTokens: null, cachedTokens: null, tokensSource: null, ttfbMs: null, ttftMs: null }),
  usageRecord({ streamed: true, clientAborted: true, status: 499, errorClass: 'client_abort', requestBody: '{"a":1}', responseBody: 'data: x\n\n' }),
];

describe('usage request rows', () => {
  it('lays the same values out as COPY text: tab-separated, \\N for null, specials escaped', () => {
    const lines = copyRows(RECORDS).split('\n');
    expect(lines.at(-1)).toBe('');
    RECORDS.forEach((record, i) => {
      const expected = REQUEST_COLUMNS.map(([, value]) => {
        const v = value(record);
        return v === null ? '\\N' : typeof v === 'number' ? String(v) : v.replaceAll('\\', '\\\\').replaceAll('\t', '\\t').replaceAll('\n', '\\n').replaceAll('\r', '\\r');
      });
      expect(lines[i]!.split('\t')).toEqual(expected);
    });
  });
});
