/**
 * `GET /api/usage/export` on both stores: CSV a spreadsheet opens as written (BOM, header row,
 * CRLF, RFC 4180 quoting, no formula injection), JSON that parses, each grouping's sums,
 * inclusive `from` / exclusive `to`, the log's filters, captured bodies never included, and bad
 * parameters answered in the admin error format.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { UsageRecord } from '../../src/store/records.js';
import { DEMO_CONFIG, startSimulator, type Simulator } from '../fakes/llama-swap/index.js';
import type { TestGateway } from '../helpers/gateway.js';
import { json, rawRequest, type RawResponse } from '../helpers/http.js';
import { requirePostgres, TEST_DATABASE_URL, TestSchemas } from '../helpers/postgres.js';
import { usageRecord } from '../store/usage-contract.js';
import { adminApi, startUsageGateway } from './usage-helpers.js';

const DAY = 86_400_000;
const HOUR = 3_600_000;
const D1 = Date.UTC(2030, 0, 1);
/** The gateway's clock: an export without `to` ends here. */
const NOW = D1 + 3 * DAY;
const AWKWARD_NAME = 'Zoë, "the" tester\nsecond line';
const FORMULA_MODEL = '=HYPERLINK("http://evil.example","x")';

const CALL_HEADER =
  'id,at,requestId,keyId,keyName,model,method,endpoint,status,streamed,inputTokens,outputTokens,cachedTokens,' +
  'tokensSource,ttfbMs,ttftMs,durationMs,bytesIn,bytesOut,clientAborted,errorClass,queueMs,gpuMs';
const SUM_HEADER = 'requests,errors,aborted,inputTokens,outputTokens,cachedTokens,durationMsAvg,firstAt,lastAt';

/** Five calls over three UTC days; r5 has captured bodies. */
function records(): UsageRecord[] {
  const alice = { keyId: 'key_alice', keyName: 'alice' };
  return [
    usageRecord({ at: D1 + HOUR, ...alice, model: 'qwen', durationMs: 40 }),
    usageRecord({
      at: D1 + DAY - 60_000,
      keyId: 'key_zoe',
      keyName: AWKWARD_NAME,
      model: FORMULA_MODEL,
      status: 429,
      errorClass: 'rate_limited',
      inputTokens: null,
      outputTokens: null,
      cachedTokens: null,
      tokensSource: null,
      ttfbMs: null,
      ttftMs: null,
      queueMs: null,
      durationMs: 3,
    }),
    usageRecord({ at: D1 + DAY + HOUR, ...alice, model: 'llama', status: 502, errorClass: 'upstream_status' }),
    usageRecord({
      at: D1 + DAY + 2 * HOUR,
      keyId: null,
      keyName: null,
      model: null,
      status: 499,
      clientAborted: true,
      errorClass: 'client_abort',
      streamed: true,
      durationMs: 100,
    }),
    usageRecord({
      at: D1 + 2 * DAY,
      ...alice,
      keyName: 'alice (renamed)',
      model: 'qwen',
      durationMs: 61,
      requestBody: 'SECRET-REQUEST-BODY',
      responseBody: 'SECRET-RESPONSE-BODY',
    }),
  ];
}

const schemas = new TestSchemas();
let sim: Simulator;
beforeAll(async () => {
  sim = await startSimulator({ config: DEMO_CONFIG });
});
afterAll(async () => {
  await sim?.close();
  await schemas.dropAll();
});

describe.each(['sqlite', 'postgres'] as const)('usage export (%s)', (kind) => {
  let gateway: TestGateway;
  let calls: UsageRecord[];

  beforeAll(async () => {
    if (kind === 'postgres') await requirePostgres();
    gateway = await startUsageGateway(
      sim.url,
      kind === 'postgres' ? { databaseUrl: TEST_DATABASE_URL, databaseSchema: schemas.fresh('export') } : {},
      { now: () => NOW },
    );
    calls = records();
    await gateway.store!.usage.append(calls);
  });
  afterAll(async () => {
    await gateway?.close();
  });

  async function exported(query: string): Promise<RawResponse> {
    const res = await adminApi(gateway, 'GET', `/api/usage/export?${query}`);
    expect(res.status, res.body.toString()).toBe(200);
    return res;
  }
  const jsonRows = async (query: string) =>
    json((await exported(`format=json&${query}`)).body) as Array<Record<string, unknown>>;

  it('downloads calls as CSV: BOM, header row, CRLF, quoted awkward text, formulas defused, ISO times', async () => {
    const res = await exported('format=csv&group=call&key=key_zoe&from=2030-01-01T00:00:00Z&to=2030-01-04T00:00:00Z');
    expect(res.headers['content-type']).toBe('text/csv; charset=utf-8; header=present');
    expect(res.headers['content-disposition']).toBe(
      'attachment; filename="gatehouse-usage-call-20300101T000000Z-20300104T000000Z.csv"',
    );
    expect(res.headers['cache-control']).toBe('no-store');
    expect([...res.body.subarray(0, 3)]).toEqual([0xef, 0xbb, 0xbf]);
    const zoe = calls[1]!;
    expect(res.body.subarray(3).toString('utf8')).toBe(
      `${CALL_HEADER}\r\n` +
        `${zoe.id},2030-01-01T23:59:00.000Z,${zoe.requestId},key_zoe,"Zoë, ""the"" tester\nsecond line",` +
        `"'=HYPERLINK(""http://evil.example"",""x"")",POST,/v1/chat/completions,429,false,,,,,,,3,120,2000,false,` +
        'rate_limited,,30.25\r\n',
    );
  });

  it('keeps non-ASCII text as UTF-8 and writes each call once, oldest first, without captured bodies', async () => {
    const text = (await exported('group=call')).body.toString('utf8');
    expect(text).not.toContain('SECRET');
    const lines = text.slice(1).split('\r\n');
    expect(lines[0]).toBe(CALL_HEADER);
    // Five calls (one of them spans two physical lines inside its quotes) and the final CRLF.
    expect(lines.filter((l) => /^[0-9a-z]{9}-contract-/.test(l)).map((l) => l.split(',')[0])).toEqual(
      calls.map((c) => c.id),
    );
    expect(lines.at(-1)).toBe('');
    expect(text).toContain('Zoë');
  });

  it('downloads calls as one valid JSON array with the CSV columns as members', async () => {
    const res = await exported('format=json');
    expect(res.headers['content-type']).toBe('application/json; charset=utf-8');
    expect(res.headers['content-disposition']).toBe(
      'attachment; filename="gatehouse-usage-call-until-20300104T000000Z.json"',
    );
    const rows = json(res.body) as Array<Record<string, unknown>>;
    expect(rows.map((r) => r.id)).toEqual(calls.map((c) => c.id));
    for (const row of rows) expect(Object.keys(row).join(',')).toBe(CALL_HEADER);
    const { requestBody: _q, responseBody: _s, ...last } = calls[4]!;
    expect(rows[4]).toEqual({ ...last, at: '2030-01-03T00:00:00.000Z' });
    expect(rows[1]).toMatchObject({ keyName: AWKWARD_NAME, model: FORMULA_MODEL, inputTokens: null, streamed: false });
  });

  it('sums per key, most calls first (calls without a key last among equals), with the newest key name', async () => {
    expect(await jsonRows('group=key')).toEqual([
      {
        keyId: 'key_alice',
        keyName: 'alice (renamed)',
        requests: 3,
        errors: 1,
        aborted: 0,
        inputTokens: 30,
        outputTokens: 15,
        cachedTokens: 6,
        durationMsAvg: 47,
        firstAt: '2030-01-01T01:00:00.000Z',
        lastAt: '2030-01-03T00:00:00.000Z',
      },
      expect.objectContaining({ keyId: 'key_zoe', keyName: AWKWARD_NAME, requests: 1, errors: 1, inputTokens: 0 }),
      expect.objectContaining({ keyId: null, keyName: null, requests: 1, errors: 0, aborted: 1 }),
    ]);
  });

  it('sums per model, and per UTC day as a CSV with its header', async () => {
    const models = await jsonRows('group=model');
    expect(models.map((m) => [m.model, m.requests, m.errors])).toEqual([
      ['qwen', 2, 0],
      [FORMULA_MODEL, 1, 1],
      ['llama', 1, 1],
      [null, 1, 0],
    ]);
    const days = (await exported('group=day&format=csv')).body.toString('utf8');
    expect(days).toBe(
      `\uFEFFday,${SUM_HEADER}\r\n` +
        '2030-01-01,2,1,0,10,5,2,21.5,2030-01-01T01:00:00.000Z,2030-01-01T23:59:00.000Z\r\n' +
        '2030-01-02,2,1,1,20,10,4,70,2030-01-02T01:00:00.000Z,2030-01-02T02:00:00.000Z\r\n' +
        '2030-01-03,1,0,0,10,5,2,61,2030-01-03T00:00:00.000Z,2030-01-03T00:00:00.000Z\r\n',
    );
  });

  it('includes from and excludes to, for calls and for sums alike', async () => {
    const range = 'from=2030-01-02T01:00:00Z&to=2030-01-03T00:00:00Z';
    expect((await jsonRows(`group=call&${range}`)).map((r) => r.id)).toEqual([calls[2]!.id, calls[3]!.id]);
    expect((await jsonRows(`group=day&${range}`)).map((r) => [r.day, r.requests])).toEqual([['2030-01-02', 2]]);
    expect((await jsonRows('group=call&from=2030-01-03T00:00:00.001Z')).map((r) => r.id)).toEqual([]);
  });

  it("applies the request log's key, model and status filters, to calls and sums", async () => {
    expect((await jsonRows('key=key_alice')).map((r) => r.id)).toEqual([calls[0]!.id, calls[2]!.id, calls[4]!.id]);
    expect((await jsonRows('status=5xx')).map((r) => r.id)).toEqual([calls[2]!.id]);
    expect((await jsonRows('group=day&model=qwen')).map((r) => [r.day, r.requests])).toEqual([
      ['2030-01-01', 1],
      ['2030-01-03', 1],
    ]);
    expect(await jsonRows('group=key&status=4xx')).toEqual([
      expect.objectContaining({ keyId: 'key_zoe', requests: 1 }),
      expect.objectContaining({ keyId: null, requests: 1 }),
    ]);
  });

  it('writes an empty export as a header row (CSV) or an empty array (JSON)', async () => {
    const empty = 'model=nobody';
    expect((await exported(`${empty}&group=model`)).body.toString('utf8')).toBe(`\uFEFFmodel,${SUM_HEADER}\r\n`);
    expect(json((await exported(`${empty}&format=json`)).body)).toEqual([]);
  });

  it('refuses bad parameters with 422 validation_failed, every problem listed, before sending anything', async () => {
    const res = await adminApi(
      gateway,
      'GET',
      '/api/usage/export?format=xlsx&group=hour&from=yesterday&status=abc&limit=5',
    );
    expect(res.status).toBe(422);
    expect(res.headers['content-disposition']).toBeUndefined();
    expect(json(res.body)).toEqual({
      error: {
        code: 'validation_failed',
        message: expect.stringMatching(/^Invalid query: /),
        details: [
          { path: '/limit', message: 'unknown parameter; expected one of from, to, format, group, key, model, status' },
          { path: '/format', message: 'must be one of csv, json' },
          { path: '/group', message: 'must be one of call, key, model, day' },
          { path: '/status', message: 'must be a status code (429) or a class (2xx, 4xx, 5xx)' },
          { path: '/from', message: 'must be an ISO 8601 date-time, e.g. 2030-01-31T12:00:00Z' },
        ],
      },
    });
    const backwards = await adminApi(
      gateway,
      'GET',
      '/api/usage/export?from=2030-01-02T00:00:00Z&to=2030-01-02T00:00:00Z&format=json&format=csv',
    );
    expect(backwards.status).toBe(422);
    expect((json(backwards.body) as { error: { details: unknown } }).error.details).toEqual([
      { path: '/format', message: 'must be one of csv, json' },
      { path: '/to', message: 'must be later than from' },
    ]);
  });

  it('answers a store failure before the first byte as a 500 in the admin format, and cuts the file after it', async () => {
    const usage = gateway.store!.usage;
    const list = usage.list;
    const url = `${gateway.url}/api/usage/export?format=json`;
    const headers = { authorization: 'Bearer usage-tests-admin-token' };
    try {
      usage.list = () => Promise.reject(new Error('database went away'));
      const failed = await adminApi(gateway, 'GET', '/api/usage/export?format=json');
      expect(failed.status).toBe(500);
      expect(json(failed.body)).toMatchObject({ error: { code: 'internal_error' } });
      expect(failed.body.toString()).not.toContain('database went away');

      // A full first page (well over one chunk of the response), then the store fails.
      const row = (await list({ limit: 1 }))[0]!;
      const page = Array.from({ length: 1000 }, (_, i) => ({ ...row, id: `${row.id}-${i}`, at: row.at + i }));
      let pages = 0;
      usage.list = () => (pages++ === 0 ? Promise.resolve(page) : Promise.reject(new Error('database went away')));
      const res = await fetch(url, { headers });
      expect(res.status).toBe(200);
      await expect(res.text()).rejects.toThrow();
      expect(pages).toBe(2);
    } finally {
      usage.list = list;
    }
  });

  it('answers HEAD with the headers alone, without reading the log', async () => {
    const usage = gateway.store!.usage;
    const list = usage.list;
    let reads = 0;
    usage.list = (query) => {
      reads++;
      return list(query);
    };
    try {
      const res = await adminApi(gateway, 'HEAD', '/api/usage/export?group=day');
      expect(res.status).toBe(200);
      expect(res.headers['content-disposition']).toBe(
        'attachment; filename="gatehouse-usage-day-until-20300104T000000Z.csv"',
      );
      expect(reads).toBe(0);
    } finally {
      usage.list = list;
    }
  });

  it('needs an admin session or token', async () => {
    const res = await rawRequest(`${gateway.url}/api/usage/export?format=csv`);
    expect(res.status).toBe(401);
    expect(json(res.body)).toMatchObject({ error: { code: 'admin_unauthorized' } });
  });
});
