import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { startSimulator, type Simulator } from '../fakes/llama-swap/index.js';
import { BodyReader, parseSse, json } from './helpers.js';

const CONFIG = {
  models: {
    qwen: { cmd: 'llama-server --port ${PORT}', aliases: ['q'], name: 'Qwen' },
    hidden: { cmd: 'llama-server --port ${PORT}', unlisted: true },
  },
  peers: { box: { proxy: 'http://192.0.2.10:8080', models: ['remote'] } },
};

describe('log streams', () => {
  let sim: Simulator;
  beforeEach(async () => {
    sim = await startSimulator({ config: CONFIG });
  });
  afterEach(() => sim.close());

  it('streams chunked plain text with the llama-swap headers, history first, then live lines', async () => {
    sim.log('proxy', '[INFO] before connecting');
    const res = await fetch(`${sim.url}/logs/stream/proxy`);
    expect(res.headers.get('content-type')).toBe('text/plain');
    expect(res.headers.get('transfer-encoding')).toBe('chunked');
    expect(res.headers.get('x-content-type-options')).toBe('nosniff');
    expect(res.headers.get('x-accel-buffering')).toBe('no');
    const reader = new BodyReader(res);
    await reader.until((t) => t.includes('[INFO] before connecting\n'));
    sim.log('proxy', '[INFO] after connecting');
    await reader.until((t) => t.includes('[INFO] after connecting\n'));
    await reader.cancel();
  });

  it('skips the history when no-history is present, whatever its value', async () => {
    sim.log('proxy', '[INFO] old line');
    for (const query of ['no-history', 'no-history=false']) {
      const reader = new BodyReader(await fetch(`${sim.url}/logs/stream/proxy?${query}`));
      sim.log('proxy', `[INFO] live for ${query}`);
      const text = await reader.until((t) => t.includes(`live for ${query}`));
      expect(text).toBe(`[INFO] live for ${query}\n`);
      await reader.cancel();
    }
  });

  it('streams a model log by ID or alias, and upstream output on /logs/stream/upstream', async () => {
    await sim.load('qwen');
    const byAlias = new BodyReader(await fetch(`${sim.url}/logs/stream/q`));
    await byAlias.until((t) => t.includes('server is listening'));
    await byAlias.cancel();
    const upstream = new BodyReader(await fetch(`${sim.url}/logs/stream/upstream`));
    await upstream.until((t) => t.includes('server is listening'));
    await upstream.cancel();
  });

  it('serves only proxy lines in the combined log with the default logToStdout', async () => {
    await sim.load('qwen');
    const text = await (await fetch(`${sim.url}/logs`)).text();
    expect(text).toContain('<qwen> Executing start command');
    expect(text).not.toContain('server is listening');
    const combined = new BodyReader(await fetch(`${sim.url}/logs/stream`));
    await combined.until((t) => t.includes('Executing start command'));
    await combined.cancel();
  });

  it('answers 400 for an unknown or peer log id', async () => {
    for (const id of ['nope', 'box/remote']) {
      const res = await fetch(`${sim.url}/logs/stream/${id}`);
      expect(res.status).toBe(400);
      expect((await json(res)).error.message).toBe("invalid logger. Use 'proxy', 'upstream' or a model's ID");
    }
  });

  it('redirects /logs to the UI for browsers', async () => {
    const res = await fetch(`${sim.url}/logs`, { headers: { accept: 'text/html' }, redirect: 'manual' });
    expect(res.status).toBe(302);
    expect(res.headers.get('location')).toBe('/ui/');
  });
});

interface EventEnvelope {
  type: string;
  data: unknown;
}

function decodeEvents(text: string): EventEnvelope[] {
  return parseSse(text).map((f) => {
    expect(f.event).toBe('message');
    const env = JSON.parse(f.data) as { type: string; data: string };
    expect(typeof env.data).toBe('string');
    return { type: env.type, data: JSON.parse(env.data) };
  });
}

describe('/api/events', () => {
  let sim: Simulator;
  beforeEach(async () => {
    sim = await startSimulator({ config: CONFIG, reloadStatusDelayMs: 50 });
  });
  afterEach(() => sim.close());

  it('opens with logData, modelStatus, uiConfig, profileChanged and an inflight snapshot, double-encoded', async () => {
    sim.log('proxy', '[INFO] hello events');
    const res = await fetch(`${sim.url}/api/events`);
    expect(res.headers.get('content-type')).toBe('text/event-stream');
    expect(res.headers.get('x-accel-buffering')).toBe('no');
    const reader = new BodyReader(res);
    const text = await reader.until((t) => t.includes('inflight'));
    expect(text.startsWith('event:message\ndata:{')).toBe(true);
    const events = decodeEvents(text);
    expect(events.map((e) => e.type)).toEqual([
      'logData',
      'logData',
      'modelStatus',
      'uiConfig',
      'profileChanged',
      'inflight',
    ]);
    expect(events[0]!.data).toMatchObject({ source: 'proxy', data: expect.stringContaining('hello events') });
    expect(events[2]!.data).toEqual([
      { id: 'hidden', name: '', description: '', state: 'stopped', unlisted: true, peerID: '' },
      { id: 'qwen', name: 'Qwen', description: '', state: 'stopped', unlisted: false, peerID: '', aliases: ['q'] },
      { id: 'box/remote', name: '', description: '', state: '', unlisted: false, peerID: 'box' },
    ]);
    expect(events[4]!.data).toEqual({ active: null });
    expect(events[5]!.data).toEqual({ operation: 'snapshot', requests: [] });
    await reader.cancel();
  });

  it('sends modelStatus on every state change', async () => {
    const reader = new BodyReader(await fetch(`${sim.url}/api/events`));
    await reader.until((t) => t.includes('inflight'));
    const skip = reader.text.length;
    await sim.load('qwen');
    await reader.until((t) => decodeEvents(t.slice(skip)).filter((e) => e.type === 'modelStatus').length >= 2);
    const states = decodeEvents(reader.text.slice(skip))
      .filter((e) => e.type === 'modelStatus')
      .map((e) => (e.data as Array<{ id: string; state: string }>).find((m) => m.id === 'qwen')!.state);
    expect(states.slice(0, 2)).toEqual(['starting', 'ready']);
    await reader.cancel();
  });

  it('closes event and log streams on a successful reload', async () => {
    const events = new BodyReader(await fetch(`${sim.url}/api/events`));
    const logs = new BodyReader(await fetch(`${sim.url}/logs/stream/proxy?no-history`));
    await events.until((t) => t.includes('inflight'));
    expect(await sim.reload()).toEqual({ ok: true });
    await events.rest();
    await logs.rest();
    expect(events.done && logs.done).toBe(true);
  });
});
