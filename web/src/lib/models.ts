import type { Model, ModelKind, ModelState } from '../api/index.js';

export function isActive(state: ModelState): boolean {
  return state === 'ready' || state === 'starting' || state === 'stopping';
}

export interface ModelGroup {
  kind: ModelKind;
  label: string;
  models: Model[];
}

const GROUPS: Array<{ kind: ModelKind; label: string }> = [
  { kind: 'model', label: 'Local models' },
  { kind: 'alias', label: 'Aliases' },
  { kind: 'peer', label: 'Peers' },
];

/** Local models, then aliases, then peers; llama-swap's order inside each group. */
export function groupModels(models: Model[]): ModelGroup[] {
  return GROUPS.map((group) => ({ ...group, models: models.filter((m) => m.kind === group.kind) })).filter(
    (group) => group.models.length > 0,
  );
}
