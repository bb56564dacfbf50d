/**
 * The admission queue against the llama-swap simulator: one model loaded at a time, loads that
 * cost time, and llama-swap's own 429s in both of its error shapes.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { startSimulator, type Simulator } from '../fakes/llama-swap/index.js';
import type { Settings } from '../../src/settings/index.js';
import { startTestGateway, type TestGateway } from '../helpers/gateway.js';
import { rawRequest } from '../helpers/http.js';

const CONFIG = {
  models: {
    alpha: { cmd: 'llama-server --port ${PORT} -m alpha.gguf', concurrencyLimit: 1 },
    beta: { cmd: 'llama-server --port ${PORT} -m beta.gguf' },
  },
};

let sim: Simulator | undefined;
let gateway: TestGateway | undefined;
afterEach(async () => {
  await gateway?.close();
  await sim?.close();
  gateway = undefined;
  sim = undefined;
});

async function setUp(overrides: Partial<Settings>, config: Record<string, unknown> = CONFIG) {
  sim = await startSimulator({ config, knobs: { loadDelayMs: 20 } });
  gateway = await startTestGateway(sim.url, { logLevel: 'warn', ...overrides });
  return { sim, gateway };
}

function chat(gw: TestGateway, model: string, id: string) {
  return rawRequest(`${gw.url}/v1/chat/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'x-request-id': id },
    body: JSON.stringify({ model, max_tokens: 4, messages: [{ role: 'user', content: 'hi' }] }),
  });
}

describe('the admission queue in front of the llama-swap simulator', () => {
  for (const shape of ['envelope', 'legacy'] as const) {
    it(`answers every call when llama-swap's concurrencyLimit refuses some with 429 (${shape} shape)`, async () => {
      const { sim, gateway } = await setUp({});
      sim.knobs.errorShape = shape;
      sim.knobs.tokensPerSecond = 40;
      const answers = await Promise.all([1, 2, 3].map((n) => chat(gateway, 'alpha', `call-${n}`)));
      expect(answers.map((a) => a.status)).toEqual([200, 200, 200]);
      expect(answers.every((a) => a.headers['x-gatehouse-queue-ms'] !== undefined)).toBe(true);
      // llama-swap did refuse some of them: the client never saw it.
      expect(sim.received.some((r) => r.status === 429)).toBe(true);
    });
  }

  it("answers every call when llama-swap's globalConcurrencyLimit refuses some", async () => {
    const { sim, gateway } = await setUp({}, { ...CONFIG, globalConcurrencyLimit: 1 });
    sim.knobs.tokensPerSecond = 40;
    const answers = await Promise.all(['alpha', 'beta', 'alpha'].map((m, n) => chat(gateway, m, `mixed-${n}`)));
    expect(answers.map((a) => a.status)).toEqual([200, 200, 200]);
    expect(sim.received.some((r) => r.status === 429)).toBe(true);
  });

  for (const [order, fairness, loads] of [
    ['the loaded model first', 30_000, 2],
    ['arrival order', 0, 5],
  ] as const) {
    it(`serves waiting calls with GATEHOUSE_MAX_INFLIGHT=1 in ${order}: ${loads} model loads`, async () => {
      const { sim, gateway } = await setUp({ maxInflight: 1, swapFairnessMs: fairness });
      // The first load is slow, so every other call is waiting in Gatehouse before it ends.
      sim.knobs.loadDelayMs = 1_000;
      const first = chat(gateway, 'alpha', 'first');
      await sim.waitForState('alpha', 'starting');
      const rest = ['beta', 'alpha', 'beta', 'alpha'].map((m, n) => chat(gateway, m, `then-${n}`));
      await sim.waitFor(() => gateway.app.queue.waitingCount === 4);
      sim.knobs.loadDelayMs = 10;
      const answers = await Promise.all([first, ...rest]);
      expect(answers.map((a) => a.status)).toEqual([200, 200, 200, 200, 200]);
      expect(sim.loads).toBe(loads);
    });
  }
});
