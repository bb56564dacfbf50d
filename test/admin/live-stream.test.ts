/**
 * `GET /api/live` over real HTTP: behind the admin session, a snapshot on connect (status,
 * models, each log's history), then changes, and the watcher released when the client leaves.
 */
import { request } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DEMO_CONFIG, startSimulator, type Simulator } from '../fakes/llama-swap/index.js';
import { startTestGateway, type TestGateway } from '../helpers/gateway.js';
import { json, rawRequest } from '../helpers/http.js';

const ADMIN = 'live-admin-token';
let sim: Simulator;
let gateway: TestGateway;

beforeAll(async () => {
  sim = await startSimulator({ config: DEMO_CONFIG, knobs: { loadDelayMs: 50 } });
  gateway = await startTestGateway(sim.url, { adminToken: ADMIN }, {}, { withStore: true });
});
afterAll(async () => {
  await gateway.close();
  await sim.close();
});

interface LiveEvent {
  event: string;
  data: Record<string, unknown>;
}

/** Opens /api/live and reads events until `until` says stop (bounded); `onEvent` may act. */
function readLive(until: (events: LiveEvent[]) => boolean, ms = 5000) {
  return new Promise<{ events: LiveEvent[]; closed: Promise<void> }>((resolve, reject) => {
    const events: LiveEvent[] = [];
    let buffer = '';
    let closedResolve!: () => void;
    const closed = new Promise<void>((r) => (closedResolve = r));
    const req = request(
      `${gateway.url}/api/live`,
      { headers: { authorization: `Bearer ${ADMIN}` }, agent: false },
      (res) => {
        if (res.statusCode !== 200) return reject(new Error(`status ${res.statusCode}`));
        expect(res.headers['content-type']).toMatch(/^text\/event-stream/);
        res.on('data', (chunk: Buffer) => {
          buffer += chunk.toString('utf8');
          let end: number;
          while ((end = buffer.indexOf('\n\n')) >= 0) {
            const frame = buffer.slice(0, end);
            buffer = buffer.slice(end + 2);
            if (frame.startsWith(':')) continue;
            const event = /^event: (.*)$/m.exec(frame)?.[1] ?? 'message';
            const data = JSON.parse(/^data: (.*)$/m.exec(frame)?.[1] ?? 'null') as Record<string, unknown>;
            events.push({ event, data });
          }
          if (until(events)) {
            clearTimeout(timer);
            req.destroy();
            resolve({ events, closed });
          }
        });
      },
    );
    const timer = setTimeout(() => {
      req.destroy();
      reject(new Error(`timed out; events so far: ${JSON.stringify(events).slice(0, 2000)}`));
    }, ms);
    req.on('close', () => closedResolve());
    req.on('error', () => undefined);
    req.end();
  });
}

describe('GET /api/live', () => {
  it('refuses a caller without an admin session', async () => {
    const res = await rawRequest(`${gateway.url}/api/live`);
    expect(res.status).toBe(401);
    expect(json(res.body)).toMatchObject({ error: { code: expect.any(String) } });
  });

  it('opens with the status, the models and each log, then carries a model change and a new line', async () => {
    sim.log('proxy', '[INFO] written before the page opened');
    let acted = false;
    const { events } = await readLive((evs) => {
      if (!acted && evs.filter((e) => e.event === 'history').length === 3) {
        acted = true;
        void sim.load('qwen3-8b').then(() => sim.log('proxy', '[INFO] written after the load'));
      }
      return evs.some((e) => e.event === 'log' && String(e.data.text).includes('written after the load'));
    });
    const opening = events
      .slice(0, 5)
      .map((e) => (e.event === 'history' ? `history:${String(e.data.source)}` : e.event));
    expect(opening).toEqual(['upstream', 'models', 'history:proxy', 'history:upstream', 'history:gateway']);
    expect(events[0]!.data).toMatchObject({ state: 'live', reachable: true, mode: 'events' });
    expect(events[2]!.data.text).toContain('written before the page opened');
    const ready = events.find(
      (e) =>
        e.event === 'models' &&
        (e.data.models as Array<{ id: string; state: string }>).some((m) => m.id === 'qwen3-8b' && m.state === 'ready'),
    );
    expect(ready).toBeDefined();
    await sim.unload();
  });

  it("carries Gatehouse's own access log lines", async () => {
    let called = false;
    await readLive((evs) => {
      if (!called && evs.some((e) => e.event === 'history' && e.data.source === 'gateway')) {
        called = true;
        void rawRequest(`${gateway.url}/healthz?from-the-live-test`);
      }
      return evs.some(
        (e) => e.event === 'log' && e.data.source === 'gateway' && String(e.data.text).includes('/healthz'),
      );
    });
  });

  it('releases its watch on the shared view when the client leaves', async () => {
    const before = gateway.view!.watchers;
    const { closed } = await readLive((evs) => evs.some((e) => e.event === 'history'));
    await closed;
    await sim.waitFor(() => gateway.view!.watchers === before, 2000);
    expect(gateway.view!.watchers).toBe(before);
  });
});
