/**
 * Which model the Endpoints page fills in first: a chat model for the chat snippets and an
 * embedding model for the embedding ones. What llama-swap's config declares decides; the name
 * decides when it declares nothing (llama-swap has no "embedding" capability to declare).
 */
import type { Model } from '@gatehouse/admin-api/types.js';

export type ModelUse = 'chat' | 'embedding' | 'reranker' | 'other';

type ModelFacts = Pick<Model, 'id' | 'name' | 'aliases' | 'capabilities'>;

/** What a model is for, from its declared capabilities, else from its id, name and aliases. */
export function modelUse(model: ModelFacts): ModelUse {
  const caps = model.capabilities;
  if (caps?.reranker) return 'reranker';
  if (caps && caps.output.length > 0) {
    // Text in and text out is a chat model; speech, image and transcription models are not.
    const textIn = caps.input.length === 0 || caps.input.includes('text');
    return textIn && caps.output.includes('text') ? 'chat' : 'other';
  }
  if (caps?.tools) return 'chat';
  const names = [model.id, model.name ?? '', ...model.aliases].join(' ');
  if (/rerank/i.test(names)) return 'reranker';
  if (/embed/i.test(names)) return 'embedding';
  return 'chat';
}

/** The use of an id among llama-swap's models; an id it does not list is judged by the id alone. */
export function usesOf(models: readonly Model[]): (id: string) => ModelUse {
  const byId = new Map(models.map((m) => [m.id, m]));
  return (id) => modelUse(byId.get(id) ?? { id, name: null, aliases: [] });
}

export interface DefaultModels {
  chat: string | null;
  embedding: string | null;
}

/** A picker option: a model or alias llama-swap lists, or an id only a key's allow-list names. */
interface Choice {
  id: string;
  kind: 'model' | 'alias' | 'other';
}

/**
 * The first picks among the options the key may use, for each use: a loaded model, else a
 * configured one, else an alias or an id the key allows; null when no option has that use.
 */
export function defaultModels(models: readonly Model[], options: readonly Choice[]): DefaultModels {
  const byId = new Map(models.map((m) => [m.id, m]));
  const useOf = usesOf(models);
  const ranked = (use: ModelUse): string | null => {
    const fitting = options.filter((o) => useOf(o.id) === use);
    const loaded = fitting.find((o) => o.kind === 'model' && isLoaded(byId.get(o.id)));
    return (loaded ?? fitting.find((o) => o.kind === 'model') ?? fitting[0])?.id ?? null;
  };
  return { chat: ranked('chat'), embedding: ranked('embedding') };
}

function isLoaded(model: Model | undefined): boolean {
  return model?.state === 'ready' || model?.state === 'starting';
}
