import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { startSimulator, type Simulator } from '../fakes/llama-swap/index.js';
import { BodyReader, chatBody, postJson, json, timerFiresFirst } from './helpers.js';

const CONFIG = {
  models: {
    'org/model-a': { cmd: 'llama-server --port ${PORT}', aliases: ['a'] },
    b: { cmd: 'llama-server --port ${PORT}' },
  },
  peers: { box: { proxy: 'http://192.0.2.10:8080', models: ['remote'] } },
};

describe('unload endpoints', () => {
  let sim: Simulator;
  beforeEach(async () => {
    sim = await startSimulator({ config: CONFIG, knobs: { unloadDelayMs: 80 } });
  });
  afterEach(() => sim.close());

  it('POST /api/models/unload/{model} blocks until the model stopped and answers OK', async () => {
    await sim.load('a');
    const answer = fetch(`${sim.url}/api/models/unload/org/model-a`, { method: 'POST' });
    expect(await timerFiresFirst(80, answer)).toBe(true);
    const res = await answer;
    expect(res.status).toBe(200);
    expect(await res.text()).toBe('OK');
    expect(sim.state('org/model-a')).toBe('stopped');
  });

  it('accepts an alias and percent-encoded slashes', async () => {
    await sim.load('a');
    expect((await fetch(`${sim.url}/api/models/unload/a`, { method: 'POST' })).status).toBe(200);
    await sim.load('a');
    expect((await fetch(`${sim.url}/api/models/unload/org%2Fmodel-a`, { method: 'POST' })).status).toBe(200);
    expect(sim.state('a')).toBe('stopped');
  });

  it('treats unloading a model that is not running as a successful no-op', async () => {
    const res = await fetch(`${sim.url}/api/models/unload/b`, { method: 'POST' });
    expect(res.status).toBe(200);
    expect(await res.text()).toBe('OK');
  });

  it('answers 404 "model not found" for unknown and peer models', async () => {
    for (const name of ['nope', 'box/remote']) {
      const res = await fetch(`${sim.url}/api/models/unload/${name}`, { method: 'POST' });
      expect(res.status).toBe(404);
      expect((await json(res)).error.message).toBe('model not found');
    }
  });

  it('POST /api/models/unload stops everything and answers {"msg":"ok"}', async () => {
    await sim.load('b');
    const res = await fetch(`${sim.url}/api/models/unload`, { method: 'POST' });
    expect(await res.text()).toBe('{"msg":"ok"}\n');
    expect(sim.running()).toEqual([]);
  });

  it('GET /unload stops everything and answers OK', async () => {
    await sim.load('b');
    const res = await fetch(`${sim.url}/unload`);
    expect(await res.text()).toBe('OK');
    expect(sim.state('b')).toBe('stopped');
  });

  it('cuts in-flight generations instead of draining them, ending the body cleanly as llama-swap does', async () => {
    sim.knobs.tokensPerSecond = 40;
    sim.knobs.tokens = 40;
    const reader = new BodyReader(await postJson(`${sim.url}/v1/chat/completions`, chatBody('b', { stream: true })));
    await reader.until((t) => t.includes('"content":"'));
    await fetch(`${sim.url}/api/models/unload`, { method: 'POST' });
    await reader.rest();
    expect(reader.text).not.toContain('[DONE]');
    const rec = await sim.waitForClosed((r) => r.model === 'b');
    expect(rec.cutByServer).toBe(true);
    expect(rec.aborted).toBe(false);
  });

  it('plays an old llama-swap without /api/models/unload* and /api/version when legacyRoutes is on', async () => {
    sim.knobs.legacyRoutes = true;
    for (const [method, path] of [
      ['POST', '/api/models/unload'],
      ['POST', '/api/models/unload/b'],
      ['GET', '/api/version'],
      ['GET', '/api/models/unload'],
    ]) {
      const res = await fetch(`${sim.url}${path}`, { method });
      expect(res.status).toBe(404);
      expect(await res.text()).toBe('404 page not found\n');
    }
    expect(await (await fetch(`${sim.url}/unload`)).text()).toBe('OK');
  });
});
