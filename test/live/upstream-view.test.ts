/**
 * The shared live view against the llama-swap simulator: one subscription however many watch,
 * model states from llama-swap's events, logs joined across a reload, the reason of a loss,
 * and polling for a llama-swap without `/api/events`.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { DEMO_CONFIG, startSimulator } from '../fakes/llama-swap/index.js';
import { UpstreamView, type ViewEvent } from '../../src/live/upstream-view.js';
import { createLlamaSwapClient } from '../../src/management-client/llama-swap-client.js';

const cleanups: Array<() => Promise<void> | void> = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

async function setUp(options: Parameters<typeof startSimulator>[0] = {}) {
  const sim = await startSimulator({ config: DEMO_CONFIG, ...options });
  cleanups.push(() => sim.close());
  const client = createLlamaSwapClient({ baseUrl: new URL(sim.url) });
  cleanups.push(() => client.close());
  const view = new UpstreamView({ client, retryMinMs: 20, retryMaxMs: 100, pollMs: 200 });
  cleanups.push(() => view.close());
  return { sim, client, view };
}

/** Records a watcher's events and resolves when one matches (bounded). */
function watcher(view: UpstreamView) {
  const events: ViewEvent[] = [];
  const waiters = new Set<() => void>();
  const stop = view.watch((event) => {
    events.push(event);
    for (const waiter of [...waiters]) waiter();
  });
  cleanups.push(stop);
  const until = <T extends ViewEvent>(match: (event: ViewEvent) => event is T, timeoutMs = 3000) =>
    new Promise<T>((resolve, reject) => {
      let seen = 0;
      const check = () => {
        for (; seen < events.length; seen++) {
          const event = events[seen]!;
          if (match(event)) {
            clearTimeout(timer);
            waiters.delete(check);
            return resolve(event);
          }
        }
      };
      const timer = setTimeout(() => {
        waiters.delete(check);
        reject(new Error(`no matching event in ${timeoutMs} ms; got ${JSON.stringify(events).slice(0, 1500)}`));
      }, timeoutMs);
      waiters.add(check);
      check();
    });
  return { events, until, stop };
}

const modelsWhere =
  (pred: (list: Extract<ViewEvent, { name: 'models' }>['data']) => boolean) =>
  (e: ViewEvent): e is Extract<ViewEvent, { name: 'models' }> =>
    e.name === 'models' && pred(e.data);
const stateOf = (list: Extract<ViewEvent, { name: 'models' }>['data'], id: string) =>
  list.models.find((m) => m.id === id)?.state;

describe('the shared view of llama-swap', () => {
  it('serves any number of watchers from one events subscription and asks nothing more while idle', async () => {
    const { sim, view } = await setUp();
    const watchers = [watcher(view), watcher(view), watcher(view), watcher(view), watcher(view)];
    await watchers[0]!.until(modelsWhere((l) => l.reachable));
    await view.current();
    expect(view.watchers).toBe(5);
    const eventsRequests = sim.received.filter((r) => r.path === '/api/events');
    expect(eventsRequests).toHaveLength(1);
    const before = sim.received.length;
    sim.log('proxy', '[INFO] something happened');
    for (const w of watchers)
      await w.until((e): e is ViewEvent => e.name === 'log' && e.data.text.includes('something happened'));
    expect(sim.received.length).toBe(before);
  });

  it("follows model states from llama-swap's events, with the model's TTL read once", async () => {
    const { sim, view, client } = await setUp({ knobs: { loadDelayMs: 50 } });
    const w = watcher(view);
    await w.until(modelsWhere((l) => l.reachable && stateOf(l, 'qwen3-8b') === 'stopped'));
    await view.current();
    const listReads = () => sim.received.filter((r) => r.path === '/v1/models').length;
    const reads = listReads();
    await sim.load('qwen3-8b');
    const ready = await w.until(modelsWhere((l) => stateOf(l, 'qwen3-8b') === 'ready'));
    expect(ready.data.models.find((m) => m.id === 'qwen3-8b')?.kind).toBe('model');
    const expectedTtl = (await client.running()).find((r) => r.model === 'qwen3-8b')?.ttl;
    await w.until(modelsWhere((l) => l.models.find((m) => m.id === 'qwen3-8b')?.ttl === expectedTtl));
    await sim.unload('qwen3-8b');
    await w.until(modelsWhere((l) => stateOf(l, 'qwen3-8b') === 'stopped'));
    expect(listReads()).toBe(reads);
  });

  it('joins the proxy log across a config reload: one restart gap, no line lost or repeated', async () => {
    const { sim, view } = await setUp({ reloadStatusDelayMs: 10 });
    const w = watcher(view);
    sim.log('proxy', '[INFO] before the reload');
    await w.until((e): e is ViewEvent => e.name === 'log' && e.data.text.includes('before the reload'));
    await sim.reload();
    sim.log('proxy', '[INFO] written while reconnecting');
    await w.until((e): e is ViewEvent => e.name === 'log' && e.data.text.includes('written while reconnecting'));
    const gaps = w.events.filter((e) => e.name === 'gap');
    expect(gaps.map((g) => g.data)).toEqual([{ source: null, kind: 'restart', reason: expect.any(String) }]);
    expect(w.events.some((e) => e.name === 'history')).toBe(false);
    const text = view.snapshot().logs.proxy;
    expect(text.split('before the reload')).toHaveLength(2);
    expect(text.split('written while reconnecting')).toHaveLength(2);
  });

  it('says llama-swap is lost with the reason, then live again once it is back', async () => {
    const { sim, view } = await setUp();
    const w = watcher(view);
    await w.until((e): e is ViewEvent => e.name === 'upstream' && e.data.state === 'live');
    const port = sim.port;
    await sim.close();
    const lost = await w.until((e): e is Extract<ViewEvent, { name: 'gap' }> => e.name === 'gap');
    expect(lost.data).toMatchObject({ kind: 'lost', reason: expect.stringContaining('ECONNREFUSED') });
    const down = await w.until(
      (e): e is Extract<ViewEvent, { name: 'upstream' }> => e.name === 'upstream' && e.data.state === 'unavailable',
    );
    expect(down.data).toMatchObject({ reachable: false, error: expect.stringContaining('ECONNREFUSED') });
    expect(view.snapshot().models).toMatchObject({ reachable: false, models: [] });
    const again = await startSimulator({ config: DEMO_CONFIG, port });
    cleanups.push(() => again.close());
    await w.until((e): e is ViewEvent => e.name === 'upstream' && e.data.state === 'live' && e.data.reachable);
    await w.until(modelsWhere((l) => l.reachable && l.models.length > 0));
    const names = w.events.map((e) => (e.name === 'gap' ? `gap:${e.data.kind}` : e.name));
    expect(names.filter((n) => n.startsWith('gap:'))).toEqual(['gap:lost', 'gap:back']);
  });

  it('polls the model list slowly when llama-swap has no /api/events, and follows its logs as text', async () => {
    const { sim, view } = await setUp({ knobs: { eventsRoute: false } });
    const w = watcher(view);
    await w.until((e): e is ViewEvent => e.name === 'upstream' && e.data.state === 'live' && e.data.mode === 'polling');
    await sim.load('llama-3.2-3b');
    await w.until(modelsWhere((l) => stateOf(l, 'llama-3.2-3b') === 'ready'));
    sim.log('proxy', '[INFO] a polled line');
    await w.until((e): e is ViewEvent => e.name === 'log' && e.data.text.includes('a polled line'));
  });

  it('answers a read without a watcher and reads the list again after a refresh', async () => {
    const { sim, view } = await setUp();
    const first = await view.current();
    expect(first.models).toMatchObject({ reachable: true });
    expect(first.upstream).toMatchObject({ state: 'live', reachable: true, version: { version: 'v250-sim' } });
    await sim.load('qwen3-8b');
    await view.refresh();
    expect(view.snapshot().models?.models.find((m) => m.id === 'qwen3-8b')?.state).toBe('ready');
  });
});
