import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { createServer, type AddressInfo } from 'node:net';
import { createLlamaSwapClient, type LlamaSwapClient } from '../../src/management-client/llama-swap-client.js';
import { encodeModelPath, modelIdProblem } from '../../src/management-client/model-id.js';
import { UpstreamError } from '../../src/management-client/errors.js';
import { startSimulator, type Simulator } from '../fakes/llama-swap/index.js';
import { freePort } from '../helpers/ports.js';

const CONFIG = {
  models: {
    qwen: { cmd: 'llama-server --port ${PORT}', name: 'Qwen', aliases: ['gpt-4o-mini'] },
    'org/model a': { cmd: 'llama-server --port ${PORT}' },
  },
  peers: { box: { proxy: 'http://192.0.2.10:8080', models: ['remote'] } },
};

async function rejection(promise: Promise<unknown>): Promise<UpstreamError> {
  try {
    await promise;
  } catch (err) {
    expect(err).toBeInstanceOf(UpstreamError);
    return err as UpstreamError;
  }
  throw new Error('expected the call to fail');
}

describe('llama-swap client against the simulator', () => {
  let sim: Simulator;
  let client: LlamaSwapClient;
  beforeAll(async () => {
    sim = await startSimulator({ config: CONFIG });
    client = createLlamaSwapClient({ baseUrl: new URL(sim.url), timeoutMs: 2000 });
  });
  afterAll(async () => {
    await client.close();
    await sim.close();
  });
  afterEach(async () => {
    sim.knobs.legacyRoutes = false;
    sim.knobs.errorShape = 'envelope';
    sim.knobs.loadDelayMs = 0;
    await sim.unload();
  });

  it('reports health without throwing', async () => {
    expect(await client.health()).toEqual({ ok: true, status: 200 });
  });

  it('always sends Accept: application/json', async () => {
    sim.clearReceived();
    await client.running();
    expect(sim.received[0]?.headers.accept).toBe('application/json');
    expect(sim.received[0]?.headers.authorization).toBeUndefined();
  });

  it('reads the version, and null from an old llama-swap without /api/version', async () => {
    expect(await client.version()).toEqual(sim.knobs.version);
    sim.knobs.legacyRoutes = true;
    expect(await client.version()).toBeNull();
  });

  it('lists running models with their state', async () => {
    await sim.load('qwen');
    const running = await client.running();
    expect(running).toEqual([
      {
        model: 'qwen',
        state: 'ready',
        cmd: 'llama-server --port 5801',
        proxy: 'http://localhost:5801',
        ttl: 0,
        name: 'Qwen',
        description: '',
      },
    ]);
  });

  it('lists models with status, aliases and peers', async () => {
    const models = await client.models();
    expect(models.map((m) => m.id)).toEqual(['box/remote', 'org/model a', 'qwen']);
    const qwen = models.find((m) => m.id === 'qwen')!;
    expect(qwen.status).toEqual({ value: 'unloaded' });
    expect(qwen.meta?.llamaswap?.aliases).toEqual(['gpt-4o-mini']);
    expect(models[0]!.meta?.llamaswap).toEqual({ type: 'peer', peerID: 'box' });
  });

  it('loads a model through /upstream/<id>/, encoding each path segment but keeping slashes', async () => {
    expect(encodeModelPath('org/model a')).toBe('org/model%20a');
    expect(await client.load('org/model a')).toEqual({ status: 200 });
    expect(sim.state('org/model a')).toBe('ready');
    expect(sim.received.at(-1)?.path).toBe('/upstream/org/model%20a/');
  });

  it('fails a load of an unknown model with a typed 404 carrying llama-swap’s message', async () => {
    const err = await rejection(client.load('nope'));
    expect(err).toMatchObject({
      kind: 'http',
      status: 404,
      upstreamMessage: 'model not found',
      fromLlamaSwap: true,
      code: 'not_found',
    });
  });

  it('fails a load with 500 when the model cannot start', async () => {
    sim.knobs.loadError = 'upstream command exited prematurely';
    try {
      const err = await rejection(client.load('qwen'));
      expect(err).toMatchObject({
        kind: 'http',
        status: 500,
        upstreamMessage: 'unspecific error: upstream command exited prematurely',
      });
    } finally {
      sim.knobs.loadError = null;
    }
  });

  it('unloads one model by ID or alias and waits until it stopped', async () => {
    await sim.load('qwen');
    expect(await client.unload('gpt-4o-mini')).toEqual({ unloaded: true, via: 'api' });
    expect(sim.state('qwen')).toBe('stopped');
  });

  it('rejects unloading an unknown model with 404 in both error shapes', async () => {
    const envelope = await rejection(client.unload('nope'));
    expect(envelope).toMatchObject({
      kind: 'http',
      status: 404,
      upstreamMessage: 'model not found',
      routeMissing: false,
    });
    sim.knobs.errorShape = 'legacy';
    const legacy = await rejection(client.unload('nope'));
    expect(legacy).toMatchObject({
      kind: 'http',
      status: 404,
      upstreamMessage: 'model not found',
      fromLlamaSwap: true,
    });
  });

  it('unloads everything through POST /api/models/unload', async () => {
    await sim.load('qwen');
    expect(await client.unloadAll()).toEqual({ unloaded: true, via: 'api' });
    expect(sim.running()).toEqual([]);
  });

  it('falls back to GET /unload on an old llama-swap', async () => {
    await sim.load('qwen');
    sim.knobs.legacyRoutes = true;
    sim.clearReceived();
    expect(await client.unloadAll()).toEqual({ unloaded: true, via: 'legacy-unload' });
    expect(sim.received.map((r) => `${r.method} ${r.path}`)).toEqual(['POST /api/models/unload', 'GET /unload']);
    expect(sim.running()).toEqual([]);
  });

  it('reports a single-model unload as unsupported on an old llama-swap instead of unloading everything', async () => {
    await sim.load('qwen');
    sim.knobs.legacyRoutes = true;
    const result = await client.unload('qwen');
    expect(result).toMatchObject({ unloaded: false, unsupported: true });
    expect(sim.state('qwen')).toBe('ready');
  });

  it('times out with kind "timeout" when llama-swap does not answer in time', async () => {
    sim.knobs.loadDelayMs = 500;
    const err = await rejection(client.load('qwen', { timeoutMs: 100 }));
    expect(err.kind).toBe('timeout');
  });

  it('rethrows the caller’s abort as-is', async () => {
    sim.knobs.loadDelayMs = 500;
    const controller = new AbortController();
    sim.clearReceived();
    const pending = client.load('qwen', { signal: controller.signal });
    // Abort while llama-swap is loading the model, once the request has reached it.
    await sim.waitForRequest((r) => r.path.startsWith('/upstream/qwen'));
    controller.abort(new Error('caller gave up'));
    await expect(pending).rejects.toThrow('caller gave up');
  });
});

describe('model ids in upstream paths', () => {
  it('refuses ids that would name another route once llama-swap cleans the path, and encodes the rest', () => {
    for (const bad of [
      '',
      '.',
      '..',
      '../unload',
      'a/../b',
      'a/./b',
      '/a',
      'a/',
      'a//b',
      'a\\b',
      'a\u0000',
      'a\u200b',
      'a\ud800',
    ])
      expect(modelIdProblem(bad), JSON.stringify(bad)).toEqual(expect.any(String));
    expect(modelIdProblem('x'.repeat(257))).toEqual(expect.any(String));
    expect(() => encodeModelPath('../unload')).toThrow(RangeError);
    for (const good of ['qwen3-8b', 'org/model a', 'gpt-oss:20b', '...', '.hidden', '%2e%2e', 'Qwen2.5-7B@q4_K_M'])
      expect(modelIdProblem(good), good).toBeUndefined();
    expect(encodeModelPath('%2e%2e/a?b#c')).toBe('%252e%252e/a%3Fb%23c');
  });
});

/** A raw upstream answering each request by its path; records what it received. */
async function pathUpstream(answer: (path: string) => string) {
  const seen: string[] = [];
  const server = createServer((socket) => {
    socket.on('error', () => undefined);
    socket.once('data', (data: Buffer) => {
      const path = data.toString('latin1').split(' ')[1]!;
      seen.push(path);
      socket.end(answer(path));
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    seen,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

const REDIRECT =
  'HTTP/1.1 301 Moved Permanently\r\nlocation: /running\r\ncontent-length: 0\r\nconnection: close\r\n\r\n';
const runningJson = (body: string) =>
  'HTTP/1.1 200 OK\r\ncontent-type: application/json\r\n' +
  `content-length: ${body.length}\r\nconnection: close\r\n\r\n${body}`;

describe('a load answered with a redirect', () => {
  it('is not a load when the model does not run: a typed 502', async () => {
    const upstream = await pathUpstream((path) => (path === '/running' ? runningJson('{"running":[]}') : REDIRECT));
    const client = createLlamaSwapClient({ baseUrl: new URL(upstream.url), timeoutMs: 2000 });
    try {
      const err = await rejection(client.load('qwen'));
      expect(err).toMatchObject({ kind: 'http', status: 502 });
      expect(err.message).toMatch(/redirect \(HTTP 301\)/);
      expect(upstream.seen).toEqual(['/upstream/qwen/', '/running']);
    } finally {
      await client.close();
      await upstream.close();
    }
  });

  it("counts when the model runs (its server's own root page redirects)", async () => {
    const running = '{"running":[{"model":"qwen","state":"ready"}]}';
    const upstream = await pathUpstream((path) => (path === '/running' ? runningJson(running) : REDIRECT));
    const client = createLlamaSwapClient({ baseUrl: new URL(upstream.url), timeoutMs: 2000 });
    try {
      expect(await client.load('qwen')).toEqual({ status: 301 });
    } finally {
      await client.close();
      await upstream.close();
    }
  });
});

describe('llama-swap client failure modes', () => {
  it('reports an unreachable llama-swap as kind "unreachable" and unhealthy', async () => {
    const port = await freePort();
    const client = createLlamaSwapClient({ baseUrl: new URL(`http://127.0.0.1:${port}`), timeoutMs: 1000 });
    try {
      const health = await client.health();
      expect(health.ok).toBe(false);
      expect(health.error).toMatch(/ECONNREFUSED/);
      const err = await rejection(client.running());
      expect(err.kind).toBe('unreachable');
    } finally {
      await client.close();
    }
  });

  it('sends the API key as a Bearer token and surfaces 401s', async () => {
    const sim = await startSimulator({ config: { ...CONFIG, apiKeys: ['sk-upstream'] } });
    const good = createLlamaSwapClient({ baseUrl: new URL(sim.url), apiKey: 'sk-upstream' });
    const bad = createLlamaSwapClient({ baseUrl: new URL(sim.url), apiKey: 'wrong' });
    try {
      expect(await good.running()).toEqual([]);
      expect(sim.received.at(-1)?.headers.authorization).toBe('Bearer sk-upstream');
      const err = await rejection(bad.models());
      expect(err).toMatchObject({
        kind: 'http',
        status: 401,
        upstreamMessage: 'unauthorized: invalid or missing API key',
      });
      // /health needs no key.
      expect((await bad.health()).ok).toBe(true);
    } finally {
      await good.close();
      await bad.close();
      await sim.close();
    }
  });
});
