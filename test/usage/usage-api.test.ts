/**
 * The usage admin API: summary (totals, series, per key and per model, latency percentiles),
 * the request log (server-side filters, keyset pagination, one call with captured bodies),
 * retention, and the admin chain in front of all of it.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RequestView } from '../../src/http/admin/usage-handlers.js';
import type { UsageSummary } from '../../src/usage/summary.js';
import { percentile } from '../../src/usage/summary.js';
import { USAGE_LATENCY_BOUNDS_MS } from '../../src/store/records.js';
import { countPromptTokens, DEMO_CONFIG, startSimulator, type Simulator } from '../fakes/llama-swap/index.js';
import type { TestGateway } from '../helpers/gateway.js';
import { json, rawRequest, type RawResponse } from '../helpers/http.js';
import { adminApi, createKey, listRequests, recordFor, requestId, startUsageGateway } from './usage-helpers.js';

let sim: Simulator;
beforeAll(async () => {
  sim = await startSimulator({ config: DEMO_CONFIG, knobs: { tokens: 4 } });
});
afterAll(async () => {
  await sim?.close();
});

const PROMPT = [{ role: 'user', content: 'summarise me' }];
const PROMPT_TOKENS = countPromptTokens({ messages: PROMPT });

function chat(gateway: TestGateway, secret: string, model = 'qwen', id = requestId('api')): Promise<RawResponse> {
  return rawRequest(`${gateway.url}/v1/chat/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: `Bearer ${secret}`, 'x-request-id': id },
    body: JSON.stringify({ model, messages: PROMPT }),
  });
}

describe('usage API', () => {
  let gateway: TestGateway;
  let alice: { id: string; name: string; secret: string };
  let bob: { id: string; name: string; secret: string };
  const ids: string[] = [];

  beforeAll(async () => {
    gateway = await startUsageGateway(sim.url);
    alice = await createKey(gateway, { name: 'alice' });
    bob = await createKey(gateway, { name: 'bob' });
    for (const [key, model] of [
      [alice, 'qwen'],
      [alice, 'qwen'],
      [alice, 'llama-3.2-3b'],
      [bob, 'qwen'],
      [bob, 'no-such-model'],
    ] as const) {
      const id = requestId('api');
      ids.push(id);
      await chat(gateway, key.secret, model, id);
    }
    for (const id of ids) await recordFor(gateway, id);
  });
  afterAll(async () => {
    await gateway?.close();
  });

  async function summary(query: string): Promise<UsageSummary> {
    const res = await adminApi(gateway, 'GET', `/api/usage/summary?${query}`);
    expect(res.status, res.body.toString()).toBe(200);
    return json(res.body) as UsageSummary;
  }

  it('sums the last hour per key, with a zero-filled series of 60 one-minute points', async () => {
    const s = await summary('range=1h&groupBy=key');
    expect(s).toMatchObject({ range: '1h', groupBy: 'key', stepMs: 60_000 });
    expect(s.series).toHaveLength(60);
    expect(Date.parse(s.to) - Date.parse(s.from)).toBe(3_600_000);
    expect(s.totals).toMatchObject({
      requests: 5,
      errors: 1,
      aborted: 0,
      inputTokens: 4 * PROMPT_TOKENS,
      outputTokens: 4 * 4,
    });
    expect(s.series.reduce((n, p) => n + p.requests, 0)).toBe(5);
    expect(s.series.at(-1)!.requests).toBeGreaterThan(0); // the current minute is the last point
    const latency = s.totals.latencyMs!;
    expect(latency.p50).toBeGreaterThan(0);
    expect(latency.p50).toBeLessThanOrEqual(latency.p95);
    expect(latency.p95).toBeLessThanOrEqual(latency.p99);
    expect(s.groups.map((g) => [g.key, g.totals.requests, g.totals.errors])).toEqual([
      [{ id: alice.id, name: 'alice' }, 3, 0],
      [{ id: bob.id, name: 'bob' }, 2, 1],
    ]);
    expect(s.groups[0]!.series).toHaveLength(60);
    const quiet = s.series.find((p) => p.requests === 0)!;
    expect(quiet).toMatchObject({ requests: 0, errors: 0, inputTokens: 0, latencyMs: null });
  });

  it('groups by model over 24 hours (96 quarter hours) and 30 days (30 days)', async () => {
    const day = await summary('range=24h&groupBy=model');
    expect(day.series).toHaveLength(96);
    expect(day.groups.map((g) => [g.model, g.totals.requests])).toEqual([
      ['qwen', 3],
      ['llama-3.2-3b', 1],
      ['no-such-model', 1],
    ]);
    const month = await summary('range=30d');
    expect(month).toMatchObject({ groupBy: null, stepMs: 86_400_000, groups: [] });
    expect(month.series).toHaveLength(30);
    expect(month.totals.requests).toBe(5);
  });

  it('refuses unknown ranges, groupings and parameters with every problem listed', async () => {
    const res = await adminApi(gateway, 'GET', '/api/usage/summary?range=7d&groupBy=colour&x=1');
    expect(res.status).toBe(422);
    expect(json(res.body)).toMatchObject({
      error: {
        code: 'validation_failed',
        details: [
          { path: '/x', message: 'unknown parameter; expected one of range, groupBy' },
          { path: '/range', message: 'must be one of 1h, 24h, 30d' },
          { path: '/groupBy', message: 'must be key or model' },
        ],
      },
    });
  });

  it('lists calls newest first, filtered by key, model and status, a page at a time', async () => {
    const all = await listRequests(gateway);
    expect(all.requests.map((r) => r.requestId)).toEqual([...ids].reverse());
    expect(all.nextCursor).toBeNull();
    expect((await listRequests(gateway, `key=${alice.id}`)).requests.map((r) => r.requestId)).toEqual([
      ids[2],
      ids[1],
      ids[0],
    ]);
    expect((await listRequests(gateway, `key=${alice.id}&model=qwen`)).requests).toHaveLength(2);
    expect((await listRequests(gateway, 'status=4xx')).requests.map((r) => [r.requestId, r.status])).toEqual([
      [ids[4], 404],
    ]);
    expect((await listRequests(gateway, 'status=200')).requests).toHaveLength(4);

    const pages: string[][] = [];
    let cursor: string | null = '';
    while (cursor !== null) {
      const page: { requests: RequestView[]; nextCursor: string | null } = await listRequests(
        gateway,
        `limit=2${cursor ? `&cursor=${cursor}` : ''}`,
      );
      pages.push(page.requests.map((r) => r.requestId));
      cursor = page.nextCursor;
    }
    expect(pages).toEqual([[ids[4], ids[3]], [ids[2], ids[1]], [ids[0]]]);
  });

  it('filters by time with from (inclusive) and to (exclusive)', async () => {
    const all = (await listRequests(gateway)).requests;
    const middle = all[2]!;
    const older = (await listRequests(gateway, `to=${encodeURIComponent(middle.at)}`)).requests;
    expect(older.every((r) => Date.parse(r.at) < Date.parse(middle.at))).toBe(true);
    const newer = (await listRequests(gateway, `from=${encodeURIComponent(middle.at)}`)).requests;
    expect(newer.map((r) => r.id)).toContain(middle.id);
    expect(older.length + newer.length).toBe(all.length);
  });

  it('refuses a malformed filter, limit or cursor with 422', async () => {
    const res = await adminApi(gateway, 'GET', '/api/usage/requests?status=abc&limit=0&from=yesterday&cursor=zzz');
    expect(res.status).toBe(422);
    expect(
      (json(res.body) as { error: { details: Array<{ path: string }> } }).error.details.map((d) => d.path),
    ).toEqual(['/status', '/from', '/cursor', '/limit']);
  });

  it('shows one call by id, without bodies when capture is off, and 404 for an unknown id', async () => {
    const first = (await listRequests(gateway)).requests[0]!;
    const res = await adminApi(gateway, 'GET', `/api/usage/requests/${first.id}`);
    expect(res.status).toBe(200);
    expect(json(res.body)).toEqual({
      request: { ...first, requestBody: null, responseBody: null, bodiesWithheld: false },
    });
    const missing = await adminApi(gateway, 'GET', '/api/usage/requests/nope');
    expect(missing.status).toBe(404);
    expect(json(missing.body)).toMatchObject({ error: { code: 'not_found' } });
  });

  it('needs the admin session or token', async () => {
    for (const path of ['/api/usage/summary', '/api/usage/requests', '/api/usage/requests/x']) {
      const res = await rawRequest(`${gateway.url}${path}`, { headers: { authorization: `Bearer ${alice.secret}` } });
      expect(res.status, path).toBe(401);
      expect(json(res.body)).toMatchObject({ error: { code: 'admin_unauthorized' } });
    }
  });
});

describe('body capture', () => {
  let gateway: TestGateway;
  beforeAll(async () => {
    gateway = await startUsageGateway(sim.url, { usageCaptureBytes: 40 });
  });
  afterAll(async () => {
    await gateway?.close();
  });

  it('keeps the start of request and response bodies, up to the cap, when GATEHOUSE_USAGE_CAPTURE_BYTES is set', async () => {
    const id = requestId('capture');
    const body = JSON.stringify({ model: 'qwen', messages: PROMPT });
    const res = await rawRequest(`${gateway.url}/v1/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-request-id': id },
      body,
    });
    expect(res.status).toBe(200);
    const record = await recordFor(gateway, id);
    expect(record.captured).toBe(true);
    const one = json((await adminApi(gateway, 'GET', `/api/usage/requests/${record.id}`)).body) as {
      request: { requestBody: string; responseBody: string };
    };
    expect(one.request.requestBody).toBe(`${body.slice(0, 40)}\n[... ${body.length - 40} more bytes not captured]`);
    expect(one.request.responseBody.startsWith(res.body.subarray(0, 40).toString())).toBe(true);
    expect(one.request.responseBody).toContain(`[... ${res.body.length - 40} more bytes not captured]`);
  });
});

describe('retention', () => {
  let gateway: TestGateway;
  let clock = Date.UTC(2032, 0, 1);
  beforeAll(async () => {
    gateway = await startUsageGateway(
      sim.url,
      { usageRetentionMs: 2 * 86_400_000 },
      { usageOptions: { now: () => clock, retention: { intervalMs: 3_600_000, firstRunMs: 3_600_000 } } },
    );
  });
  afterAll(async () => {
    await gateway?.close();
  });

  it('deletes records older than the retention and keeps the newer ones, from the log and the summaries', async () => {
    const old = requestId('old');
    await rawRequest(`${gateway.url}/v1/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-request-id': old },
      body: JSON.stringify({ model: 'qwen', messages: PROMPT }),
    });
    await recordFor(gateway, old);
    clock += 36 * 3_600_000;
    const recent = requestId('recent');
    await rawRequest(`${gateway.url}/v1/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-request-id': recent },
      body: JSON.stringify({ model: 'qwen', messages: PROMPT }),
    });
    await recordFor(gateway, recent);
    clock += 13 * 3_600_000; // the old call is now 49 h old, the recent one 13 h

    const summaryBefore = json((await adminApi(gateway, 'GET', '/api/usage/summary?range=30d')).body) as UsageSummary;
    expect(summaryBefore.totals.requests).toBe(2);
    const deleted = await gateway.app.usage.prune();
    expect(deleted).toBeGreaterThanOrEqual(1);
    expect((await listRequests(gateway)).requests.map((r) => r.requestId)).toEqual([recent]);
    const summaryAfter = json((await adminApi(gateway, 'GET', '/api/usage/summary?range=30d')).body) as UsageSummary;
    expect(summaryAfter.totals.requests).toBe(1);
  });
});

describe('latency percentiles', () => {
  it('interpolates inside the histogram bucket a quantile falls in', () => {
    const counts = new Array<number>(USAGE_LATENCY_BOUNDS_MS.length + 1).fill(0);
    const i100 = USAGE_LATENCY_BOUNDS_MS.indexOf(100); // (70, 100]
    const i1000 = USAGE_LATENCY_BOUNDS_MS.indexOf(1000); // (700, 1000]
    counts[i100] = 90;
    counts[i1000] = 10;
    expect(percentile(counts, 0.5)).toBeCloseTo(70 + (50 / 90) * 30, 6);
    expect(percentile(counts, 0.95)).toBeCloseTo(700 + (5 / 10) * 300, 6);
    expect(percentile(counts, 0.99)).toBeCloseTo(700 + (9 / 10) * 300, 6);
    expect(percentile(new Array<number>(counts.length).fill(0), 0.5)).toBe(0);
  });
});
