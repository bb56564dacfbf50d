import { request } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DEMO_CONFIG, startSimulator, type Simulator } from '../fakes/llama-swap/index.js';
import { startTestGateway, type TestGateway } from '../helpers/gateway.js';
import { json, rawRequest } from '../helpers/http.js';

const ADMIN = 'models-admin-token';
let sim: Simulator;
let gateway: TestGateway;

beforeAll(async () => {
  sim = await startSimulator({ config: DEMO_CONFIG, knobs: { loadDelayMs: 150 } });
  gateway = await startTestGateway(sim.url, { adminToken: ADMIN }, {}, { withStore: true });
});
afterAll(async () => {
  await gateway.close();
  await sim.close();
});

const api = (method: string, path: string, body?: unknown) =>
  rawRequest(`${gateway.url}${path}`, {
    method,
    headers: {
      authorization: `Bearer ${ADMIN}`,
      ...(body === undefined ? {} : { 'content-type': 'application/json' }),
    },
    body: body === undefined ? undefined : JSON.stringify(body),
  });

interface ModelsAnswer {
  reachable: boolean;
  error: string | null;
  models: Array<{
    id: string;
    kind: string;
    state: string;
    aliases: string[];
    peerId: string | null;
    unlisted: boolean;
    name: string | null;
  }>;
}
const models = async () => json((await api('GET', '/api/models')).body) as ModelsAnswer;
const stateOf = async (id: string) => (await models()).models.find((m) => m.id === id)?.state;

describe('models admin API', () => {
  it('lists local models, peers and their states, with llama-swap reported reachable', async () => {
    const answer = await models();
    expect(answer.reachable).toBe(true);
    expect(answer.models.find((m) => m.id === 'qwen3-8b')).toMatchObject({
      kind: 'model',
      state: 'stopped',
      aliases: ['gpt-4o-mini', 'qwen'],
      name: 'Qwen3 8B',
    });
    expect(answer.models.find((m) => m.id === 'gpu-box/llama-3.3-70b')).toMatchObject({
      kind: 'peer',
      peerId: 'gpu-box',
      state: 'stopped',
    });
    const upstream = json((await api('GET', '/api/upstream')).body) as {
      reachable: boolean;
      version: { version: string };
    };
    expect(upstream.reachable).toBe(true);
    expect(upstream.version.version).toBe('v250-sim');
  });

  it('loads a model and follows it from starting to ready, then unloads it', async () => {
    const load = await api('POST', '/api/models/qwen3-8b/load', {});
    expect(load.status).toBe(202);
    expect(await stateOf('qwen3-8b')).toMatch(/starting|ready/);
    await sim.waitForState('qwen3-8b', 'ready');
    expect(await stateOf('qwen3-8b')).toBe('ready');
    const unload = await api('POST', '/api/models/qwen3-8b/unload', {});
    expect(unload.status).toBe(200);
    expect(sim.state('qwen3-8b')).toBe('stopped');
    expect(await stateOf('qwen3-8b')).toBe('stopped');
  });

  it('shows a state change made directly on llama-swap on the next poll', async () => {
    await sim.load('llama-3.2-3b');
    expect(await stateOf('llama-3.2-3b')).toBe('ready');
    const all = await api('POST', '/api/models/unload-all', {});
    expect(all.status).toBe(200);
    expect(sim.state('llama-3.2-3b')).toBe('stopped');
  });

  it('answers 404 in the admin shape for an unknown model', async () => {
    const res = await api('POST', '/api/models/no-such-model/unload', {});
    expect(res.status).toBe(404);
    expect(json(res.body)).toMatchObject({ error: { code: 'not_found', message: expect.any(String) } });
  });

  it('reports an unreachable llama-swap as such, never as an empty list', async () => {
    const dead = await startTestGateway('http://127.0.0.1:1', { adminToken: ADMIN }, {}, { withStore: true });
    try {
      const res = await rawRequest(`${dead.url}/api/models`, { headers: { authorization: `Bearer ${ADMIN}` } });
      expect(res.status).toBe(200);
      expect(json(res.body)).toMatchObject({
        reachable: false,
        error: expect.stringContaining('could not be reached'),
        models: [],
      });
    } finally {
      await dead.close();
    }
  });
});

/** Reads an SSE response into events until `until` says stop (bounded by time). */
function readEvents(
  path: string,
  until: (events: Array<{ event: string; data: unknown }>) => boolean,
  onOpen?: () => void,
  ms = 5000,
) {
  return new Promise<Array<{ event: string; data: unknown }>>((resolve, reject) => {
    const events: Array<{ event: string; data: unknown }> = [];
    let buffer = '';
    const req = request(
      `${gateway.url}${path}`,
      { headers: { authorization: `Bearer ${ADMIN}` }, agent: false },
      (res) => {
        if (res.statusCode !== 200) return reject(new Error(`status ${res.statusCode}`));
        onOpen?.();
        res.on('data', (chunk: Buffer) => {
          buffer += chunk.toString('utf8');
          let end: number;
          while ((end = buffer.indexOf('\n\n')) >= 0) {
            const frame = buffer.slice(0, end);
            buffer = buffer.slice(end + 2);
            if (frame.startsWith(':')) continue;
            const event = /^event: (.*)$/m.exec(frame)?.[1] ?? 'message';
            const data = /^data: (.*)$/m.exec(frame)?.[1];
            events.push({ event, data: data === undefined ? undefined : JSON.parse(data) });
          }
          if (until(events)) {
            req.destroy();
            resolve(events);
          }
        });
      },
    );
    const timer = setTimeout(() => {
      req.destroy();
      reject(new Error(`timed out; events so far: ${JSON.stringify(events).slice(0, 2000)}`));
    }, ms);
    req.on('close', () => clearTimeout(timer));
    req.on('error', () => undefined);
    req.end();
  });
}

describe('log streams admin API', () => {
  it("relays llama-swap's proxy log: history first, then live lines", async () => {
    sim.log('proxy', '[INFO] a line from before');
    let logged = false;
    const events = await readEvents('/api/logs/stream?source=proxy', (evs) => {
      // History arrives once the gateway follows llama-swap's stream: a line logged now is live.
      if (!logged && evs.some((e) => e.event === 'history')) {
        logged = true;
        sim.log('proxy', '[INFO] a line written live');
      }
      return evs.some((e) => typeof e.data === 'string' && e.data.includes('a line written live'));
    });
    expect(events[0]!.event).toBe('history');
    expect(events[0]!.data).toContain('a line from before');
    expect(events.some((e) => e.event === 'log')).toBe(true);
  });

  it('survives a llama-swap config reload: marks the gap once and loses no line written meanwhile', async () => {
    let reloaded = false;
    const events = await readEvents('/api/logs/stream?source=proxy', (evs) => {
      if (!reloaded && evs.length > 0) {
        reloaded = true;
        // Logged while the gateway may still be reconnecting: llama-swap's history brings it.
        void sim.reload().then(() => sim.log('proxy', '[INFO] after the reload'));
      }
      return evs.some((e) => typeof e.data === 'string' && e.data.includes('after the reload'));
    });
    const gaps = events.filter((e) => e.event === 'gap');
    expect(gaps).toHaveLength(1);
    expect(gaps[0]!.data).toEqual({ reason: expect.stringContaining('config reload') });
    const gap = events.indexOf(gaps[0]!);
    expect(gap).toBeGreaterThan(0);
    expect(events.findIndex((e) => typeof e.data === 'string' && e.data.includes('after the reload'))).toBeGreaterThan(
      gap,
    );
    const text = events.map((e) => (typeof e.data === 'string' ? e.data : '')).join('');
    expect(text.split('after the reload')).toHaveLength(2);
  });

  it("streams Gatehouse's own access log", async () => {
    const events = await readEvents(
      '/api/logs/stream?source=gateway',
      (evs) => evs.some((e) => typeof e.data === 'string' && e.data.includes('/v1/models')),
      // Headers arrive after the stream subscribed to the gateway's log.
      () => void rawRequest(`${gateway.url}/v1/models`),
    );
    expect(events[0]!.event).toBe('history');
  });

  it('refuses an unknown source with 400 in the admin shape', async () => {
    const res = await api('GET', '/api/logs/stream?source=nope');
    expect(res.status).toBe(400);
    expect(json(res.body)).toMatchObject({ error: { code: 'bad_request', details: [{ path: '/source' }] } });
  });
});
