import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { startSimulator, type Simulator } from '../fakes/llama-swap/index.js';
import { chatBody, postJson, json } from './helpers.js';

const V1 = `
models:
  qwen:
    cmd: llama-server --port \${PORT} -m qwen.gguf
    aliases: [gpt-4o-mini]
`;

const V2 = `
models:
  qwen:
    cmd: llama-server --port \${PORT} -m qwen.gguf
    aliases: [gpt-4o-mini]
  llama:
    cmd: llama-server --port \${PORT} -m llama.gguf
`;

async function modelIds(sim: Simulator): Promise<string[]> {
  const body = (await json(await fetch(`${sim.url}/v1/models`))) as { data: Array<{ id: string }> };
  return body.data.map((m) => m.id);
}

describe('config watching and reload', () => {
  let dir: string;
  let file: string;
  let sim: Simulator;
  beforeEach(async () => {
    dir = await mkdtemp(join(tmpdir(), 'sim-config-'));
    file = join(dir, 'config.yaml');
    await writeFile(file, V1);
    sim = await startSimulator({ configFile: file, watchConfig: true, watchIntervalMs: 40, reloadStatusDelayMs: 20 });
  });
  afterEach(async () => {
    await sim.close();
    await rm(dir, { recursive: true, force: true });
  });

  it('applies a valid change, unloading every model, and logs the reload', async () => {
    await postJson(`${sim.url}/v1/chat/completions`, chatBody('gpt-4o-mini'));
    expect(sim.state('qwen')).toBe('ready');
    await writeFile(file, V2);
    await sim.waitForLog('proxy', '[INFO] configuration reloaded\n');
    expect(sim.logHistory('proxy')).toContain('[INFO] reloading configuration\n');
    expect(sim.state('qwen')).toBe('stopped');
    expect(await modelIds(sim)).toEqual(['llama', 'qwen']);
  });

  it('keeps the old config and logs a WARN line when the YAML does not parse', async () => {
    await sim.load('qwen');
    await writeFile(file, 'models:\n  qwen: [unclosed\n');
    const line = await sim.waitForLog('proxy', /\[WARN\] failed to reload config: .+\n/);
    expect(line).toMatch(/^\[WARN\] failed to reload config: yaml: /);
    expect(sim.state('qwen')).toBe('ready');
    expect(await modelIds(sim)).toEqual(['qwen']);
  });

  it('rejects a duplicate alias across models with the loader message', async () => {
    await writeFile(file, `${V2}    aliases: [gpt-4o-mini]\n`);
    await sim.waitForLog('proxy', '[WARN] failed to reload config: duplicate alias gpt-4o-mini found in model: qwen\n');
    expect(await modelIds(sim)).toEqual(['qwen']);
  });

  it('rejects a model without cmd (the default proxy needs ${PORT} in cmd)', async () => {
    await writeFile(file, `${V1}  broken:\n    name: no command here\n`);
    await sim.waitForLog('proxy', /\[WARN\] failed to reload config: model broken: .*cmd/);
    expect(await modelIds(sim)).toEqual(['qwen']);
  });

  it('fails queued requests with "group is shutting down" when a reload lands while they wait', async () => {
    sim.knobs.loadDelayMs = 300;
    const pending = postJson(`${sim.url}/v1/chat/completions`, chatBody('qwen'));
    await sim.waitForState('qwen', 'starting');
    expect(await sim.reload()).toEqual({ ok: true });
    const res = await pending;
    expect(res.status).toBe(500);
    expect((await json(res)).error.message).toBe('unspecific error: group is shutting down');
  });

  it('reloads programmatically and reports loader errors to the caller', async () => {
    const bad = await sim.reload({
      models: { a: { cmd: 'x --port ${PORT}', aliases: ['z'] }, b: { cmd: 'y --port ${PORT}', aliases: ['z'] } },
    });
    expect(bad).toEqual({ ok: false, error: 'duplicate alias z found in model: b' });
    expect(await sim.reload({ models: { solo: { cmd: 'llama-server --port ${PORT}' } } })).toEqual({ ok: true });
    expect(await modelIds(sim)).toEqual(['solo']);
  });
});
