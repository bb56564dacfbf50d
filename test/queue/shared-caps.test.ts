/**
 * The queue's caps with Redis: two gateways in front of one upstream count the same slots, so
 * GATEHOUSE_MAX_INFLIGHT=1 means one call at llama-swap for both together, and a per-model cap
 * holds only calls of that model. Without Redis answering, each replica counts its own and says so.
 */
import { randomBytes } from 'node:crypto';
import { afterEach, describe, expect, it } from 'vitest';
import type { QueueView } from '../../src/admin-api/types.js';
import type { Settings } from '../../src/settings/index.js';
import { startTestGateway, type TestGateway } from '../helpers/gateway.js';
import { json, rawRequest, type RawResponse } from '../helpers/http.js';
import { startHoldingUpstream, type HoldingUpstream } from '../helpers/holding-upstream.js';

const ADMIN = 'shared-caps-admin-token';
const SHARED_REDIS = 'redis://127.0.0.1:6379/0';

let cleanup: Array<() => Promise<void> | void> = [];
afterEach(async () => {
  for (const c of cleanup.reverse()) await c();
  cleanup = [];
});

async function replicas(count: number, caps: Partial<Settings>, redisUrl = SHARED_REDIS) {
  const upstream = await startHoldingUpstream();
  cleanup.push(() => upstream.close());
  const redisPrefix = `gh-caps-${process.pid}-${randomBytes(3).toString('hex')}:`;
  const gateways: TestGateway[] = [];
  for (let i = 0; i < count; i++) {
    const gateway = await startTestGateway(
      upstream.url,
      { adminToken: ADMIN, logLevel: 'warn', redisUrl: new URL(redisUrl).href, redisPrefix, ...caps },
      {},
      { withStore: true },
    );
    cleanup.push(() => gateway.close());
    gateways.push(gateway);
  }
  return { upstream, gateways };
}

function chat(gateway: TestGateway, id: string, model: string): Promise<RawResponse> {
  return rawRequest(`${gateway.url}/v1/chat/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'x-request-id': id },
    body: JSON.stringify({ model, messages: [{ role: 'user', content: 'hi' }] }),
  });
}

/** Resolves once the gateway's queue shows `id` waiting. */
function waiting(gateway: TestGateway, id: string): Promise<void> {
  const queue = gateway.app.queue;
  return new Promise((resolve) => {
    const check = () => {
      if (!queue.snapshot().some((e) => e.id === id && e.phase === 'queued')) return;
      stop();
      resolve();
    };
    const stop = queue.onChange(check);
    check();
  });
}

async function queueView(gateway: TestGateway): Promise<QueueView> {
  const res = await rawRequest(`${gateway.url}/api/queue`, { headers: { authorization: `Bearer ${ADMIN}` } });
  return json(res.body) as QueueView;
}

const arrivalIds = (upstream: HoldingUpstream) => upstream.arrivals.map((c) => c.id);

describe('queue caps shared by replicas through Redis', () => {
  it('lets one call at a time reach llama-swap through two gateways with GATEHOUSE_MAX_INFLIGHT=1', async () => {
    const { upstream, gateways } = await replicas(2, { maxInflight: 1 });
    const [a, b] = gateways as [TestGateway, TestGateway];
    const first = chat(a, 'first', 'qwen');
    await upstream.arrived(1);
    const second = chat(b, 'second', 'qwen');
    await waiting(b, 'second');
    expect(arrivalIds(upstream)).toEqual(['first']);
    const view = await queueView(b);
    expect(view).toMatchObject({ scope: 'replica', caps: 'shared', inflight: [] });
    expect(view.waiting.map((c) => [c.id, c.position])).toEqual([['second', 1]]);

    upstream.answer(0);
    expect((await first).status).toBe(200);
    await upstream.arrived(2);
    expect(arrivalIds(upstream)).toEqual(['first', 'second']);
    upstream.answer(1);
    const answered = await second;
    expect(answered.status).toBe(200);
    expect(Number(answered.headers['x-gatehouse-queue-ms'])).toBeGreaterThan(0);
  });

  it("holds only the capped model's calls: another model passes while another replica serves the first", async () => {
    const { upstream, gateways } = await replicas(2, { maxInflightPerModel: 1 });
    const [a, b] = gateways as [TestGateway, TestGateway];
    const qwenOnA = chat(a, 'qwen-a', 'qwen');
    await upstream.arrived(1);
    const qwenOnB = chat(b, 'qwen-b', 'qwen');
    await waiting(b, 'qwen-b');
    const llamaOnB = chat(b, 'llama-b', 'llama');
    await upstream.arrived(2);
    expect(arrivalIds(upstream)).toEqual(['qwen-a', 'llama-b']);

    upstream.answer(1);
    upstream.answer(0);
    await upstream.arrived(3);
    expect(arrivalIds(upstream)).toEqual(['qwen-a', 'llama-b', 'qwen-b']);
    upstream.answer(2);
    expect((await Promise.all([qwenOnA, qwenOnB, llamaOnB])).map((r) => r.status)).toEqual([200, 200, 200]);
  });

  it("counts each replica's own calls when Redis does not answer, and says so", async () => {
    const { upstream, gateways } = await replicas(1, { maxInflight: 1 }, 'redis://127.0.0.1:1/0');
    const [a] = gateways as [TestGateway];
    const first = chat(a, 'first', 'qwen');
    await upstream.arrived(1);
    const second = chat(a, 'second', 'qwen');
    await waiting(a, 'second');
    expect(await queueView(a)).toMatchObject({ caps: 'replica', waiting: [{ id: 'second', position: 1 }] });
    upstream.answer(0);
    await upstream.arrived(2);
    upstream.answer(1);
    expect((await Promise.all([first, second])).map((r) => r.status)).toEqual([200, 200]);
  });
});
