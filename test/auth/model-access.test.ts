import { describe, expect, it } from 'vitest';
import { cachedCatalog, catalogFromList, modelCovered } from '../../src/auth/model-access.js';
import type { ListedModel } from '../../src/proxy/models-list.js';

/** llama-swap's `/v1/models` shape: models with aliases, an alias entry, a peer, a selector. */
const LIST: ListedModel[] = [
  { id: 'qwen-7b', meta: { llamaswap: { type: 'model', aliases: ['qwen', 'gpt-4o-mini'] } } },
  { id: 'llama-3.2-3b', meta: { llamaswap: { type: 'model', aliases: ['llama'] } } },
  { id: 'qwen-evil', meta: { llamaswap: { type: 'alias', modelID: 'llama-3.2-3b' } } },
  { id: 'gpu-box/mistral', meta: { llamaswap: { type: 'peer', peerID: 'gpu-box' } } },
  { id: 'qwen-auto', meta: { llamaswap: { type: 'selector' } } },
];
const catalog = catalogFromList(LIST);

describe('modelCovered', () => {
  it('allows every model when the list is empty, and exactly the listed names without a catalog', () => {
    expect(modelCovered([], 'anything', undefined)).toBe(true);
    expect(modelCovered(['qwen-7b'], 'qwen-7b', undefined)).toBe(true);
    expect(modelCovered(['qwen-7b'], 'Qwen-7b', undefined)).toBe(false);
    expect(modelCovered(['qwen-7b'], 'qwen', undefined)).toBe(false);
  });

  it("lets a key allowed a model call the model's aliases, and an allowed alias its model", () => {
    expect(modelCovered(['qwen-7b'], 'qwen', catalog)).toBe(true);
    expect(modelCovered(['qwen-7b'], 'gpt-4o-mini', catalog)).toBe(true);
    expect(modelCovered(['qwen'], 'qwen-7b', catalog)).toBe(true);
    expect(modelCovered(['qwen'], 'gpt-4o-mini', catalog)).toBe(true);
    expect(modelCovered(['qwen'], 'llama', catalog)).toBe(false);
  });

  it('matches patterns against the model a name routes to, not against the name', () => {
    expect(modelCovered(['qwen*'], 'qwen-7b', catalog)).toBe(true);
    expect(modelCovered(['qwen*'], 'gpt-4o-mini', catalog)).toBe(true);
    // An alias whose name fits the pattern but routes to another model.
    expect(modelCovered(['qwen*'], 'qwen-evil', catalog)).toBe(false);
    expect(modelCovered(['qwen*'], 'llama-3.2-3b', catalog)).toBe(false);
  });

  it("covers a peer's models with `peer/*`, by full name and by a bare name only one peer lists", () => {
    expect(modelCovered(['gpu-box/*'], 'gpu-box/mistral', catalog)).toBe(true);
    expect(modelCovered(['gpu-box/*'], 'mistral', catalog)).toBe(true);
    expect(modelCovered(['gpu-box/*'], 'qwen-7b', catalog)).toBe(false);
  });

  it('never lets a pattern cover a selector or a name llama-swap does not list', () => {
    expect(modelCovered(['qwen*'], 'qwen-auto', catalog)).toBe(false);
    expect(modelCovered(['qwen-auto'], 'qwen-auto', catalog)).toBe(true);
    expect(modelCovered(['qwen*'], 'qwen-unlisted', catalog)).toBe(false);
    expect(modelCovered(['qwen*'], 'qwen-unlisted', undefined)).toBe(false);
  });
});

describe('a profile that pins names', () => {
  // The active profile sends "qwen-7b" and its alias "qwen" to llama (llama-swap's profile pins).
  const pinned = catalogFromList(LIST, { 'qwen-7b': 'llama-3.2-3b', qwen: 'llama-3.2-3b', fast: 'qwen-7b' });

  it('refuses a listed name the profile sends to a model the key may not use', () => {
    expect(modelCovered(['qwen-7b'], 'qwen-7b', pinned)).toBe(false);
    expect(modelCovered(['qwen'], 'qwen', pinned)).toBe(false);
    expect(modelCovered(['qwen*'], 'qwen-7b', pinned)).toBe(false);
  });

  it('allows a pin name that routes to an allowed model', () => {
    expect(modelCovered(['qwen-7b'], 'fast', pinned)).toBe(true);
    expect(modelCovered(['llama'], 'qwen', pinned)).toBe(true);
  });
});

describe('cachedCatalog', () => {
  it('asks llama-swap at most once per ttl and keeps the last list while it is unreachable', async () => {
    let clock = 0;
    let calls = 0;
    let up = true;
    const get = cachedCatalog(
      async () => {
        calls++;
        if (!up) throw new Error('down');
        return LIST;
      },
      undefined,
      { ttlMs: 1000, staleMs: 5000, now: () => clock },
    );
    expect((await get())?.resolve('qwen')).toBe('qwen-7b');
    await get();
    expect(calls).toBe(1);
    clock = 2000;
    up = false;
    expect((await get())?.resolve('qwen')).toBe('qwen-7b');
    expect(calls).toBe(2);
    clock = 10_000;
    expect(await get()).toBeUndefined();
  });
});
