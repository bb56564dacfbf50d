/**
 * The admission queue followed live: `GET /api/queue/stream` and the `queue` event of `GET /api/live`,
 * against a gateway with GATEHOUSE_MAX_INFLIGHT=1 in front of an upstream that holds each call
 * until the test answers it.
 */
import { request } from 'node:http';
import { afterEach, describe, expect, it } from 'vitest';
import type { QueueView } from '../../src/admin-api/types.js';
import { startTestGateway, type TestGateway } from '../helpers/gateway.js';
import { json, rawRequest } from '../helpers/http.js';
import { startHoldingUpstream } from '../helpers/holding-upstream.js';

const ADMIN = 'queue-stream-admin-token';

/** Reads one SSE stream's `queue` events; `until` resolves with the first view that matches. */
function followQueue(gateway: TestGateway, path: string) {
  const views: QueueView[] = [];
  const watchers = new Set<() => void>();
  let buffer = '';
  const req = request(`${gateway.url}${path}`, { headers: { authorization: `Bearer ${ADMIN}` }, agent: false });
  const opened = new Promise<string | undefined>((resolve, reject) => {
    req.on('response', (res) => {
      resolve(res.headers['content-type']);
      res.on('data', (chunk: Buffer) => {
        buffer += chunk.toString('utf8');
        let end: number;
        while ((end = buffer.indexOf('\n\n')) >= 0) {
          const frame = buffer.slice(0, end);
          buffer = buffer.slice(end + 2);
          if (/^event: queue$/m.test(frame)) views.push(JSON.parse(/^data: (.*)$/m.exec(frame)![1]!) as QueueView);
        }
        for (const w of [...watchers]) w();
      });
    });
    req.on('error', reject);
  });
  req.end();
  return {
    opened,
    views,
    until(match: (view: QueueView) => boolean): Promise<QueueView> {
      return new Promise((resolve) => {
        const check = () => {
          const hit = views.find(match);
          if (!hit) return;
          watchers.delete(check);
          resolve(hit);
        };
        watchers.add(check);
        check();
      });
    },
    close: () => void req.destroy(),
  };
}

let cleanup: Array<() => Promise<void> | void> = [];
afterEach(async () => {
  for (const c of cleanup.reverse()) await c();
  cleanup = [];
});

async function setUp() {
  const upstream = await startHoldingUpstream();
  const gateway = await startTestGateway(
    upstream.url,
    { adminToken: ADMIN, logLevel: 'warn', maxInflight: 1 },
    {},
    { withStore: true },
  );
  cleanup.push(
    () => upstream.close(),
    () => gateway.close(),
  );
  return { upstream, gateway };
}

async function createKey(
  gateway: TestGateway,
  name: string,
  priority: number,
  limits: { concurrent?: number } = {},
): Promise<string> {
  const res = await rawRequest(`${gateway.url}/api/keys`, {
    method: 'POST',
    headers: { authorization: `Bearer ${ADMIN}`, 'content-type': 'application/json' },
    body: JSON.stringify({ name, priority, ...(limits.concurrent ? { limits } : {}) }),
  });
  expect(res.status, res.body.toString()).toBe(201);
  return (json(res.body) as { secret: string }).secret;
}

function chat(gateway: TestGateway, id: string, secret: string) {
  return rawRequest(`${gateway.url}/v1/chat/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'x-request-id': id, authorization: `Bearer ${secret}` },
    body: JSON.stringify({ model: 'qwen', messages: [{ role: 'user', content: 'hi' }] }),
  });
}

const EMPTY: QueueView = { scope: 'replica', caps: 'replica', inflight: [], waiting: [] };
const summary = (view: QueueView) => ({
  inflight: view.inflight.map((c) => c.id),
  waiting: view.waiting.map((c) => [c.id, c.key?.name, c.priority, c.position]),
});

describe('the admission queue, followed live', () => {
  it('refuses /api/queue/stream without an admin session', async () => {
    const { gateway } = await setUp();
    const res = await rawRequest(`${gateway.url}/api/queue/stream`);
    expect(res.status).toBe(401);
  });

  it('streams a held call, its answer beginning and a waiting call on both streams, then the empty queue', async () => {
    const { upstream, gateway } = await setUp();
    const batch = await createKey(gateway, 'batch', 0);
    const ops = await createKey(gateway, 'ops', 3);
    const outside = followQueue(gateway, '/api/queue/stream');
    const dashboard = followQueue(gateway, '/api/live');
    cleanup.push(outside.close, dashboard.close);
    expect(await outside.opened).toMatch(/^text\/event-stream/);
    const empty = (v: QueueView) => v.inflight.length === 0 && v.waiting.length === 0;
    for (const stream of [outside, dashboard]) expect(summary(await stream.until(() => true))).toEqual(summary(EMPTY));

    const first = chat(gateway, 'held', batch);
    await upstream.arrived(1);
    const second = chat(gateway, 'waiting', ops);
    const busy = (v: QueueView) => v.waiting.length === 1;
    for (const stream of [outside, dashboard]) {
      const view = await stream.until(busy);
      expect(summary(view)).toEqual({ inflight: ['held'], waiting: [['waiting', 'ops', 3, 1]] });
      expect([view.inflight[0]!.phase, view.waiting[0]!.phase]).toEqual(['loading', 'queued']);
      expect(Date.parse(view.waiting[0]!.since)).not.toBeNaN();
    }

    upstream.begin(0);
    for (const stream of [outside, dashboard]) {
      const view = await stream.until((v) => v.inflight[0]?.phase === 'generating');
      expect(summary(view)).toEqual({ inflight: ['held'], waiting: [['waiting', 'ops', 3, 1]] });
    }

    upstream.answer(0);
    await upstream.arrived(2);
    upstream.answer(1);
    expect((await first).status).toBe(200);
    expect((await second).status).toBe(200);
    for (const stream of [outside, dashboard]) {
      const last = await stream.until((v) => stream.views.indexOf(v) > stream.views.findIndex(busy) && empty(v));
      expect(summary(last)).toEqual({ inflight: [], waiting: [] });
    }
  });

  it("lists a call waiting for its key's own concurrent slot, after the queue, and takes it off once it runs", async () => {
    const { upstream, gateway } = await setUp();
    const solo = await createKey(gateway, 'solo', 2, { concurrent: 1 });
    const outside = followQueue(gateway, '/api/queue/stream');
    cleanup.push(outside.close);
    const first = chat(gateway, 'running', solo);
    await upstream.arrived(1);
    const second = chat(gateway, 'needs-a-slot', solo);
    const view = await outside.until((v) => v.waiting.length === 1);
    expect(view.waiting).toMatchObject([
      { id: 'needs-a-slot', key: { name: 'solo' }, priority: 2, position: null, waitingFor: 'key', phase: 'queued' },
    ]);

    upstream.answer(0);
    await upstream.arrived(2);
    await outside.until((v) => v.waiting.length === 0 && v.inflight.some((c) => c.id === 'needs-a-slot'));
    upstream.answer(1);
    expect([(await first).status, (await second).status]).toEqual([200, 200]);
  });
});
