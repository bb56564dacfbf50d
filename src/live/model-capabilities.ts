/**
 * A model's declared capabilities and context window, read from its `/v1/models` entry. llama-swap
 * renders them from the config's `capabilities` block (`renderCapabilities`, internal/server/api.go):
 * modalities as `architecture`, flags as `capabilities`, the context as `context_length` and `meta.n_ctx`.
 */
import type { ModelCapabilities } from '../admin-api/types.js';
import type { ModelEntry } from '../management-client/types.js';

export function declaredCapabilities(entry: ModelEntry): ModelCapabilities | null {
  const arch = entry.architecture;
  const flags = entry.capabilities;
  if (!isRecord(arch) && !isRecord(flags)) return null;
  return {
    input: strings(arch?.input_modalities),
    output: strings(arch?.output_modalities),
    tools: flags?.function_calling === true,
    reranker: flags?.reranker === true,
  };
}

export function declaredContextLength(entry: ModelEntry): number | null {
  for (const value of [entry.context_length, entry.meta?.n_ctx]) {
    if (typeof value === 'number' && Number.isInteger(value) && value > 0) return value;
  }
  return null;
}

function strings(value: unknown): string[] {
  return Array.isArray(value) ? value.filter((v): v is string => typeof v === 'string') : [];
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}
