import { describe, expect, it } from 'vitest';
import { GatewayError } from '../../src/core/errors.js';
import { Scheduler, type Admission, type QueuedCall, type SchedulerOptions } from '../../src/queue/scheduler.js';
import { ManualClock } from './manual-clock.js';

function scheduler(options: Partial<SchedulerOptions> = {}) {
  const clock = new ManualClock();
  const queue = new Scheduler({
    maxInflight: 1,
    maxInflightPerModel: 0,
    swapFairnessMs: 30_000,
    queueTimeoutMs: 600_000,
    queueMax: 1000,
    clock,
    ...options,
  });
  return { queue, clock };
}

function call(id: string, model: string | undefined, priority = 0): QueuedCall {
  return { id, model, key: null, priority };
}

/** Admits `c` and notes, in `order`, when it is let through. */
function enter(queue: Scheduler, c: QueuedCall, order: string[]): Promise<Admission> {
  const admitted = queue.admit(c);
  const promise = admitted instanceof Promise ? admitted : Promise.resolve(admitted);
  return promise.then((a) => {
    order.push(c.id);
    return a;
  });
}

const turn = () => new Promise((resolve) => setImmediate(resolve));

describe('the admission queue', () => {
  it('lets every call straight through without caps, and shows them in flight', () => {
    const { queue } = scheduler({ maxInflight: 0 });
    const a = queue.admit(call('a', 'qwen'));
    const b = queue.admit(call('b', 'llama'));
    expect(a).not.toBeInstanceOf(Promise);
    expect(b).not.toBeInstanceOf(Promise);
    expect(queue.snapshot().map((e) => [e.id, e.phase, e.position])).toEqual([
      ['a', 'loading', null],
      ['b', 'loading', null],
    ]);
    (a as Admission).release();
    expect(queue.snapshot().map((e) => e.id)).toEqual(['b']);
  });

  it('holds a call while the cap is full and lets it through when a slot frees, with the time it waited', async () => {
    const { queue, clock } = scheduler();
    const order: string[] = [];
    const first = await enter(queue, call('first', 'qwen'), order);
    const second = enter(queue, call('second', 'qwen'), order);
    await turn();
    expect(order).toEqual(['first']);
    clock.advance(1500);
    first.release();
    const admitted = await second;
    expect(order).toEqual(['first', 'second']);
    expect(first.waitedMs).toBe(0);
    expect(admitted.waitedMs).toBe(1500);
  });

  it('caps each model on its own: another model still goes through', async () => {
    const { queue } = scheduler({ maxInflight: 0, maxInflightPerModel: 1 });
    const order: string[] = [];
    await enter(queue, call('qwen-1', 'qwen'), order);
    void enter(queue, call('qwen-2', 'qwen'), order);
    await enter(queue, call('llama-1', 'llama'), order);
    await turn();
    expect(order).toEqual(['qwen-1', 'llama-1']);
  });

  it('lets a higher key priority go first, then the loaded model, then arrival', async () => {
    const { queue } = scheduler();
    const order: string[] = [];
    const running = await enter(queue, call('running', 'qwen'), order);
    const waiting = [
      enter(queue, call('llama-early', 'llama'), order),
      enter(queue, call('qwen-late', 'qwen'), order),
      enter(queue, call('llama-urgent', 'llama', 5), order),
      enter(queue, call('qwen-later', 'qwen'), order),
    ];
    expect(
      queue
        .snapshot()
        .filter((e) => e.phase === 'queued')
        .map((e) => [e.id, e.position]),
    ).toEqual([
      ['llama-urgent', 1],
      ['qwen-late', 2],
      ['qwen-later', 3],
      ['llama-early', 4],
    ]);
    running.release();
    for (const admitted of waiting) void admitted.then((a) => setImmediate(() => a.release()));
    await Promise.all(waiting);
    expect(order).toEqual(['running', 'llama-urgent', 'llama-early', 'qwen-late', 'qwen-later']);
  });

  it('lets a call that has waited past the fairness window go before calls for the loaded model', async () => {
    const { queue, clock } = scheduler({ swapFairnessMs: 30_000 });
    const order: string[] = [];
    const running = await enter(queue, call('running', 'qwen'), order);
    const swap = enter(queue, call('needs-swap', 'llama'), order);
    clock.advance(10_000);
    const loaded = enter(queue, call('loaded', 'qwen'), order);
    expect(queue.snapshot()[1]?.id).toBe('loaded');
    clock.advance(20_001);
    expect(queue.snapshot()[1]?.id).toBe('needs-swap');
    running.release();
    (await swap).release();
    await loaded;
    expect(order).toEqual(['running', 'needs-swap', 'loaded']);
  });

  it('prefers the models llama-swap reports running', async () => {
    const { queue } = scheduler();
    const order: string[] = [];
    const running = await enter(queue, call('running', undefined), order);
    void enter(queue, call('qwen', 'qwen'), order);
    void enter(queue, call('llama', 'llama'), order);
    queue.setLoaded(new Set(['llama']));
    running.release();
    await turn();
    expect(order).toEqual(['running', 'llama']);
  });

  it("trusts llama-swap's report over the last model admitted once it has one", async () => {
    const { queue } = scheduler();
    const order: string[] = [];
    const running = await enter(queue, call('running', 'qwen'), order);
    void enter(queue, call('qwen', 'qwen'), order);
    void enter(queue, call('llama', 'llama'), order);
    expect(
      queue
        .snapshot()
        .filter((e) => e.phase === 'queued')
        .map((e) => e.id),
    ).toEqual(['qwen', 'llama']);
    // An operator swapped to llama from the dashboard while qwen's call ran.
    queue.setLoaded(new Set(['llama']));
    running.release();
    await turn();
    expect(order).toEqual(['running', 'llama']);
  });

  it('shows calls waiting for their key among the waiting calls, after the queue, until they leave', async () => {
    const { queue } = scheduler();
    await enter(queue, call('running', 'qwen'), []);
    void enter(queue, call('turn', 'qwen'), []);
    const leave = queue.holdOutside({ ...call('key-slot', undefined), key: { id: 'key_1', name: 'ci' } });
    const waiting = () => queue.snapshot().filter((e) => e.phase === 'queued');
    expect(waiting().map((e) => [e.id, e.position, e.waitingFor])).toEqual([
      ['turn', 1, 'turn'],
      ['key-slot', null, 'key'],
    ]);
    leave();
    expect(waiting().map((e) => e.id)).toEqual(['turn']);
  });

  it('refuses a call at once with queue_full when as many as allowed are waiting, with Retry-After', async () => {
    const { queue } = scheduler({ queueMax: 1 });
    await enter(queue, call('running', 'qwen'), []);
    void enter(queue, call('waiting', 'qwen'), []);
    let refused: unknown;
    try {
      void queue.admit(call('one-too-many', 'qwen'));
    } catch (error) {
      refused = error;
    }
    expect(refused).toBeInstanceOf(GatewayError);
    expect((refused as GatewayError).code).toBe('queue_full');
    expect((refused as GatewayError).status).toBe(503);
    expect(Number((refused as GatewayError).headers['retry-after'])).toBeGreaterThan(0);
    expect(queue.waitingCount).toBe(1);
  });

  it('refuses a key past GATEHOUSE_QUEUE_MAX_PER_KEY while other keys, and calls without a key, still wait', async () => {
    const { queue } = scheduler({ queueMax: 10, queueMaxPerKey: 2 });
    const keyed = (id: string, keyId: string): QueuedCall => ({ ...call(id, 'qwen'), key: { id: keyId, name: keyId } });
    const order: string[] = [];
    const running = await enter(queue, keyed('running', 'greedy'), order);
    const waiting = [
      enter(queue, keyed('greedy-1', 'greedy'), order),
      enter(queue, keyed('greedy-2', 'greedy'), order),
    ];
    expect(() => queue.admit(keyed('greedy-3', 'greedy'))).toThrow(
      expect.objectContaining({ code: 'queue_full', headers: { 'retry-after': '10' } }),
    );
    waiting.push(enter(queue, keyed('other-1', 'other'), order));
    for (const id of ['open-1', 'open-2', 'open-3']) waiting.push(enter(queue, call(id, 'qwen'), order));
    expect(queue.waitingCount).toBe(6);
    // Its share frees as its calls go through.
    running.release();
    (await waiting[0]!).release();
    waiting.push(enter(queue, keyed('greedy-3', 'greedy'), order));
    for (let i = 1; i < waiting.length; i++) (await waiting[i]!).release();
    expect(order).toEqual(['running', 'greedy-1', 'greedy-2', 'other-1', 'open-1', 'open-2', 'open-3', 'greedy-3']);
  });

  it('counts every key of one person against one share, so more keys do not buy more of the queue', async () => {
    const { queue } = scheduler({ queueMax: 10, queueMaxPerKey: 2 });
    const owned = (id: string, keyId: string, owner: string): QueuedCall => ({
      ...call(id, 'qwen'),
      key: { id: keyId, name: keyId, owner },
    });
    const order: string[] = [];
    const running = await enter(queue, owned('running', 'k1', 'mallory'), order);
    const waiting = [
      enter(queue, owned('k1-wait', 'k1', 'mallory'), order),
      enter(queue, owned('k2-wait', 'k2', 'mallory'), order),
    ];
    expect(() => queue.admit(owned('k3-wait', 'k3', 'mallory'))).toThrow(
      expect.objectContaining({ code: 'queue_full' }),
    );
    waiting.push(enter(queue, owned('alice-wait', 'k4', 'alice'), order));
    expect(queue.waitingCount).toBe(3);
    running.release();
    for (const w of waiting) (await w).release();
    expect(order).toEqual(['running', 'k1-wait', 'k2-wait', 'alice-wait']);
  });

  it('gives each key half of GATEHOUSE_QUEUE_MAX (at least 1) when GATEHOUSE_QUEUE_MAX_PER_KEY is unset, and none with 0', async () => {
    const keyed = (id: string): QueuedCall => ({ ...call(id, 'qwen'), key: { id: 'k', name: 'k' } });
    const fill = (queue: Scheduler): number => {
      let waiting = 0;
      try {
        for (;;) {
          void queue.admit(keyed(`w${waiting}`));
          waiting++;
        }
      } catch {
        return waiting - 1; // the first call went straight through
      }
    };
    expect(fill(scheduler({ queueMax: 7 }).queue)).toBe(3);
    expect(fill(scheduler({ queueMax: 1 }).queue)).toBe(1);
    expect(fill(scheduler({ queueMax: 7, queueMaxPerKey: 0 }).queue)).toBe(7);
  });

  it('gives up on a call that waited the queue timeout with queue_timeout, and never lets it through', async () => {
    const { queue, clock } = scheduler({ queueTimeoutMs: 60_000 });
    const order: string[] = [];
    const running = await enter(queue, call('running', 'qwen'), order);
    const waiting = enter(queue, call('late', 'qwen'), order);
    clock.advance(59_999);
    expect(queue.waitingCount).toBe(1);
    clock.advance(1);
    const error = (await waiting.catch((e: unknown) => e)) as GatewayError;
    expect(error.code).toBe('queue_timeout');
    expect(error.headers['retry-after']).toBeDefined();
    running.release();
    await turn();
    expect(order).toEqual(['running']);
    expect(queue.snapshot()).toEqual([]);
  });

  it('takes a call whose client left out of the queue at once, and lets the next one through', async () => {
    const { queue } = scheduler();
    const order: string[] = [];
    const running = await enter(queue, call('running', 'qwen'), order);
    let leave: (() => void) | undefined;
    const gone = queue.admit(call('gone', 'qwen'), (l) => (leave = l)) as Promise<Admission>;
    const next = enter(queue, call('next', 'qwen'), order);
    leave!();
    await expect(gone).rejects.toBeInstanceOf(GatewayError);
    expect(queue.snapshot().map((e) => e.id)).toEqual(['running', 'next']);
    running.release();
    await next;
    expect(order).toEqual(['running', 'next']);
  });

  it('gives a slot back once only, however often release is called', async () => {
    const { queue } = scheduler({ maxInflight: 2 });
    const order: string[] = [];
    const a = await enter(queue, call('a', 'qwen'), order);
    await enter(queue, call('b', 'qwen'), order);
    void enter(queue, call('c', 'qwen'), order);
    void enter(queue, call('d', 'qwen'), order);
    a.release();
    a.release();
    await turn();
    expect(order).toEqual(['a', 'b', 'c']);
  });
});
