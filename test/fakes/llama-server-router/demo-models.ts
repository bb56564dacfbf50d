/** The router simulator's models for `npm run demo` (`DEMO_UPSTREAM=llama-server`) and its tests. */
import type { RouterSimulatorOptions } from './index.js';

export const ROUTER_DEMO: Readonly<Omit<RouterSimulatorOptions, 'host' | 'port'>> = Object.freeze({
  models: [
    { id: 'qwen3-8b', aliases: ['gpt-4o-mini', 'qwen'] },
    { id: 'llama-3.2-3b' },
    { id: 'gemma-3-4b-vision', vision: true },
    { id: 'nomic-embed', aliases: ['text-embedding-3-small'], embeddings: true },
  ],
  modelsMax: 2,
  loadDelayMs: 1500,
  unloadDelayMs: 300,
  knobs: { tokensPerSecond: 20, tokens: 24 },
});
