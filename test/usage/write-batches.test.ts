/**
 * How a gateway on SQLite writes its usage records: in transactions of at most the store's
 * `maxAppendRecords`, because each one runs on the event loop and every call arriving meanwhile
 * waits for it. Nothing is lost by the smaller transactions.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DEMO_CONFIG, startSimulator, type Simulator } from '../fakes/llama-swap/index.js';
import type { TestGateway } from '../helpers/gateway.js';
import { rawRequest } from '../helpers/http.js';
import { startUsageGateway } from './usage-helpers.js';

const CALLS = 70;

let sim: Simulator;
let gateway: TestGateway;
beforeAll(async () => {
  sim = await startSimulator({ config: DEMO_CONFIG, knobs: { tokens: 2 } });
  // No timer flush during the test: only full batches and the explicit flush seal a batch.
  gateway = await startUsageGateway(sim.url, {}, { usageOptions: { writer: { flushIntervalMs: 60_000 } } });
});
afterAll(async () => {
  await gateway?.close();
  await sim?.close();
});

describe('usage writes on SQLite', () => {
  it('go out in transactions of at most the store’s limit, and all records arrive', async () => {
    const usage = gateway.store!.usage;
    expect(usage.maxAppendRecords).toBe(32);
    const append = usage.append.bind(usage);
    const sizes: number[] = [];
    usage.append = (records) => {
      sizes.push(records.length);
      return append(records);
    };
    const before = await usage.count();
    for (let sent = 0; sent < CALLS; sent += 10) {
      const answers = await Promise.all(
        Array.from({ length: Math.min(10, CALLS - sent) }, () =>
          rawRequest(`${gateway.url}/v1/chat/completions`, {
            method: 'POST',
            headers: { 'content-type': 'application/json' },
            body: JSON.stringify({ model: 'qwen', messages: [{ role: 'user', content: 'hi' }] }),
          }),
        ),
      );
      expect(answers.map((a) => a.status)).toEqual(answers.map(() => 200));
    }
    // A call is recorded once its response has closed, just after the client read it.
    for (let tries = 0; tries < 100 && (await usage.count()) - before < CALLS; tries++) await gateway.app.usage.flush();
    expect((await usage.count()) - before).toBe(CALLS);
    expect(sizes.reduce((a, b) => a + b, 0)).toBe(CALLS);
    expect(Math.max(...sizes)).toBeLessThanOrEqual(32);
  });
});
