import type { Knobs } from './types.js';

/**
 * A small config for `npm run demo` and tests that do not care about the exact model set:
 * two chat models (one with aliases), an embedding model, an unlisted model and one peer.
 */
export const DEMO_CONFIG: Readonly<Record<string, unknown>> = Object.freeze({
  includeAliasesInList: false,
  models: {
    'qwen3-8b': {
      name: 'Qwen3 8B',
      description: 'General chat model',
      cmd: 'llama-server --port ${PORT} -m /models/Qwen3-8B-Q4_K_M.gguf -c 32768',
      aliases: ['gpt-4o-mini', 'qwen'],
      capabilities: { in: ['text'], out: ['text'], tools: true, context: 32768 },
      metadata: { family: 'qwen3' },
    },
    'llama-3.2-3b': {
      name: 'Llama 3.2 3B',
      description: 'Small fast chat model',
      cmd: 'llama-server --port ${PORT} -m /models/Llama-3.2-3B-Instruct-Q4_K_M.gguf',
      ttl: 300,
    },
    'nomic-embed': {
      name: 'Nomic Embed v1.5',
      cmd: 'llama-server --port ${PORT} -m /models/nomic-embed-text-v1.5.Q8_0.gguf --embeddings',
      aliases: ['text-embedding-3-small'],
    },
    'secret-experiment': {
      description: 'Hidden from /v1/models but routable',
      cmd: 'llama-server --port ${PORT} -m /models/experiment.gguf',
      unlisted: true,
    },
  },
  peers: {
    'gpu-box': {
      proxy: 'http://192.0.2.10:8080',
      models: ['llama-3.3-70b'],
    },
  },
});

/** `npm run demo`'s pace: slow enough to watch a model load and tokens stream, fast enough not to bore. */
export const DEMO_KNOBS: Readonly<Partial<Knobs>> = Object.freeze({
  loadDelayMs: 1500,
  firstTokenDelayMs: 150,
  tokensPerSecond: 25,
  tokens: 24,
});
