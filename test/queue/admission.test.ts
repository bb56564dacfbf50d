/**
 * The admission queue seen from outside: a gateway with caps in front of an upstream that holds
 * each call until the test lets it answer, so who reaches llama-swap when is exact.
 */
import { request, type IncomingMessage } from 'node:http';
import OpenAI from 'openai';
import { afterEach, describe, expect, it } from 'vitest';
import { Scheduler } from '../../src/queue/scheduler.js';
import type { Settings } from '../../src/settings/index.js';
import { json, rawRequest, type RawResponse } from '../helpers/http.js';
import { adminApi, createKey, recordFor, startUsageGateway } from '../usage/usage-helpers.js';
import type { TestGateway } from '../helpers/gateway.js';
import { startHoldingUpstream, STREAM_BODY } from '../helpers/holding-upstream.js';
import { ManualClock } from './manual-clock.js';

/** A scheduler on a clock the test moves, with the given caps and timeout. */
function manualScheduler(clock: ManualClock, options: { maxInflight: number; queueTimeoutMs: number }): Scheduler {
  return new Scheduler({ maxInflightPerModel: 0, swapFairnessMs: 30_000, queueMax: 10, clock, ...options });
}

let cleanup: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const c of cleanup.reverse()) await c();
  cleanup = [];
});

async function setUp(overrides: Partial<Settings>, queue?: Scheduler) {
  const upstream = await startHoldingUpstream();
  const gateway = await startUsageGateway(upstream.url, overrides, queue ? { queue } : {});
  cleanup.push(
    () => upstream.close(),
    () => gateway.close(),
  );
  return { upstream, gateway };
}

function chat(gateway: TestGateway, id: string, model: string, headers: Record<string, string> = {}) {
  return rawRequest(`${gateway.url}/v1/chat/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'x-request-id': id, ...headers },
    body: JSON.stringify({ model, messages: [{ role: 'user', content: 'hi' }] }),
  });
}

async function waitingCount(gateway: TestGateway, n: number): Promise<void> {
  while (gateway.app.queue.waitingCount !== n) await new Promise((resolve) => setImmediate(resolve));
}

describe('the admission queue in front of llama-swap', () => {
  it('forwards one call at a time with GATEHOUSE_MAX_INFLIGHT=1 and says how long each waited', async () => {
    const { upstream, gateway } = await setUp({ maxInflight: 1 });
    const first = chat(gateway, 'first', 'qwen');
    await upstream.arrived(1);
    const second = chat(gateway, 'second', 'qwen');
    await waitingCount(gateway, 1);
    expect(upstream.arrivals.map((a) => a.id)).toEqual(['first']);
    upstream.arrivals[0]!.answer();
    const firstAnswer = await first;
    await upstream.arrived(2);
    upstream.arrivals[1]!.answer();
    const secondAnswer = await second;
    expect(firstAnswer.headers['x-gatehouse-queue-ms']).toBe('0');
    expect(Number(secondAnswer.headers['x-gatehouse-queue-ms'])).toBeGreaterThanOrEqual(0);
    expect(secondAnswer.status).toBe(200);
    expect((await recordFor(gateway, 'first')).queueMs).toBe(0);
    expect(Math.round((await recordFor(gateway, 'second')).queueMs!)).toBe(
      Number(secondAnswer.headers['x-gatehouse-queue-ms']),
    );
  });

  it('shows the waiting in /metrics: a wait histogram by model and the queue depth', async () => {
    const { upstream, gateway } = await setUp({ maxInflight: 1 });
    const first = chat(gateway, 'first', 'qwen');
    await upstream.arrived(1);
    const second = chat(gateway, 'second', 'qwen');
    await waitingCount(gateway, 1);
    const during = (await rawRequest(`${gateway.url}/metrics`)).body.toString();
    expect(during).toMatch(/^gatehouse_queue_depth 1$/m);
    upstream.arrivals[0]!.answer();
    await upstream.arrived(2);
    upstream.arrivals[1]!.answer();
    await Promise.all([first, second]);
    await gateway.app.usage.flush();
    const after = (await rawRequest(`${gateway.url}/metrics`)).body.toString();
    expect(after).toMatch(/^gatehouse_queue_depth 0$/m);
    expect(after).toMatch(/^gatehouse_queue_wait_seconds_count\{model="qwen"\} 2$/m);
  });

  it('sends x-gatehouse-queue-ms with the gateway’s own errors too', async () => {
    const { gateway } = await setUp({});
    await createKey(gateway, { name: 'someone' });
    const refused = await chat(gateway, 'no-key', 'qwen');
    expect(refused.status).toBe(401);
    expect(refused.headers['x-gatehouse-queue-ms']).toBe('0');
    expect((await recordFor(gateway, 'no-key')).queueMs).toBeNull();
  });

  it('lets the call of a higher-priority key go first', async () => {
    const { upstream, gateway } = await setUp({ maxInflight: 1 });
    const low = await createKey(gateway, { name: 'batch', priority: -5 });
    const high = await createKey(gateway, { name: 'interactive', priority: 5 });
    const auth = (k: { secret: string }) => ({ authorization: `Bearer ${k.secret}` });
    const running = chat(gateway, 'running', 'qwen', auth(low));
    await upstream.arrived(1);
    const later = chat(gateway, 'low', 'qwen', auth(low));
    await waitingCount(gateway, 1);
    const urgent = chat(gateway, 'high', 'qwen', auth(high));
    await waitingCount(gateway, 2);
    const queue = json((await adminApi(gateway, 'GET', '/api/queue')).body) as {
      scope: string;
      inflight: Array<{ id: string; phase: string; key: { name: string } | null }>;
      waiting: Array<{ id: string; position: number; priority: number }>;
    };
    expect(queue.scope).toBe('replica');
    expect(queue.inflight.map((c) => [c.id, c.key?.name])).toEqual([['running', 'batch']]);
    expect(queue.waiting.map((c) => [c.id, c.position, c.priority])).toEqual([
      ['high', 1, 5],
      ['low', 2, -5],
    ]);
    upstream.arrivals[0]!.answer();
    await upstream.arrived(2);
    upstream.arrivals[1]!.answer();
    await upstream.arrived(3);
    upstream.arrivals[2]!.answer();
    await Promise.all([running, later, urgent]);
    expect(upstream.arrivals.map((a) => a.id)).toEqual(['running', 'high', 'low']);
  });

  it('refuses a priority outside -10..10 with the field named', async () => {
    const { gateway } = await setUp({});
    const res = await adminApi(gateway, 'POST', '/api/keys', { name: 'x', priority: 11 });
    expect(res.status).toBe(422);
    expect(res.body.toString()).toContain('/priority');
  });

  it('answers queue_full at once in the caller’s wire format, and never forwards it', async () => {
    const { upstream, gateway } = await setUp({ maxInflight: 1, queueMax: 1 });
    const running = chat(gateway, 'running', 'qwen');
    await upstream.arrived(1);
    const waiting = chat(gateway, 'waiting', 'qwen');
    await waitingCount(gateway, 1);
    const openai: RawResponse = await chat(gateway, 'full-openai', 'qwen');
    const anthropic = await rawRequest(`${gateway.url}/v1/messages`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'anthropic-version': '2023-06-01' },
      body: JSON.stringify({ model: 'qwen', max_tokens: 5, messages: [{ role: 'user', content: 'hi' }] }),
    });
    expect(openai.status).toBe(503);
    expect((json(openai.body) as { error: { code: string } }).error.code).toBe('queue_full');
    expect(Number(openai.headers['retry-after'])).toBeGreaterThan(0);
    expect(anthropic.status).toBe(503);
    expect(json(anthropic.body)).toMatchObject({ type: 'error', error: { type: 'overloaded_error' } });
    expect(anthropic.headers['retry-after']).toBeDefined();
    upstream.arrivals[0]!.answer();
    await upstream.arrived(2);
    upstream.arrivals[1]!.answer();
    await Promise.all([running, waiting]);
    expect(upstream.arrivals.map((a) => a.id)).toEqual(['running', 'waiting']);
  });

  it('refuses a key past its share of the queue with queue_full while another key’s call still waits its turn', async () => {
    // GATEHOUSE_QUEUE_MAX_PER_KEY unset: half of GATEHOUSE_QUEUE_MAX, so 2 of 4.
    const { upstream, gateway } = await setUp({ maxInflight: 1, queueMax: 4 });
    const greedy = { authorization: `Bearer ${(await createKey(gateway, { name: 'greedy' })).secret}` };
    const other = { authorization: `Bearer ${(await createKey(gateway, { name: 'other' })).secret}` };
    const running = chat(gateway, 'running', 'qwen', greedy);
    await upstream.arrived(1);
    const waiting = [chat(gateway, 'greedy-1', 'qwen', greedy)];
    await waitingCount(gateway, 1);
    waiting.push(chat(gateway, 'greedy-2', 'qwen', greedy));
    await waitingCount(gateway, 2);

    const openai = await chat(gateway, 'greedy-3', 'qwen', greedy);
    expect(openai.status).toBe(503);
    expect((json(openai.body) as { error: { code: string; message: string } }).error).toMatchObject({
      code: 'queue_full',
      message: expect.stringContaining('GATEHOUSE_QUEUE_MAX_PER_KEY'),
    });
    expect(Number(openai.headers['retry-after'])).toBeGreaterThan(0);
    const anthropic = await rawRequest(`${gateway.url}/v1/messages`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'anthropic-version': '2023-06-01', ...greedy },
      body: JSON.stringify({ model: 'qwen', max_tokens: 5, messages: [{ role: 'user', content: 'hi' }] }),
    });
    expect(anthropic.status).toBe(503);
    expect(json(anthropic.body)).toMatchObject({ type: 'error', error: { type: 'overloaded_error' } });
    expect(Number(anthropic.headers['retry-after'])).toBeGreaterThan(0);

    waiting.push(chat(gateway, 'other-1', 'qwen', other));
    await waitingCount(gateway, 3);
    for (let i = 0; i < 4; i++) {
      upstream.arrivals[i]!.answer();
      if (i < 3) await upstream.arrived(i + 2);
    }
    expect((await Promise.all([running, ...waiting])).map((r) => r.status)).toEqual([200, 200, 200, 200]);
    expect(upstream.arrivals.map((a) => a.id)).toEqual(['running', 'greedy-1', 'greedy-2', 'other-1']);
  });

  it('answers queue_timeout after GATEHOUSE_QUEUE_TIMEOUT, and never forwards the call', async () => {
    const clock = new ManualClock();
    const queue = manualScheduler(clock, { maxInflight: 1, queueTimeoutMs: 60_000 });
    const { upstream, gateway } = await setUp({ maxInflight: 1 }, queue);
    const running = chat(gateway, 'running', 'qwen');
    await upstream.arrived(1);
    const late = chat(gateway, 'late', 'qwen');
    await waitingCount(gateway, 1);
    clock.advance(60_000);
    const answer = await late;
    expect(answer.status).toBe(503);
    expect((json(answer.body) as { error: { code: string } }).error.code).toBe('queue_timeout');
    expect(answer.headers['retry-after']).toBeDefined();
    upstream.arrivals[0]!.answer();
    await running;
    expect(upstream.arrivals.map((a) => a.id)).toEqual(['running']);
  });

  it('takes a call whose client hung up out of the queue, and never forwards it', async () => {
    const { upstream, gateway } = await setUp({ maxInflight: 1 });
    const running = chat(gateway, 'running', 'qwen');
    await upstream.arrived(1);
    const req = request(`${gateway.url}/v1/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-request-id': 'gone' },
    });
    req.on('error', () => {});
    req.end(JSON.stringify({ model: 'qwen', messages: [] }));
    await waitingCount(gateway, 1);
    req.destroy();
    await waitingCount(gateway, 0);
    const next = chat(gateway, 'next', 'qwen');
    await waitingCount(gateway, 1);
    upstream.arrivals[0]!.answer();
    await upstream.arrived(2);
    upstream.arrivals[1]!.answer();
    await Promise.all([running, next]);
    expect(upstream.arrivals.map((a) => a.id)).toEqual(['running', 'next']);
  });

  for (const shape of ['envelope', 'legacy'] as const) {
    it(`sends a call llama-swap refused with 429 (${shape} shape) again after Retry-After, so the client sees one answer`, async () => {
      const clock = new ManualClock();
      const queue = manualScheduler(clock, { maxInflight: 0, queueTimeoutMs: 60_000 });
      const { upstream, gateway } = await setUp({}, queue);
      const answer = chat(gateway, 'busy', 'qwen');
      (await upstream.arrived(1))[0]!.busy(shape);
      for (let step = 0; step < 200 && upstream.arrivals.length < 2; step++) {
        clock.advance(100);
        await new Promise((resolve) => setImmediate(resolve));
      }
      (await upstream.arrived(2))[1]!.answer();
      const res = await answer;
      expect(res.status).toBe(200);
      expect(upstream.arrivals.map((a) => a.id)).toEqual(['busy', 'busy']);
      expect(Number(res.headers['x-gatehouse-queue-ms'])).toBeGreaterThanOrEqual(1000);
    });
  }

  it("passes llama-swap's 429 on once the call's time in the queue is up", async () => {
    const clock = new ManualClock();
    const queue = manualScheduler(clock, { maxInflight: 0, queueTimeoutMs: 500 });
    const { upstream, gateway } = await setUp({}, queue);
    const answer = chat(gateway, 'busy', 'qwen');
    (await upstream.arrived(1))[0]!.busy('envelope');
    const res = await answer;
    expect(res.status).toBe(429);
    expect((json(res.body) as { error: { code: string } }).error.code).toBe('concurrency_limit');
    expect(upstream.arrivals).toHaveLength(1);
  });

  it("makes a call wait for its key's concurrency slot, then 503 queue_timeout, never a 429", async () => {
    const clock = new ManualClock();
    const queue = manualScheduler(clock, { maxInflight: 0, queueTimeoutMs: 60_000 });
    const { upstream, gateway } = await setUp({ queueTimeoutMs: 60_000 }, queue);
    const key = await createKey(gateway, { name: 'one-at-a-time', limits: { concurrent: 1 } });
    const auth = { authorization: `Bearer ${key.secret}` };
    const running = chat(gateway, 'running', 'qwen', auth);
    await upstream.arrived(1);
    let lateAnswer: RawResponse | undefined;
    const late = chat(gateway, 'late', 'qwen', auth).then((res) => (lateAnswer = res));
    for (let step = 0; step < 200 && !lateAnswer; step++) {
      clock.advance(1_000);
      await new Promise((resolve) => setTimeout(resolve, 1));
    }
    const timedOut = await late;
    expect(timedOut.status).toBe(503);
    expect((json(timedOut.body) as { error: { code: string } }).error.code).toBe('queue_timeout');
    upstream.arrivals[0]!.answer();
    expect((await running).status).toBe(200);
    expect(upstream.arrivals.map((a) => a.id)).toEqual(['running']);
  });

  describe('keep-alive for streaming calls (GATEHOUSE_SSE_KEEPALIVE)', () => {
    const manualQueue = (clock: ManualClock) => manualScheduler(clock, { maxInflight: 1, queueTimeoutMs: 600_000 });

    /** A streaming call whose response bytes are collected as they arrive. */
    function streamingCall(gateway: TestGateway, path: string, body: object, headers: Record<string, string> = {}) {
      const chunks: string[] = [];
      let onChunk: () => void = () => {};
      const head = new Promise<IncomingMessage>((resolve, reject) => {
        const req = request(`${gateway.url}${path}`, {
          method: 'POST',
          headers: { 'content-type': 'application/json', ...headers },
        });
        req.on('response', (res) => {
          res.setEncoding('utf8');
          res.on('data', (c: string) => {
            chunks.push(c);
            onChunk();
          });
          resolve(res);
        });
        req.on('error', reject);
        req.end(JSON.stringify(body));
      });
      const ended = head.then((res) => new Promise<void>((resolve) => res.on('end', () => resolve())));
      return {
        head,
        ended,
        text: () => chunks.join(''),
        async until(predicate: (text: string) => boolean): Promise<void> {
          while (!predicate(chunks.join(''))) await new Promise<void>((resolve) => (onChunk = resolve));
        },
      };
    }

    it("opens the stream with 200 and a comment while the call waits, then passes llama-swap's bytes on unchanged", async () => {
      const clock = new ManualClock();
      const { upstream, gateway } = await setUp({ sseKeepAliveMs: 10_000 }, manualQueue(clock));
      const running = chat(gateway, 'running', 'qwen');
      await upstream.arrived(1);
      const call = streamingCall(gateway, '/v1/chat/completions', { model: 'qwen', stream: true, messages: [] });
      await waitingCount(gateway, 1);
      clock.advance(10_000);
      const res = await call.head;
      expect(res.statusCode).toBe(200);
      expect(res.headers['content-type']).toMatch(/^text\/event-stream/);
      await call.until((t) => t.includes('\n\n'));
      expect(call.text()).toBe(': gatehouse queued position=1\n\n');
      clock.advance(10_000);
      await call.until((t) => t.split('\n\n').length > 2);
      upstream.arrivals[0]!.answer();
      await running;
      await upstream.arrived(2);
      clock.advance(10_000);
      await call.until((t) => t.includes('loading'));
      upstream.arrivals[1]!.stream();
      await call.ended;
      expect(call.text()).toBe(
        ': gatehouse queued position=1\n\n' +
          ': gatehouse queued position=1\n\n' +
          ': gatehouse loading model=qwen elapsed=10s\n\n' +
          STREAM_BODY,
      );
    });

    it('lets an OpenAI SDK stream that waited behind a full queue, with comments, finish normally', async () => {
      const clock = new ManualClock();
      const { upstream, gateway } = await setUp({ sseKeepAliveMs: 1_000 }, manualQueue(clock));
      const running = chat(gateway, 'running', 'qwen');
      await upstream.arrived(1);
      const client = new OpenAI({ baseURL: `${gateway.url}/v1`, apiKey: 'unused', maxRetries: 0 });
      const text = (async () => {
        const stream = await client.chat.completions.create({ model: 'qwen', stream: true, messages: [] });
        let out = '';
        for await (const chunk of stream) out += chunk.choices[0]?.delta.content ?? '';
        return out;
      })();
      await waitingCount(gateway, 1);
      for (let second = 0; second < 3; second++) clock.advance(1_000);
      upstream.arrivals[0]!.answer();
      await running;
      (await upstream.arrived(2))[1]!.stream();
      expect(await text).toBe('Hello');
    });

    it('never opens a non-streaming call early', async () => {
      const clock = new ManualClock();
      const { upstream, gateway } = await setUp({ sseKeepAliveMs: 10_000 }, manualQueue(clock));
      const running = chat(gateway, 'running', 'qwen');
      await upstream.arrived(1);
      const waiting = chat(gateway, 'plain', 'qwen');
      await waitingCount(gateway, 1);
      clock.advance(60_000);
      upstream.arrivals[0]!.answer();
      await upstream.arrived(2);
      upstream.arrivals[1]!.fail(500, 'the model failed to start');
      const res = await waiting;
      expect(res.status).toBe(500);
      await running;
    });

    it('keeps the real status of a streaming call that fails within the interval', async () => {
      const clock = new ManualClock();
      const { upstream, gateway } = await setUp({ sseKeepAliveMs: 10_000 }, manualQueue(clock));
      const call = streamingCall(gateway, '/v1/chat/completions', { model: 'nope', stream: true, messages: [] });
      (await upstream.arrived(1))[0]!.fail(404, 'no router for requested model');
      expect((await call.head).statusCode).toBe(404);
    });

    for (const format of ['openai', 'anthropic'] as const) {
      it(`ends a stream opened early with one error event in the ${format} format when llama-swap then fails`, async () => {
        const clock = new ManualClock();
        const { upstream, gateway } = await setUp({ sseKeepAliveMs: 5_000 }, manualQueue(clock));
        const call =
          format === 'openai'
            ? streamingCall(gateway, '/v1/chat/completions', { model: 'qwen', stream: true, messages: [] })
            : streamingCall(
                gateway,
                '/v1/messages',
                { model: 'qwen', stream: true, max_tokens: 5, messages: [] },
                { 'anthropic-version': '2023-06-01' },
              );
        await upstream.arrived(1);
        clock.advance(5_000);
        expect((await call.head).statusCode).toBe(200);
        await call.until((t) => t.includes('loading'));
        upstream.arrivals[0]!.fail(500, 'the model failed to start');
        await call.ended;
        const events = call.text().split('\n\n').filter(Boolean);
        expect(events[0]).toMatch(/^: gatehouse loading model=qwen elapsed=\d+s$/);
        expect(events).toHaveLength(2);
        if (format === 'openai') {
          expect(events[1]).toMatch(/^data: \{"error":\{/);
          expect(events[1]).toContain('the model failed to start');
        } else {
          expect(events[1]).toMatch(/^event: error\ndata: \{"type":"error","error":\{/);
        }
      });
    }
  });
});
