/**
 * The queue learns from llama-swap which models run: while calls wait, it follows the shared
 * view of llama-swap (the simulator here), and a call for the model llama-swap reports loaded
 * goes before one that would make it swap, even when another model was admitted last.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { feedLoadedModels } from '../../src/live/loaded-models-feed.js';
import { UpstreamView } from '../../src/live/upstream-view.js';
import { Scheduler, type QueuedCall } from '../../src/queue/scheduler.js';
import { createLlamaSwapClient } from '../../src/management-client/llama-swap-client.js';
import { DEMO_CONFIG, startSimulator } from '../fakes/llama-swap/index.js';
import { ManualClock } from '../queue/manual-clock.js';

const cleanups: Array<() => unknown> = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

const call = (id: string, model: string): QueuedCall => ({ id, model, key: null, priority: 0 });

function until(queue: Scheduler, done: () => boolean): Promise<void> {
  return new Promise((resolve) => {
    const check = () => {
      if (!done()) return;
      stop();
      resolve();
    };
    const stop = queue.onChange(check);
    check();
  });
}

describe('the loaded models fed to the queue', () => {
  it('puts a call for the model llama-swap runs first, and stops following once nobody waits', async () => {
    const sim = await startSimulator({ config: DEMO_CONFIG, knobs: { loadDelayMs: 0 } });
    cleanups.push(() => sim.close());
    const client = createLlamaSwapClient({ baseUrl: new URL(sim.url) });
    const view = new UpstreamView({ client, lingerMs: 0 });
    cleanups.push(
      () => view.close(),
      () => client.close(),
    );
    // llama-swap runs llama-3.2-3b: a call sent to it directly, not through the queue.
    const direct = await fetch(`${sim.url}/v1/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'llama-3.2-3b', messages: [{ role: 'user', content: 'hi' }] }),
    });
    expect(direct.status).toBe(200);

    const queue = new Scheduler({
      maxInflight: 1,
      maxInflightPerModel: 0,
      swapFairnessMs: 30_000,
      queueTimeoutMs: 600_000,
      queueMax: 100,
      clock: new ManualClock(),
    });
    cleanups.push(feedLoadedModels(queue, view));
    const running = queue.admit(call('running', 'qwen3-8b'));
    if (running instanceof Promise) throw new Error('the first call should go straight through');
    const qwen = call('qwen-next', 'qwen3-8b');
    const llama = call('llama-next', 'llama-3.2-3b');
    void queue.admit(qwen);
    const llamaTurn = queue.admit(llama);
    expect(view.watchers).toBe(1);

    await until(queue, () => queue.positionOf(llama) === 1);
    expect(queue.positionOf(qwen)).toBe(2);

    running.release();
    await until(queue, () => queue.waitingCount === 1);
    const forwarded = () => queue.snapshot().filter((e) => e.phase !== 'queued');
    expect(forwarded().map((e) => e.id)).toEqual(['llama-next']);
    expect(view.watchers).toBe(1);

    (await llamaTurn).release();
    await until(queue, () => queue.waitingCount === 0);
    expect(forwarded().map((e) => e.id)).toEqual(['qwen-next']);
    expect(view.watchers).toBe(0);
  });
});
