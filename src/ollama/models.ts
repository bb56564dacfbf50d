/**
 * llama-swap's model list and `/running` → Ollama's `/api/tags`, `/api/ps` and `/api/show`.
 * Only what llama-swap's metadata says is filled (context length, capabilities, a `family`
 * from the model's `metadata`); sizes are never invented (0), and the digest is the sha256 of the name.
 */
import { createHash } from 'node:crypto';
import { declaredContextLength } from '../live/model-capabilities.js';
import type { ModelEntry, RunningModel } from '../management-client/types.js';
import { listedName } from './names.js';

function details(entry: ModelEntry | undefined): Record<string, unknown> {
  const family = familyOf(entry);
  return {
    parent_model: '',
    format: 'gguf',
    family,
    families: family === '' ? null : [family],
    parameter_size: '',
    quantization_level: '',
  };
}

function familyOf(entry: ModelEntry | undefined): string {
  const family = entry?.meta?.llamaswap?.family;
  return typeof family === 'string' ? family : '';
}

function digest(name: string): string {
  return createHash('sha256').update(name).digest('hex');
}

function modifiedAt(entry: ModelEntry): string {
  return new Date((typeof entry.created === 'number' ? entry.created : 0) * 1000).toISOString();
}

/** One `/api/tags` entry. */
export function tagEntry(entry: ModelEntry): Record<string, unknown> {
  const name = listedName(entry.id);
  return { name, model: name, modified_at: modifiedAt(entry), size: 0, digest: digest(name), details: details(entry) };
}

/** One `/api/ps` entry for a model llama-swap runs; `entry` is its list entry when listed. */
export function runningEntry(model: RunningModel, entry: ModelEntry | undefined): Record<string, unknown> {
  const name = listedName(model.model);
  const context = entry ? declaredContextLength(entry) : null;
  return {
    name,
    model: name,
    size: 0,
    digest: digest(name),
    details: details(entry),
    // llama-swap unloads after `ttl` seconds idle, which it does not say from when: no expiry given.
    expires_at: '0001-01-01T00:00:00Z',
    size_vram: 0,
    ...(context !== null ? { context_length: context } : {}),
  };
}

/** Ollama's capability names from llama-swap's capability metadata. */
function capabilitiesOf(entry: ModelEntry): string[] {
  const output = entry.architecture?.output_modalities ?? [];
  const input = entry.architecture?.input_modalities ?? [];
  const flags = entry.capabilities ?? {};
  const embedding = output.includes('embedding') || output.includes('embeddings');
  const out: string[] = [embedding ? 'embedding' : 'completion'];
  if (flags.function_calling === true) out.push('tools');
  if (flags.vision === true || input.includes('image')) out.push('vision');
  if (flags.reasoning === true || flags.thinking === true) out.push('thinking');
  return out;
}

/** `/api/show`'s answer. */
export function showAnswer(entry: ModelEntry): Record<string, unknown> {
  const family = familyOf(entry);
  const architecture = family === '' ? 'llama-swap' : family;
  const context = declaredContextLength(entry);
  const modelInfo: Record<string, unknown> = { 'general.architecture': architecture, 'general.basename': entry.id };
  if (context !== null) modelInfo[`${architecture}.context_length`] = context;
  return {
    license: '',
    modelfile: '',
    parameters: '',
    template: '',
    details: details(entry),
    model_info: modelInfo,
    capabilities: capabilitiesOf(entry),
    modified_at: modifiedAt(entry),
  };
}
