import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { startSimulator, type Simulator } from '../fakes/llama-swap/index.js';
import { BodyReader, chatBody, postJson, json } from './helpers.js';

const CONFIG = {
  models: {
    alpha: { cmd: 'llama-server --port ${PORT} -m alpha.gguf', name: 'Alpha', description: 'first' },
    beta: { cmd: 'llama-server --port ${PORT} -m beta.gguf' },
    shortlived: { cmd: 'llama-server --port ${PORT}', ttl: 0.15 },
    empty: { cmd: '', proxy: 'http://127.0.0.1:9999' },
  },
};

describe('process state machine and swapping', () => {
  let sim: Simulator;
  beforeEach(async () => {
    sim = await startSimulator({ config: CONFIG, knobs: { loadDelayMs: 60 } });
  });
  afterEach(() => sim.close());

  it('goes stopped → starting → ready on the first request and lists the model in /running', async () => {
    expect(sim.state('alpha')).toBe('stopped');
    const pending = postJson(`${sim.url}/v1/chat/completions`, chatBody('alpha'));
    await sim.waitForState('alpha', 'starting');
    const during = (await json(await fetch(`${sim.url}/running`))) as { running: unknown[] };
    expect(during.running).toEqual([
      {
        model: 'alpha',
        state: 'starting',
        cmd: 'llama-server --port 5800 -m alpha.gguf',
        proxy: 'http://localhost:5800',
        ttl: 0,
        name: 'Alpha',
        description: 'first',
      },
    ]);
    expect((await pending).status).toBe(200);
    expect(sim.state('alpha')).toBe('ready');
    expect(sim.running().map((r) => [r.model, r.state])).toEqual([['alpha', 'ready']]);
  });

  it('shares one load between concurrent requests for the same model', async () => {
    const results = await Promise.all(
      [1, 2, 3].map(() => postJson(`${sim.url}/v1/chat/completions`, chatBody('alpha'))),
    );
    expect(results.map((r) => r.status)).toEqual([200, 200, 200]);
    const starts = sim.logHistory('proxy').match(/<alpha> Executing start command/g) ?? [];
    expect(starts).toHaveLength(1);
  });

  it('swaps one model for another, unloading the first', async () => {
    await sim.load('alpha');
    const res = await postJson(`${sim.url}/v1/chat/completions`, chatBody('beta'));
    expect(res.status).toBe(200);
    expect(sim.state('alpha')).toBe('stopped');
    expect(sim.state('beta')).toBe('ready');
  });

  it('makes a swap wait until the running model has finished its in-flight requests', async () => {
    sim.knobs.tokensPerSecond = 50;
    sim.knobs.tokens = 10;
    await sim.load('alpha');
    const slow = new BodyReader(await postJson(`${sim.url}/v1/chat/completions`, chatBody('alpha', { stream: true })));
    await slow.until((t) => t.includes('"content"'));
    const swap = postJson(`${sim.url}/v1/chat/completions`, chatBody('beta'));
    await sim.waitForRequest((r) => r.model === 'beta');
    expect(sim.state('alpha')).toBe('ready');
    expect(sim.state('beta')).toBe('stopped');
    const text = await slow.rest();
    expect(text.endsWith('data: [DONE]\n\n')).toBe(true);
    expect((await swap).status).toBe(200);
    // alpha's request was logged as complete by its llama-server before alpha was told to exit.
    const upstream = sim.logHistory('upstream');
    const served = upstream.indexOf('log_server_r: request: POST /v1/chat/completions');
    const exited = upstream.indexOf('cleaning up before exit');
    expect(served).toBeGreaterThan(-1);
    expect(exited).toBeGreaterThan(served);
    expect(sim.state('beta')).toBe('ready');
  });

  it('rejects the 11th concurrent request for a model with 429 and Retry-After: 1', async () => {
    await sim.load('alpha');
    sim.knobs.headersDelayMs = 10_000;
    const held = Array.from({ length: 10 }, () => postJson(`${sim.url}/v1/chat/completions`, chatBody('alpha')));
    await sim.waitFor(() => sim.received.filter((r) => r.model === 'alpha').length === 10);
    const res = await postJson(`${sim.url}/v1/chat/completions`, chatBody('alpha'));
    expect(res.status).toBe(429);
    expect(res.headers.get('retry-after')).toBe('1');
    expect(await json(res)).toEqual({
      src: 'llama-swap',
      error: { message: 'Too many requests', type: 'rate_limit_error', param: null, code: 'concurrency_limit' },
    });
    // Unloading cuts the held requests before their headers: Go's ReverseProxy answers 502, empty.
    await sim.unload('alpha');
    const cut = await Promise.all(held);
    expect(cut.map((r) => r.status)).toEqual(Array(10).fill(502));
    expect(await cut[0]!.text()).toBe('');
  });

  it('counts every model load, so a test can count swaps', async () => {
    expect(sim.loads).toBe(0);
    await postJson(`${sim.url}/v1/chat/completions`, chatBody('alpha'));
    await postJson(`${sim.url}/v1/chat/completions`, chatBody('alpha'));
    await postJson(`${sim.url}/v1/chat/completions`, chatBody('beta'));
    await postJson(`${sim.url}/v1/chat/completions`, chatBody('alpha'));
    expect(sim.loads).toBe(3);
  });

  it('rejects a request past globalConcurrencyLimit over every model with the same 429', async () => {
    await sim.reload({ ...CONFIG, globalConcurrencyLimit: 2 });
    await sim.load('alpha');
    sim.knobs.headersDelayMs = 10_000;
    const held = [1, 2].map(() => postJson(`${sim.url}/v1/chat/completions`, chatBody('alpha')));
    await sim.waitFor(() => sim.received.filter((r) => r.model === 'alpha').length === 2);
    const res = await postJson(`${sim.url}/v1/chat/completions`, chatBody('beta'));
    expect(res.status).toBe(429);
    expect(res.headers.get('retry-after')).toBe('1');
    expect(((await json(res)) as { error: { code: string } }).error.code).toBe('concurrency_limit');
    await sim.unload('alpha');
    await Promise.all(held);
  });

  it('fails a request with 500 "unspecific error" when the model cannot start', async () => {
    sim.knobs.loadError = 'health check timed out after 2m0s';
    const res = await postJson(`${sim.url}/v1/chat/completions`, chatBody('alpha'));
    expect(res.status).toBe(500);
    expect((await json(res)).error).toMatchObject({
      message: 'unspecific error: health check timed out after 2m0s',
      type: 'server_error',
      code: 'internal_error',
    });
    expect(sim.state('alpha')).toBe('stopped');
  });

  it('fails a model without a command at the first request with "empty command"', async () => {
    const res = await postJson(`${sim.url}/v1/chat/completions`, chatBody('empty'));
    expect(res.status).toBe(500);
    expect((await json(res)).error.message).toBe('unspecific error: empty command');
  });

  it('fails waiting requests with 500 "model unloaded" when their model is unloaded while starting', async () => {
    sim.knobs.loadDelayMs = 500;
    const pending = postJson(`${sim.url}/v1/chat/completions`, chatBody('alpha'));
    await sim.waitForState('alpha', 'starting');
    await sim.unload('alpha');
    const res = await pending;
    expect(res.status).toBe(500);
    expect((await json(res)).error.message).toBe('unspecific error: group: model unloaded');
  });

  it('keeps loading a model after the waiting client gave up', async () => {
    sim.knobs.loadDelayMs = 150;
    const controller = new AbortController();
    const pending = postJson(`${sim.url}/v1/chat/completions`, chatBody('alpha'), {}, controller.signal).catch(
      () => 'aborted',
    );
    await sim.waitForState('alpha', 'starting');
    controller.abort();
    expect(await pending).toBe('aborted');
    const rec = await sim.waitForAbort((r) => r.model === 'alpha');
    expect(rec.status).toBeUndefined();
    await sim.waitForState('alpha', 'ready');
  });

  it('unloads a model after its TTL of idle time', async () => {
    await postJson(`${sim.url}/v1/chat/completions`, chatBody('shortlived'));
    expect(sim.state('shortlived')).toBe('ready');
    await sim.waitForState('shortlived', 'stopped', 2000);
    expect(sim.logHistory('proxy')).toContain('<shortlived> Unloading model, TTL of 0.15s reached');
  });

  it('writes fake llama-server output to the model log and the upstream log', async () => {
    await sim.load('beta');
    expect(sim.logHistory('beta')).toContain(
      'main: server is listening on http://127.0.0.1:5801 - starting the main loop',
    );
    expect(sim.logHistory('upstream')).toContain('server is listening');
    expect(sim.logHistory('combined')).not.toContain('server is listening');
  });
});

describe('groups', () => {
  it('keeps members of a swap:false group loaded together', async () => {
    const sim = await startSimulator({
      config: {
        models: {
          chat: { cmd: 'llama-server --port ${PORT}' },
          embed: { cmd: 'llama-server --port ${PORT}' },
          other: { cmd: 'llama-server --port ${PORT}' },
        },
        groups: { pair: { swap: false, exclusive: true, members: ['chat', 'embed'] } },
      },
    });
    try {
      await sim.load('chat');
      await sim.load('embed');
      expect(sim.running().map((r) => r.model)).toEqual(['chat', 'embed']);
      await sim.load('other');
      expect(sim.running().map((r) => r.model)).toEqual(['other']);
    } finally {
      await sim.close();
    }
  });
});
