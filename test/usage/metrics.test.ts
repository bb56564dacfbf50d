/**
 * `GET /metrics`: Prometheus text that a strict parser accepts, counters fed from memory as
 * calls end (never from the request log: they do not go down when it is pruned, and a scrape
 * touches no database), bounded label cardinality, an optional Bearer token, and counted drops
 * when the usage queue overflows.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { UsageStore } from '../../src/store/store.js';
import { countPromptTokens, DEMO_CONFIG, startSimulator, type Simulator } from '../fakes/llama-swap/index.js';
import type { TestGateway } from '../helpers/gateway.js';
import { json, rawRequest, type RawResponse } from '../helpers/http.js';
import { parsePrometheusText, seriesOf, valueOf, type Family } from './prometheus-text.js';
import { createKey, recordFor, requestId, startUsageGateway } from './usage-helpers.js';

let sim: Simulator;
beforeAll(async () => {
  sim = await startSimulator({ config: DEMO_CONFIG, knobs: { tokens: 5 } });
});
afterAll(async () => {
  await sim?.close();
});

const PROMPT = [{ role: 'user', content: 'metrics please' }];
const PROMPT_TOKENS = countPromptTokens({ messages: PROMPT });

function chat(
  gateway: TestGateway,
  options: { secret?: string; model?: string; stream?: boolean; id?: string } = {},
): Promise<RawResponse> {
  const headers: Record<string, string> = {
    'content-type': 'application/json',
    'x-request-id': options.id ?? requestId('m'),
  };
  if (options.secret) headers.authorization = `Bearer ${options.secret}`;
  return rawRequest(`${gateway.url}/v1/chat/completions`, {
    method: 'POST',
    headers,
    body: JSON.stringify({ model: options.model ?? 'qwen', stream: options.stream ?? false, messages: PROMPT }),
  });
}

async function scrape(gateway: TestGateway, token?: string): Promise<Map<string, Family>> {
  const res = await rawRequest(
    `${gateway.url}/metrics`,
    token ? { headers: { authorization: `Bearer ${token}` } } : {},
  );
  expect(res.status, res.body.toString()).toBe(200);
  expect(res.headers['content-type']).toBe('text/plain; version=0.0.4; charset=utf-8');
  return parsePrometheusText(res.body.toString('utf8'));
}

describe('/metrics', () => {
  let gateway: TestGateway;
  let key: { secret: string };
  let clock = Date.UTC(2031, 5, 1);
  const KEY_NAME = 'scraped "key"\\1';
  beforeAll(async () => {
    gateway = await startUsageGateway(
      sim.url,
      {},
      { usageOptions: { now: () => clock, retention: { intervalMs: 100, firstRunMs: 100 } } },
    );
    // A name with a quote and a backslash: label values must be escaped.
    key = await createKey(gateway, { name: KEY_NAME });
  });
  afterAll(async () => {
    await gateway?.close();
  });

  it('counts calls, tokens and latency per model and key name, in text a strict parser accepts', async () => {
    const ids = [requestId('m'), requestId('m'), requestId('m')];
    await chat(gateway, { secret: key.secret, id: ids[0] });
    await chat(gateway, { secret: key.secret, stream: true, id: ids[1] });
    await chat(gateway, { secret: key.secret, model: 'llama-3.2-3b', id: ids[2] });
    for (const id of ids) await recordFor(gateway, id);
    const m = await scrape(gateway);
    const labels = { model: 'qwen', key: KEY_NAME };
    expect(valueOf(m, 'gatehouse_requests_total', { ...labels, status: '200', door: 'v1' })).toBe(2);
    expect(
      valueOf(m, 'gatehouse_requests_total', { model: 'llama-3.2-3b', key: labels.key, status: '200', door: 'v1' }),
    ).toBe(1);
    expect(valueOf(m, 'gatehouse_tokens_total', { ...labels, type: 'input' })).toBe(2 * PROMPT_TOKENS);
    expect(valueOf(m, 'gatehouse_tokens_total', { ...labels, type: 'output' })).toBe(2 * 5);
    expect(valueOf(m, 'gatehouse_request_duration_seconds_count', labels)).toBe(2);
    expect(valueOf(m, 'gatehouse_time_to_first_byte_seconds_count', labels)).toBe(2);
    expect(valueOf(m, 'gatehouse_time_to_first_token_seconds_count', labels)).toBe(2);
    expect(valueOf(m, 'gatehouse_requests_in_flight')).toBe(0);
    expect(valueOf(m, 'gatehouse_usage_records_dropped_total')).toBe(0);
    expect(m.get('gatehouse_requests_total')?.type).toBe('counter');
    expect(m.get('gatehouse_request_duration_seconds')?.type).toBe('histogram');
    expect(m.get('process_cpu_user_seconds_total')?.type).toBe('counter');
  });

  it('shows a stream in flight while it runs', async () => {
    sim.knobs.tokensPerSecond = 20;
    const id = requestId('inflight');
    const running = chat(gateway, { secret: key.secret, stream: true, id });
    try {
      await sim.waitForRequest((r) => r.headers['x-request-id'] === id && r.status === 200);
      expect(valueOf(await scrape(gateway), 'gatehouse_requests_in_flight')).toBe(1);
    } finally {
      await running;
      sim.knobs.tokensPerSecond = 0;
    }
    await recordFor(gateway, id);
    expect(valueOf(await scrape(gateway), 'gatehouse_requests_in_flight')).toBe(0);
  });

  it('never decreases when the request log is pruned, and a scrape reads no database', async () => {
    for (let i = 0; i < 3; i++) await recordFor(gateway, (await chatWithId(gateway, key.secret)).id);
    const store = gateway.store!;
    expect(await store.usage.count()).toBeGreaterThan(0);
    const before = await scrape(gateway);

    clock += 31 * 86_400_000; // every record is now past the 30-day retention
    const deadline = Date.now() + 5000;
    while ((await store.usage.count()) > 0) {
      if (Date.now() > deadline) throw new Error('retention did not prune');
      await new Promise((r) => setTimeout(r, 50));
    }

    // A scrape must not read the store: make every read throw, then scrape.
    const usage = store.usage as unknown as Record<keyof UsageStore, unknown>;
    const saved = { list: usage.list, get: usage.get, rollup: usage.rollup, count: usage.count };
    for (const name of Object.keys(saved))
      usage[name as keyof UsageStore] = () => Promise.reject(new Error(`scrape read the store (${name})`));
    let after: Map<string, Family>;
    try {
      after = await scrape(gateway);
    } finally {
      Object.assign(usage, saved);
    }
    for (const name of [
      'gatehouse_requests_total',
      'gatehouse_tokens_total',
      'gatehouse_request_duration_seconds_count',
      'gatehouse_usage_records_written_total',
    ]) {
      const was = seriesOf(before, name);
      const now = seriesOf(after, name);
      expect(was.size, name).toBeGreaterThan(0);
      for (const [series, value] of was) expect(now.get(series), `${name}${series}`).toBeGreaterThanOrEqual(value);
    }
    // ...and keeps counting from there.
    await recordFor(gateway, (await chatWithId(gateway, key.secret)).id);
    const later = await scrape(gateway);
    const series = { model: 'qwen', key: KEY_NAME, status: '200', door: 'v1' };
    expect(valueOf(later, 'gatehouse_requests_total', series)).toBe(
      valueOf(after, 'gatehouse_requests_total', series) + 1,
    );
  });
});

async function chatWithId(gateway: TestGateway, secret: string): Promise<{ id: string; res: RawResponse }> {
  const id = requestId('m');
  return { id, res: await chat(gateway, { id, secret }) };
}

describe('/metrics labels', () => {
  let gateway: TestGateway;
  beforeAll(async () => {
    gateway = await startUsageGateway(
      sim.url,
      {},
      { usageOptions: { metrics: { maxModels: 2, maxKeys: 1, processMetrics: false } } },
    );
  });
  afterAll(async () => {
    await gateway?.close();
  });

  it('caps distinct models and keys, reports the rest as other, and lets no made-up model (404) take a slot', async () => {
    const a = await createKey(gateway, { name: 'first' });
    const b = await createKey(gateway, { name: 'second' });
    const ids: string[] = [];
    const call = async (options: { secret?: string; model?: string }) => {
      const id = requestId('cap');
      ids.push(id);
      return chat(gateway, { ...options, id });
    };
    expect((await call({ secret: a.secret, model: 'no-such-model' })).status).toBe(404);
    await call({ secret: a.secret, model: 'qwen' });
    await call({ secret: b.secret, model: 'llama-3.2-3b' });
    await call({ secret: a.secret, model: 'qwen3-8b' });
    for (const id of ids) await recordFor(gateway, id);
    const m = await scrape(gateway);
    const models = new Set(
      [...seriesOf(m, 'gatehouse_requests_total').keys()].map(
        (s) => Object.fromEntries(JSON.parse(s) as Array<[string, string]>).model,
      ),
    );
    const keys = new Set(
      [...seriesOf(m, 'gatehouse_requests_total').keys()].map(
        (s) => Object.fromEntries(JSON.parse(s) as Array<[string, string]>).key,
      ),
    );
    expect(models).toEqual(new Set(['qwen', 'llama-3.2-3b', 'other']));
    expect(keys).toEqual(new Set(['first', 'other']));
    expect(valueOf(m, 'gatehouse_requests_total', { model: 'other', key: 'first', status: '404', door: 'v1' })).toBe(1);
    // An unknown model is the caller's mistake, not an upstream failure.
    expect(seriesOf(m, 'gatehouse_upstream_errors_total').size).toBe(0);
    expect(m.get('process_cpu_user_seconds_total')).toBeUndefined();
  });
});

describe('/metrics with GATEHOUSE_METRICS_TOKEN', () => {
  let gateway: TestGateway;
  beforeAll(async () => {
    gateway = await startUsageGateway(sim.url, { metricsToken: 'scrape-secret' });
  });
  afterAll(async () => {
    await gateway?.close();
  });

  it('answers 401 without the token or with a wrong one, and 200 with it', async () => {
    for (const headers of [{}, { authorization: 'Bearer wrong' }, { authorization: 'Basic c2NyYXBlLXNlY3JldA==' }]) {
      const res = await rawRequest(`${gateway.url}/metrics`, { headers });
      expect(res.status).toBe(401);
      expect(res.headers['www-authenticate']).toBe('Bearer realm="gatehouse-metrics"');
      expect(json(res.body)).toMatchObject({ error: { code: 'metrics_unauthorized', type: 'authentication_error' } });
    }
    await scrape(gateway, 'scrape-secret');
  });
});

describe('usage queue overflow', () => {
  let gateway: TestGateway;
  beforeAll(async () => {
    gateway = await startUsageGateway(sim.url, {}, { usageOptions: { writer: { maxQueue: 2, flushIntervalMs: 50 } } });
  });
  afterAll(async () => {
    await gateway?.close();
  });

  it('drops records and counts them when the store cannot keep up, and writes again once it recovers', async () => {
    const usage = gateway.store!.usage;
    const append = usage.append.bind(usage);
    usage.append = () => Promise.reject(new Error('disk full'));
    for (let i = 0; i < 6; i++) expect((await chat(gateway)).status).toBe(200);
    // The six calls end before their records are queued (the recorder runs after the answer).
    let m = await scrape(gateway);
    // The drops happen as records arrive; the failed write waits for the writer's next tick.
    const settled = () =>
      valueOf(m, 'gatehouse_usage_records_dropped_total') >= 4 &&
      valueOf(m, 'gatehouse_usage_write_failures_total') > 0;
    for (let tries = 0; tries < 200 && !settled(); tries++) {
      await new Promise((r) => setTimeout(r, 25));
      m = await scrape(gateway);
    }
    expect(valueOf(m, 'gatehouse_usage_records_dropped_total')).toBe(4);
    expect(valueOf(m, 'gatehouse_usage_write_failures_total')).toBeGreaterThan(0);
    expect(valueOf(m, 'gatehouse_usage_queue_length')).toBe(2);
    expect(valueOf(m, 'gatehouse_requests_total', { model: 'qwen', key: 'none', status: '200', door: 'v1' })).toBe(6);

    usage.append = append;
    // A bound, not a measure: the writer retries on its next tick, late on a busy machine.
    const deadline = Date.now() + 20_000;
    while ((await usage.count()) < 2 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 25));
    expect(await usage.count()).toBe(2);
    expect(valueOf(await scrape(gateway), 'gatehouse_usage_queue_length')).toBe(0);
  });
});

describe('upstream failures', () => {
  it('counts a call llama-swap could not answer as an upstream error, by class', async () => {
    const dead = await startUsageGateway('http://127.0.0.1:9');
    try {
      const id = requestId('dead');
      expect((await chat(dead, { id })).status).toBe(502);
      await recordFor(dead, id);
      const m = await scrape(dead);
      expect(valueOf(m, 'gatehouse_upstream_errors_total', { model: 'qwen', class: 'upstream_unreachable' })).toBe(1);
      expect(valueOf(m, 'gatehouse_requests_total', { model: 'qwen', key: 'none', status: '502', door: 'v1' })).toBe(1);
    } finally {
      await dead.close();
    }
  });
});
