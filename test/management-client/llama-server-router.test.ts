/**
 * llama.cpp's router mode as the upstream: which kind answers (detection, also when the upstream
 * starts after Gatehouse), and the llama-server client against the router simulator (statuses,
 * LRU eviction at --models-max, failed starts, no log stream).
 */
import { createServer } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { detectUpstreamKind } from '../../src/management-client/detect.js';
import { UpstreamError } from '../../src/management-client/errors.js';
import { createLlamaServerClient } from '../../src/management-client/llama-server-client.js';
import { openUpstream, type DetectionReport } from '../../src/management-client/open-upstream.js';
import { startRouterSimulator, type RouterSimulator } from '../fakes/llama-server-router/index.js';
import { startSimulator } from '../fakes/llama-swap/index.js';

const MODELS = [
  { id: 'qwen', aliases: ['gpt-4o-mini'] },
  { id: 'llama' },
  { id: 'gemma' },
  { id: 'broken', failToLoad: true },
];

const closers: Array<() => Promise<unknown>> = [];
afterEach(async () => {
  for (const close of closers.splice(0).reverse()) await close();
});

async function router(options: Partial<Parameters<typeof startRouterSimulator>[0]> = {}): Promise<RouterSimulator> {
  const sim = await startRouterSimulator({ models: MODELS, loadDelayMs: 20, ...options });
  closers.push(() => sim.close());
  return sim;
}

async function freePort(): Promise<number> {
  return new Promise((resolve) => {
    const srv = createServer().listen(0, '127.0.0.1', () => {
      const port = (srv.address() as { port: number }).port;
      srv.close(() => resolve(port));
    });
  });
}

describe('telling llama-swap from llama-server', () => {
  it('takes an upstream that answers GET /running for llama-swap', async () => {
    const sim = await startSimulator({ config: { models: { qwen: { cmd: 'llama-server --port ${PORT}' } } } });
    closers.push(() => sim.close());
    expect(await detectUpstreamKind({ baseUrl: new URL(sim.url) })).toEqual({
      kind: 'llama-swap',
      via: 'GET /running',
    });
  });

  it('takes an upstream whose /props says role router for llama-server', async () => {
    const sim = await router();
    expect(await detectUpstreamKind({ baseUrl: new URL(sim.url) })).toEqual({
      kind: 'llama-server',
      via: 'GET /props (role: router)',
    });
  });

  it('says the key is refused instead of guessing when the router wants one', async () => {
    const sim = await router({ apiKey: 'router-secret' });
    const error = await detectUpstreamKind({ baseUrl: new URL(sim.url) }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(UpstreamError);
    expect((error as UpstreamError).message).toMatch(/refused Gatehouse's key \(HTTP 401\)/);
    expect(await detectUpstreamKind({ baseUrl: new URL(sim.url), apiKey: 'router-secret' })).toMatchObject({
      kind: 'llama-server',
    });
  });

  it('keeps asking while the upstream is down at start, reports each failure, then detects it', async () => {
    const port = await freePort();
    const reports: DetectionReport[] = [];
    let reported: () => void = () => undefined;
    const upstream = openUpstream({
      kind: 'auto',
      baseUrl: new URL(`http://127.0.0.1:${port}`),
      retryMinMs: 20,
      retryMaxMs: 40,
      onDetection: (report) => {
        reports.push(report);
        reported();
      },
    });
    closers.push(() => upstream.close());
    const failedOnce = new Promise<void>((resolve) => (reported = resolve));
    await failedOnce;
    expect(upstream.kind).toBeNull();
    // Until it knows, a call fails with the reason rather than picking a kind.
    expect(await upstream.health()).toMatchObject({ ok: false, error: expect.stringMatching(/cannot tell/) });
    const detected = new Promise<void>((resolve) => {
      reported = () => {
        if (reports.some((r) => 'detected' in r)) resolve();
      };
    });
    await router({ port });
    await detected;
    expect(upstream.kind).toBe('llama-server');
    const failures = reports.filter((r) => 'failed' in r);
    expect(failures.length).toBeGreaterThanOrEqual(1);
    expect(reports.at(-1)).toEqual({ detected: { kind: 'llama-server', via: 'GET /props (role: router)' } });
    expect(await upstream.health()).toEqual({ ok: true, status: 200 });
  });
});

describe('the llama-server client against the router simulator', () => {
  it('lists models with their router statuses and aliases', async () => {
    const sim = await router();
    const client = createLlamaServerClient({ baseUrl: new URL(sim.url), settlePollMs: 5 });
    closers.push(() => client.close());
    const models = await client.models();
    expect(models.map((m) => [m.id, m.status?.value, m.aliases])).toEqual([
      ['qwen', 'unloaded', ['gpt-4o-mini']],
      ['llama', 'unloaded', []],
      ['gemma', 'unloaded', []],
      ['broken', 'unloaded', []],
    ]);
    expect(await client.running()).toEqual([]);
    expect(await client.version()).toMatchObject({ version: 'b7100-router-sim' });
  });

  it('loads until the model is up, and evicts the least recently used one at --models-max', async () => {
    const sim = await router({ modelsMax: 2 });
    const client = createLlamaServerClient({ baseUrl: new URL(sim.url), settlePollMs: 5 });
    closers.push(() => client.close());
    await client.load('qwen');
    expect(sim.model('qwen').status).toBe('loaded');
    await client.load('llama');
    expect((await client.running()).map((r) => [r.model, r.state])).toEqual([
      ['qwen', 'ready'],
      ['llama', 'ready'],
    ]);
    // qwen was used least recently: loading a third model stops it.
    await client.load('gemma');
    expect((await client.running()).map((r) => r.model).sort()).toEqual(['gemma', 'llama']);
    expect(sim.model('qwen').status).toBe('unloaded');
  });

  it('unloads until the model is gone, and takes an unload of a stopped model as done', async () => {
    const sim = await router({ unloadDelayMs: 20 });
    const client = createLlamaServerClient({ baseUrl: new URL(sim.url), settlePollMs: 5 });
    closers.push(() => client.close());
    await client.load('qwen');
    expect(await client.unload('qwen')).toEqual({ unloaded: true, via: 'api' });
    expect(sim.model('qwen').status).toBe('unloaded');
    expect(await client.unload('qwen')).toEqual({ unloaded: true, via: 'api' });
    const unknown = await client.unload('nope').catch((e: unknown) => e);
    expect(unknown).toMatchObject({ kind: 'http', status: 404 });
  });

  it('reports a model whose start failed, and an unknown model as 404', async () => {
    const sim = await router();
    const client = createLlamaServerClient({ baseUrl: new URL(sim.url), settlePollMs: 5 });
    closers.push(() => client.close());
    const failed = await client.load('broken').catch((e: unknown) => e);
    expect(failed).toMatchObject({
      kind: 'http',
      status: 502,
      message: expect.stringMatching(/could not start broken/),
    });
    expect((await client.models()).find((m) => m.id === 'broken')?.status).toMatchObject({
      value: 'unloaded',
      failed: true,
      exit_code: 1,
    });
    expect(await client.load('nope').catch((e: unknown) => e)).toMatchObject({ kind: 'http', status: 404 });
  });

  it('says plainly that it has no log or event stream', async () => {
    const sim = await router();
    const client = createLlamaServerClient({ baseUrl: new URL(sim.url) });
    closers.push(() => client.close());
    for (const open of [() => client.logStream('proxy'), () => client.events()]) {
      const error = await open().catch((e: unknown) => e);
      expect(error).toMatchObject({ kind: 'unsupported', message: expect.stringMatching(/no log or event stream/) });
    }
  });
});
