/**
 * The dashboard's model list from what the upstream reports: the catalogue (`/v1/models`: kinds,
 * names, aliases, peers), the local processes (`/running`: state, TTL) and, between two reads,
 * the states of llama-swap's `/api/events` `modelStatus` (docs/llama-swap.md, "Model list").
 * llama-server's client answers the same two questions from its `/models`.
 */
import type { Model, ModelState } from '../admin-api/types.js';
import type { ModelEntry, ModelStatusEntry, RunningModel } from '../management-client/types.js';
import { entryAliases } from '../management-client/model-entry.js';
import { declaredCapabilities, declaredContextLength } from './model-capabilities.js';

/** Merges the catalogue with the running processes; unlisted models appear while they run. */
export function mergeModels(models: ModelEntry[], running: RunningModel[]): Model[] {
  const states = new Map(running.map((r) => [r.model, r]));
  const out: Model[] = [];
  const seen = new Set<string>();
  for (const m of models) {
    const meta = m.meta?.llamaswap ?? {};
    const type = meta.type ?? 'model';
    if (type === 'selector' || type === 'profile') continue;
    const realId = type === 'alias' && typeof meta.modelID === 'string' ? meta.modelID : m.id;
    const run = type === 'peer' ? undefined : states.get(realId);
    seen.add(m.id);
    out.push({
      id: m.id,
      name: m.name ?? null,
      description: m.description ?? null,
      kind: type === 'peer' ? 'peer' : type === 'alias' ? 'alias' : 'model',
      aliases: entryAliases(m),
      peerId: typeof meta.peerID === 'string' ? meta.peerID : null,
      unlisted: false,
      state: run ? normaliseState(run.state) : 'stopped',
      ttl: run ? run.ttl : null,
      capabilities: declaredCapabilities(m),
      contextLength: declaredContextLength(m),
    });
  }
  // Unlisted models are hidden from /v1/models but show up in /running while they run.
  for (const r of running) {
    if (seen.has(r.model)) continue;
    out.push({
      id: r.model,
      name: r.name || null,
      description: r.description || null,
      kind: 'model',
      aliases: [],
      peerId: null,
      unlisted: true,
      state: normaliseState(r.state),
      ttl: r.ttl,
      capabilities: null,
      contextLength: null,
    });
  }
  return sortModels(out);
}

/**
 * The list with the states of a `modelStatus` event. An alias takes its model's state; an
 * unlisted model is shown while it runs. TTLs come from `ttls` (`/running`), kept per model.
 */
export function applyStatus(
  list: Model[],
  status: ModelStatusEntry[],
  ttls: ReadonlyMap<string, number>,
  aliasTargets: ReadonlyMap<string, string>,
): Model[] {
  const states = new Map(status.filter((s) => !s.peerID).map((s) => [s.id, normaliseState(s.state)]));
  const stateOf = (id: string, current: ModelState) => states.get(aliasTargets.get(id) ?? id) ?? current;
  const out: Model[] = [];
  const seen = new Set<string>();
  for (const m of list) {
    seen.add(m.id);
    if (m.kind === 'peer') {
      out.push(m);
      continue;
    }
    const state = stateOf(m.id, m.state);
    if (m.unlisted && state === 'stopped') continue;
    const ttlId = aliasTargets.get(m.id) ?? m.id;
    out.push({ ...m, state, ttl: state === 'stopped' ? null : (ttls.get(ttlId) ?? m.ttl) });
  }
  for (const s of status) {
    const state = normaliseState(s.state);
    if (s.peerID || seen.has(s.id) || !s.unlisted || state === 'stopped') continue;
    out.push({
      id: s.id,
      name: s.name || null,
      description: s.description || null,
      kind: 'model',
      aliases: [],
      peerId: null,
      unlisted: true,
      state,
      ttl: ttls.get(s.id) ?? null,
      capabilities: null,
      contextLength: null,
    });
  }
  return sortModels(out);
}

/** Alias → model, from the catalogue's alias entries and each model's `aliases`. */
export function aliasTargetsOf(models: ModelEntry[]): Map<string, string> {
  const targets = new Map<string, string>();
  for (const m of models) {
    const meta = m.meta?.llamaswap ?? {};
    if (meta.type === 'alias' && typeof meta.modelID === 'string') targets.set(m.id, meta.modelID);
  }
  return targets;
}

function sortModels(models: Model[]): Model[] {
  return models.sort((a, b) => (a.kind === 'peer' ? 1 : 0) - (b.kind === 'peer' ? 1 : 0) || a.id.localeCompare(b.id));
}

function normaliseState(state: string): ModelState {
  return state === 'starting' || state === 'ready' || state === 'stopping' ? state : 'stopped';
}
