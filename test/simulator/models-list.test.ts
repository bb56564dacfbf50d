import { afterEach, describe, expect, it } from 'vitest';
import { startSimulator, DEMO_CONFIG, type Simulator } from '../fakes/llama-swap/index.js';
import { json } from './helpers.js';

describe('/v1/models and /models', () => {
  let sim: Simulator | undefined;
  afterEach(async () => {
    await sim?.close();
    sim = undefined;
  });

  it('lists local models, aliases in meta, capabilities and peers, sorted by id, with created = now', async () => {
    sim = await startSimulator({ config: { ...DEMO_CONFIG } });
    const before = Math.floor(Date.now() / 1000);
    const res = await fetch(`${sim.url}/v1/models`);
    expect(res.headers.get('content-type')).toBe('application/json');
    const body = (await json(res)) as { object: string; data: Array<Record<string, unknown>> };
    expect(body.object).toBe('list');
    const created = body.data[0]!.created as number;
    expect(created).toBeGreaterThanOrEqual(before);
    expect(body.data).toEqual([
      {
        id: 'gpu-box/llama-3.3-70b',
        object: 'model',
        created,
        owned_by: 'llama-swap',
        name: 'gpu-box: llama-3.3-70b',
        meta: { llamaswap: { type: 'peer', peerID: 'gpu-box' } },
        status: { value: 'unloaded' },
      },
      {
        id: 'llama-3.2-3b',
        object: 'model',
        created,
        owned_by: 'llama-swap',
        name: 'Llama 3.2 3B',
        description: 'Small fast chat model',
        meta: { llamaswap: { type: 'model' } },
        status: { value: 'unloaded' },
      },
      {
        id: 'nomic-embed',
        object: 'model',
        created,
        owned_by: 'llama-swap',
        name: 'Nomic Embed v1.5',
        meta: { llamaswap: { type: 'model', aliases: ['text-embedding-3-small'] } },
        status: { value: 'unloaded' },
      },
      {
        id: 'qwen3-8b',
        object: 'model',
        created,
        owned_by: 'llama-swap',
        name: 'Qwen3 8B',
        description: 'General chat model',
        architecture: { input_modalities: ['text'], output_modalities: ['text'], modality: 'text->text' },
        capabilities: { function_calling: true },
        supported_parameters: ['tools', 'tool_choice'],
        context_length: 32768,
        meta: { llamaswap: { family: 'qwen3', type: 'model', aliases: ['gpt-4o-mini', 'qwen'] }, n_ctx: 32768 },
        status: { value: 'unloaded' },
      },
    ]);
  });

  it('serves the same list on /models', async () => {
    sim = await startSimulator({ config: { ...DEMO_CONFIG } });
    const a = (await json(await fetch(`${sim.url}/v1/models`))) as { data: Array<{ id: string }> };
    const b = (await json(await fetch(`${sim.url}/models`))) as { data: Array<{ id: string }> };
    expect(b.data.map((m) => m.id)).toEqual(a.data.map((m) => m.id));
  });

  it('hides unlisted models from the list but still routes them and shows them in /running', async () => {
    sim = await startSimulator({ config: { ...DEMO_CONFIG } });
    const list = (await json(await fetch(`${sim.url}/v1/models`))) as { data: Array<{ id: string }> };
    expect(list.data.map((m) => m.id)).not.toContain('secret-experiment');
    await sim.load('secret-experiment');
    const running = (await json(await fetch(`${sim.url}/running`))) as { running: Array<{ model: string }> };
    expect(running.running.map((r) => r.model)).toEqual(['secret-experiment']);
  });

  it('adds one alias entry per alias with includeAliasesInList', async () => {
    sim = await startSimulator({ config: { ...DEMO_CONFIG, includeAliasesInList: true } });
    const list = (await json(await fetch(`${sim.url}/v1/models`))) as { data: Array<Record<string, unknown>> };
    const alias = list.data.find((m) => m.id === 'gpt-4o-mini');
    expect(alias).toMatchObject({
      name: 'Qwen3 8B',
      meta: { llamaswap: { type: 'alias', modelID: 'qwen3-8b', family: 'qwen3' } },
    });
  });

  it('reports status loaded while the model is still starting', async () => {
    sim = await startSimulator({ config: { ...DEMO_CONFIG }, knobs: { loadDelayMs: 5000 } });
    const loading = sim.load('qwen').catch((err: unknown) => err);
    await sim.waitForState('qwen', 'starting');
    const list = (await json(await fetch(`${sim.url}/v1/models`))) as {
      data: Array<{ id: string; status: { value: string } }>;
    };
    expect(list.data.find((m) => m.id === 'qwen3-8b')?.status).toEqual({ value: 'loaded' });
    await sim.unload();
    expect(String(await loading)).toContain('model unloaded');
  });

  it('echoes the Origin header for browser clients', async () => {
    sim = await startSimulator({ config: { ...DEMO_CONFIG } });
    const res = await fetch(`${sim.url}/v1/models`, { headers: { origin: 'http://dash.local' } });
    expect(res.headers.get('access-control-allow-origin')).toBe('http://dash.local');
  });
});
