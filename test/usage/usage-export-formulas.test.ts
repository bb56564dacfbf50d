/**
 * CSV injection in `GET /api/usage/export`: text a client chose (model, key name, request id...)
 * holding a formula, a bare CR or LF, or a formula after a line break, read back with a CSV
 * parser that splits rows the way a spreadsheet does. Every row stays one row, and no cell (nor
 * any line inside a quoted cell) starts with a character a spreadsheet would run as a formula.
 */
import { Readable } from 'node:stream';
import { buffer } from 'node:stream/consumers';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { UsageRecord } from '../../src/store/records.js';
import { csvStream } from '../../src/usage/export-format.js';
import { exportColumns } from '../../src/usage/export-rows.js';
import { DEMO_CONFIG, startSimulator, type Simulator } from '../fakes/llama-swap/index.js';
import { parseCsv } from '../helpers/csv.js';
import type { TestGateway } from '../helpers/gateway.js';
import { usageRecord } from '../store/usage-contract.js';
import { adminApi, startUsageGateway } from './usage-helpers.js';

const D1 = Date.UTC(2030, 0, 1);
const HOUR = 3_600_000;

/** Texts a spreadsheet would start a formula from, at the start or after a line break. */
const HOSTILE = [
  "qwen\n=cmd|' /C calc'!A0",
  'qwen\r=1+1',
  'qwen\r\n-2+3',
  '=HYPERLINK("http://evil.example","x")',
  '+1',
  '-2+3',
  '@SUM(A1)',
  '\t=1',
  '\r=1',
  '\uFF1D1+1',
  'ok\n@x\n+y',
  ' =9',
  '\u0000=12',
  '\u3000=15',
];

/** What a spreadsheet runs: `=`, `+`, `-`, `@` (and their full-width forms), tab, CR, also behind blanks. */
// eslint-disable-next-line no-control-regex -- NUL and other controls are blanks some spreadsheets skip
const FORMULA_START = /^[\u0000-\u0020\u00A0\u3000]*[=+\-@\t\r\uFF1D\uFF0B\uFF0D\uFF20]/;

function records(): UsageRecord[] {
  return HOSTILE.map((hostile, i) =>
    usageRecord({
      at: D1 + i * HOUR,
      requestId: `req-${i}`,
      keyId: `key_${String(i).padStart(2, '0')}`,
      keyName: hostile,
      model: hostile,
      endpoint: `/v1/chat/completions`,
      errorClass: i === 0 ? '=1+1' : null,
      status: i === 0 ? 502 : 200,
    }),
  );
}

/** The cells a spreadsheet would read, each checked whole and line by line. */
function formulaCells(rows: string[][]): string[] {
  return rows
    .flat()
    .filter((cell) => FORMULA_START.test(cell) || cell.split(/\r\n|\r|\n/).some((line) => FORMULA_START.test(line)));
}

let sim: Simulator;
let gateway: TestGateway;
beforeAll(async () => {
  sim = await startSimulator({ config: DEMO_CONFIG });
  gateway = await startUsageGateway(sim.url, {}, { now: () => D1 + 30 * HOUR });
  await gateway.store!.usage.append(records());
});
afterAll(async () => {
  await gateway?.close();
  await sim?.close();
});

async function exportCsv(group: string): Promise<string[][]> {
  const res = await adminApi(gateway, 'GET', `/api/usage/export?format=csv&group=${group}`);
  expect(res.status, res.body.toString()).toBe(200);
  return parseCsv(res.body.toString('utf8'));
}

describe('usage export against CSV injection', () => {
  it.each([
    ['call', HOSTILE.length],
    ['key', HOSTILE.length],
    ['model', HOSTILE.length],
    ['day', 1],
  ])('keeps each %s row one row and starts no cell or line in a cell with a formula', async (group, count) => {
    const rows = await exportCsv(group);
    const columns = exportColumns(group as 'call');
    expect(rows[0]).toEqual(columns);
    expect(rows).toHaveLength(1 + count);
    for (const row of rows) expect(row).toHaveLength(columns.length);
    expect(formulaCells(rows)).toEqual([]);
  });

  it('keeps the text readable: a single quote before each formula start, numbers left as they are', async () => {
    const rows = await exportCsv('call');
    const model = rows[0]!.indexOf('model');
    const tokens = rows[0]!.indexOf('inputTokens');
    expect(rows.slice(1).map((row) => row[model])).toEqual([
      "qwen\n'=cmd|' /C calc'!A0",
      "qwen\r'=1+1",
      "qwen\r\n'-2+3",
      `'=HYPERLINK("http://evil.example","x")`,
      "'+1",
      "'-2+3",
      "'@SUM(A1)",
      "'\t=1",
      "'\r'=1",
      "'\uFF1D1+1",
      "ok\n'@x\n'+y",
      "' =9",
      "'\u0000=12",
      "'\u3000=15",
    ]);
    expect(rows[1]![rows[0]!.indexOf('errorClass')]).toBe("'=1+1");
    expect(rows.slice(1).map((row) => row[tokens])).toEqual(HOSTILE.map(() => '10'));
  });

  it('leaves a negative number numeric while defusing the same text', async () => {
    const out = (await buffer(csvStream(['n', 't'], Readable.from([{ n: -5, t: '-5' }])))).toString('utf8');
    expect(out).toBe("\uFEFFn,t\r\n-5,'-5\r\n");
  });
});
