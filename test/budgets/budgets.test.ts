/**
 * Key budgets end to end: a gateway with a real SQLite store in front of a recording upstream,
 * its wall clock moved by the test. Each kind (tokens, requests, GPU seconds), each period, the
 * 429 `budget_exceeded` in both wire formats through the official SDKs, parallel calls, and the
 * GPU time each call records.
 */
import Anthropic from '@anthropic-ai/sdk';
import OpenAI from 'openai';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import type { BudgetList } from '../../src/admin-api/types.js';
import type { Settings } from '../../src/settings/index.js';
import { PROMPT_BYTES_PER_TOKEN } from '../../src/limits/token-reservation.js';
import { startRecordingUpstream, type RecordingUpstream } from '../fakes/recording-upstream.js';
import type { TestGateway } from '../helpers/gateway.js';
import { json, rawRequest } from '../helpers/http.js';
import { adminApi, createKey, requestId, startUsageGateway } from '../usage/usage-helpers.js';

const MAX_TOKENS = 10;
const BODY = JSON.stringify({ model: 'm', max_tokens: MAX_TOKENS, messages: [{ role: 'user', content: 'hi' }] });
const ESTIMATE = Math.ceil(Buffer.byteLength(BODY) / PROMPT_BYTES_PER_TOKEN) + MAX_TOKENS;
/** What every answer reports: 30 tokens and 600 ms of llama.cpp compute. */
const USAGE = { prompt_tokens: 20, completion_tokens: 10, total_tokens: 30 };
const TIMINGS = { prompt_n: 20, prompt_ms: 150.5, predicted_n: 10, predicted_ms: 449.5 };

let upstream: RecordingUpstream;
const held: Array<() => void> = [];
let holding = false;

beforeAll(async () => {
  upstream = await startRecordingUpstream();
  upstream.handle((req, res, body) => {
    const answer = () => {
      const request = JSON.parse(body.toString('utf8') || '{}') as { stream?: boolean };
      if (req.url?.startsWith('/v1/messages')) {
        res.writeHead(200, { 'content-type': 'application/json' });
        res.end(
          JSON.stringify({
            id: 'msg',
            type: 'message',
            role: 'assistant',
            model: 'm',
            content: [{ type: 'text', text: 'hi' }],
            stop_reason: 'end_turn',
            stop_sequence: null,
            usage: { input_tokens: 20, output_tokens: 10 },
          }),
        );
        return;
      }
      if (request.stream) {
        res.writeHead(200, { 'content-type': 'text/event-stream' });
        res.write('data: {"choices":[{"index":0,"delta":{"content":"hi"}}]}\n\n');
        const last = { choices: [{ index: 0, delta: {}, finish_reason: 'stop' }], timings: TIMINGS };
        res.write(`data: ${JSON.stringify(last)}\n\n`);
        res.end('data: [DONE]\n\n');
        return;
      }
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(
        JSON.stringify({
          id: 'c',
          object: 'chat.completion',
          model: 'm',
          choices: [{ index: 0, message: { role: 'assistant', content: 'hi' }, finish_reason: 'stop' }],
          usage: USAGE,
          timings: TIMINGS,
        }),
      );
    };
    if (holding) held.push(answer);
    else answer();
  });
});
afterAll(async () => {
  await upstream?.close();
});
afterEach(() => {
  holding = false;
  for (const release of held.splice(0)) release();
});

/** A gateway whose wall clock is `clock.now`. */
async function gatewayAt(start: string, overrides: Partial<Settings> = {}) {
  const clock = { now: Date.parse(start) };
  const gateway = await startUsageGateway(upstream.url, overrides, { usageOptions: { now: () => clock.now } });
  return { gateway, clock };
}

function chat(gateway: TestGateway, secret: string, body = BODY, id = requestId('budget')) {
  return rawRequest(`${gateway.url}/v1/chat/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: `Bearer ${secret}`, 'x-request-id': id },
    body,
  });
}

async function budgets(gateway: TestGateway): Promise<BudgetList> {
  const res = await adminApi(gateway, 'GET', '/api/budgets');
  expect(res.status).toBe(200);
  return json(res.body) as BudgetList;
}

/** The key's request count in `GET /api/budgets` once the calls so far have ended (settled). */
async function settled(gateway: TestGateway, keyId: string, requests: number): Promise<BudgetList['keys'][number]> {
  let entry: BudgetList['keys'][number] | undefined;
  await expect
    .poll(async () => {
      entry = (await budgets(gateway)).keys.find((k) => k.id === keyId);
      return entry?.budgets.find((b) => b.kind === 'requests')?.used ?? entry?.budgets.length;
    })
    .toBe(requests);
  return entry!;
}

describe('key budgets', () => {
  let gateway: TestGateway;
  let clock: { now: number };
  afterEach(async () => {
    await gateway?.close();
  });

  it('counts input + output tokens per day and refuses the call that does not fit, in the OpenAI format, until midnight', async () => {
    ({ gateway, clock } = await gatewayAt('2030-01-15T12:00:00Z'));
    // Room for three calls: each reserves its estimate and then holds the 30 tokens it used.
    const budget = 2 * USAGE.total_tokens + ESTIMATE;
    const key = await createKey(gateway, { name: 'kids', budget: { tokens: budget, requests: 100, period: 'day' } });
    for (let i = 1; i <= 3; i++) {
      expect((await chat(gateway, key.secret)).status).toBe(200);
      await settled(gateway, key.id, i);
    }
    const before = upstream.received.length;
    const client = new OpenAI({ baseURL: `${gateway.url}/v1`, apiKey: key.secret, maxRetries: 0 });
    const error = await client.chat.completions
      .create({ model: 'm', max_tokens: MAX_TOKENS, messages: [{ role: 'user', content: 'hi' }] })
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(OpenAI.RateLimitError);
    const refused = error as InstanceType<typeof OpenAI.RateLimitError>;
    expect(refused.status).toBe(429);
    expect(refused.code).toBe('budget_exceeded');
    expect(refused.message).toContain(
      `The token budget of this API key is used up: it allows ${budget} tokens per day`,
    );
    expect(refused.message).toContain('It resets at 2030-01-16T00:00:00.000Z');
    expect(refused.headers.get('retry-after')).toBe(String(12 * 3600));
    expect(upstream.received.length).toBe(before);

    const use = (await budgets(gateway)).keys.find((k) => k.id === key.id)!;
    expect(use).toEqual({
      id: key.id,
      period: 'day',
      periodStart: '2030-01-15T00:00:00.000Z',
      resetsAt: '2030-01-16T00:00:00.000Z',
      budgets: [
        { kind: 'tokens', limit: budget, used: 3 * USAGE.total_tokens },
        { kind: 'requests', limit: 100, used: 3 },
      ],
    });

    clock.now = Date.parse('2030-01-16T00:00:01Z');
    expect((await chat(gateway, key.secret)).status).toBe(200);
  });

  it('refuses the request over a weekly budget in the Anthropic format, with weeks from Monday in GATEHOUSE_TIMEZONE', async () => {
    // Sunday 23:30 in Berlin; the week ends at Monday 00:00 local, 23:00 UTC.
    ({ gateway, clock } = await gatewayAt('2030-01-13T22:30:00Z', { timeZone: 'Europe/Berlin' }));
    const key = await createKey(gateway, { name: 'ci', budget: { requests: 2, period: 'week' } });
    for (let i = 1; i <= 2; i++) {
      expect((await chat(gateway, key.secret)).status).toBe(200);
      await settled(gateway, key.id, i);
    }
    const before = upstream.received.length;
    const client = new Anthropic({ baseURL: gateway.url, apiKey: key.secret, maxRetries: 0 });
    const error = await client.messages
      .create({ model: 'm', max_tokens: MAX_TOKENS, messages: [{ role: 'user', content: 'hi' }] })
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(Anthropic.RateLimitError);
    const refused = error as InstanceType<typeof Anthropic.RateLimitError>;
    expect(refused.status).toBe(429);
    expect(refused.error).toEqual({
      type: 'error',
      error: {
        type: 'rate_limit_error',
        message:
          'The request budget of this API key is used up: it allows 2 requests per week and 2 are used or ' +
          'reserved. It resets at 2030-01-13T23:00:00.000Z (in 1800 s).',
      },
    });
    expect(refused.headers.get('retry-after')).toBe('1800');
    expect(upstream.received.length).toBe(before);

    clock.now = Date.parse('2030-01-13T23:00:00Z');
    const next = await new Anthropic({ baseURL: gateway.url, apiKey: key.secret, maxRetries: 0 }).messages.create({
      model: 'm',
      max_tokens: MAX_TOKENS,
      messages: [{ role: 'user', content: 'hi' }],
    });
    expect(next.content).toEqual([{ type: 'text', text: 'hi' }]);
  });

  it("counts llama.cpp's own GPU time from JSON answers and the last frame of streams, records it as gpu_ms, and holds a monthly budget", async () => {
    ({ gateway, clock } = await gatewayAt('2030-03-20T12:00:00Z', { timeZone: 'America/New_York' }));
    const key = await createKey(gateway, { name: 'lab', budget: { gpuSeconds: 1, period: 'month' } });
    const json1 = requestId('gpu-json');
    expect((await chat(gateway, key.secret, BODY, json1)).status).toBe(200);
    const stream1 = requestId('gpu-stream');
    const streamed = await chat(gateway, key.secret, JSON.stringify({ ...JSON.parse(BODY), stream: true }), stream1);
    expect(streamed.status).toBe(200);
    const gpu = TIMINGS.prompt_ms + TIMINGS.predicted_ms;
    await expect
      .poll(async () => (await budgets(gateway)).keys.find((k) => k.id === key.id)?.budgets[0]?.used)
      .toBe((2 * gpu) / 1000);
    const refused = await chat(gateway, key.secret);
    expect(refused.status).toBe(429);
    expect(json(refused.body)).toMatchObject({ error: { code: 'budget_exceeded', type: 'rate_limit_error' } });
    expect((json(refused.body) as { error: { message: string } }).error.message).toContain(
      'The GPU-time budget of this API key is used up: it allows 1 GPU second per month',
    );
    // April 1st, 00:00 in New York (EDT, UTC-4).
    expect(refused.headers['retry-after']).toBe(String((Date.parse('2030-04-01T04:00:00Z') - clock.now) / 1000));

    await gateway.app.usage.flush();
    const rows = await gateway.store!.usage.list({ keyId: key.id, limit: 10 });
    const byRequest = new Map(rows.map((r) => [r.requestId, r]));
    expect(byRequest.get(json1)?.gpuMs).toBe(gpu);
    expect(byRequest.get(stream1)?.gpuMs).toBe(gpu);
    expect(rows.find((r) => r.status === 429)?.gpuMs).toBeNull();
  });

  it('starts from the request log after a restart: what the period used is read back from the store', async () => {
    ({ gateway, clock } = await gatewayAt('2030-01-15T12:00:00Z'));
    const key = await createKey(gateway, { name: 'restart', budget: { requests: 2, period: 'day' } });
    expect((await chat(gateway, key.secret)).status).toBe(200);
    expect((await chat(gateway, key.secret)).status).toBe(200);
    await settled(gateway, key.id, 2);
    const dataDir = gateway.dataDir;
    await gateway.close();
    const again = await startUsageGateway(upstream.url, { dataDir }, { usageOptions: { now: () => clock.now } });
    gateway = again;
    expect((await chat(gateway, key.secret)).status).toBe(429);
    clock.now = Date.parse('2030-01-16T12:00:00Z');
    expect((await chat(gateway, key.secret)).status).toBe(200);
  });

  it('lets parallel calls reserve at most the token budget between them', async () => {
    ({ gateway, clock } = await gatewayAt('2030-01-15T12:00:00Z'));
    const budget = 200;
    const key = await createKey(gateway, { name: 'parallel', budget: { tokens: budget, period: 'day' } });
    holding = true;
    let refused = 0;
    const before = upstream.received.length;
    const calls = Array.from({ length: 20 }, () =>
      chat(gateway, key.secret).then((res) => {
        if (res.status === 429) refused++;
        return res;
      }),
    );
    await expect.poll(() => upstream.received.length - before + refused, { timeout: 5000 }).toBe(20);
    for (const release of held.splice(0)) release();
    const results = await Promise.all(calls);
    expect(results.filter((r) => r.status === 200)).toHaveLength(Math.floor(budget / ESTIMATE));
    for (const res of results.filter((r) => r.status === 429))
      expect(json(res.body)).toMatchObject({ error: { code: 'budget_exceeded' } });
  });
});
