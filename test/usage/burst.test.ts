/**
 * A burst of 10,000 calls over many concurrent loopback connections loses no usage record
 * when the store is healthy: every call is written exactly once, nothing is dropped, and the
 * queue drains on its own (no flush from the test).
 */
import { Agent, request } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DEMO_CONFIG, startSimulator, type Simulator } from '../fakes/llama-swap/index.js';
import type { TestGateway } from '../helpers/gateway.js';
import { rawRequest } from '../helpers/http.js';
import { parsePrometheusText, valueOf } from './prometheus-text.js';
import { startUsageGateway } from './usage-helpers.js';

const CALLS = 10_000;
const CONNECTIONS = 64;

let sim: Simulator;
let gateway: TestGateway;
beforeAll(async () => {
  // llama-swap answers 429 beyond 10 calls in flight per model by default; this burst has 64.
  const models = DEMO_CONFIG.models as Record<string, Record<string, unknown>>;
  const config = {
    ...DEMO_CONFIG,
    models: { ...models, 'qwen3-8b': { ...models['qwen3-8b'], concurrencyLimit: 1000 } },
  };
  sim = await startSimulator({ config, knobs: { tokens: 2 }, recordLimit: 100 });
  gateway = await startUsageGateway(sim.url);
});
afterAll(async () => {
  await gateway?.close();
  await sim?.close();
});

function call(agent: Agent, i: number): Promise<number> {
  const stream = i % 5 === 0;
  const body = JSON.stringify({ model: 'qwen', stream, messages: [{ role: 'user', content: `burst ${i}` }] });
  return new Promise((resolve, reject) => {
    const req = request(
      `${gateway.url}/v1/chat/completions`,
      { method: 'POST', agent, headers: { 'content-type': 'application/json', 'x-request-id': `burst-${i}` } },
      (res) => {
        res.resume();
        res.on('end', () => resolve(res.statusCode ?? 0));
        res.on('error', reject);
      },
    );
    req.on('error', reject);
    req.end(body);
  });
}

describe('a burst of 10,000 calls', () => {
  it(
    'is recorded completely, once per call, with no drop, by the writer on its own',
    { timeout: 120_000 },
    async () => {
      const agent = new Agent({ keepAlive: true, maxSockets: CONNECTIONS });
      let next = 0;
      const statuses = new Map<number, number>();
      try {
        await Promise.all(
          Array.from({ length: CONNECTIONS }, async () => {
            while (next < CALLS) {
              const status = await call(agent, next++);
              statuses.set(status, (statuses.get(status) ?? 0) + 1);
            }
          }),
        );
      } finally {
        agent.destroy();
      }
      expect(statuses).toEqual(new Map([[200, CALLS]]));

      // The writer drains by itself: full batches at once, the rest on its timer.
      const store = gateway.store!;
      const deadline = Date.now() + 10_000;
      while ((await store.usage.count()) < CALLS && Date.now() < deadline) await new Promise((r) => setTimeout(r, 100));
      expect(await store.usage.count()).toBe(CALLS);

      const rows = await store.usage.list({ limit: CALLS + 1 });
      const ids = new Set(rows.map((r) => r.requestId));
      expect(ids.size).toBe(CALLS);
      expect(rows.filter((r) => r.streamed)).toHaveLength(CALLS / 5);
      expect(rows.every((r) => r.outputTokens === 2 && r.status === 200)).toBe(true);

      const metrics = parsePrometheusText((await rawRequest(`${gateway.url}/metrics`)).body.toString());
      expect(valueOf(metrics, 'gatehouse_usage_records_written_total')).toBe(CALLS);
      expect(valueOf(metrics, 'gatehouse_usage_records_dropped_total')).toBe(0);
      expect(valueOf(metrics, 'gatehouse_usage_queue_length')).toBe(0);
      expect(
        valueOf(metrics, 'gatehouse_requests_total', { model: 'qwen', key: 'none', status: '200', door: 'v1' }),
      ).toBe(CALLS);
    },
  );
});
