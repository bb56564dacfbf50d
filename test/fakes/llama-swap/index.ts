/**
 * llama-swap simulator: a real HTTP server that behaves like llama-swap in front
 * of fake llama-servers. See README.md in this folder.
 */
import { LlamaSwapSimulator } from './simulator.js';
import type { Simulator, SimulatorOptions } from './types.js';

export async function startSimulator(options: SimulatorOptions = {}): Promise<Simulator> {
  return LlamaSwapSimulator.start(options);
}

export { DEMO_CONFIG, DEMO_KNOBS } from './demo-config.js';
export { DEFAULT_KNOBS } from './knobs.js';
export { countPromptTokens, completionText, completionPieces, embedding, EMBEDDING_DIMS } from './generate.js';
export type { Simulator, SimulatorOptions } from './types.js';
