/**
 * Which models a restricted key may call. An entry of a key's list is a model ID, an alias, or a
 * pattern with `*` (`qwen*`, `gpu-box/*` for a peer's models). Names are resolved the way
 * llama-swap resolves them (`RealModelName`: model ID, then alias; a bare peer model name when
 * exactly one peer lists it), from its model list:
 * - the name the call asks for, when it is on the list itself, is always allowed;
 * - otherwise the call's model is allowed when an entry names the same model (the model itself
 *   or any of its aliases), or a pattern matches the model's ID (models and peer models only —
 *   selectors and profile pins are allowed only by name).
 * A name llama-swap's list does not know is allowed only when it is on the key's list as is.
 * While a profile is active, a call's name is first rewritten by the profile's pins, as
 * llama-swap does (`CreateProfileMiddleware`), and the rewritten name is what must be allowed.
 */
import type { ModelAllowance } from '../core/context.js';
import { entryAliases } from '../management-client/model-entry.js';

/** What the catalog reads of an entry of llama-swap's `GET /v1/models`. */
export interface ListedModel {
  id: string;
  meta?: unknown;
  /** llama-server's router lists aliases here. */
  aliases?: unknown;
}

export interface ModelCatalog {
  /** The real model a name names, or undefined when the list does not know the name. */
  resolve(name: string): string | undefined;
  /** The name the active profile rewrites a call's model to (llama-swap's profile pins), if any. */
  pinned(name: string): string | undefined;
  /** Whether a pattern may cover this real model (a local or peer model, not a selector). */
  coverable(id: string): boolean;
}

function isPattern(entry: string): boolean {
  return entry.includes('*');
}

export function modelCovered(
  allowed: readonly string[],
  requested: string,
  catalog: ModelCatalog | undefined,
): boolean {
  if (allowed.length === 0) return true;
  // An active profile may send the name elsewhere; then the name on the list is not enough.
  const pinned = catalog?.pinned(requested);
  const name = pinned ?? requested;
  if (allowed.includes(name)) return true;
  if (!catalog) return false;
  const target = catalog.resolve(name);
  if (target === undefined) return false;
  for (const entry of allowed) {
    if (isPattern(entry)) {
      if (catalog.coverable(target) && globToRegExp(entry).test(target)) return true;
    } else if (catalog.resolve(entry) === target) return true;
  }
  return false;
}

const globCache = new Map<string, RegExp>();

function globToRegExp(glob: string): RegExp {
  let re = globCache.get(glob);
  if (!re) {
    re = new RegExp(
      `^${glob
        .split('*')
        .map((part) => part.replace(/[.*+?^${}()|[\]\\]/g, '\\$&'))
        .join('.*')}$`,
      's',
    );
    if (globCache.size > 1000) globCache.clear();
    globCache.set(glob, re);
  }
  return re;
}

/**
 * Builds the catalog from llama-swap's `GET /v1/models` entries (their `meta.llamaswap`) and the
 * pins of its active profile (`GET /api/profiles`).
 */
export function catalogFromList(
  models: readonly ListedModel[],
  pins: Readonly<Record<string, string>> = {},
): ModelCatalog {
  const kinds = new Map<string, string>();
  const aliasOf = new Map<string, string>();
  const peersByModel = new Map<string, string[]>();
  for (const m of models) {
    const info = llamaswapMeta(m);
    const type = typeof info.type === 'string' ? info.type : 'model';
    if (type === 'alias') {
      if (typeof info.modelID === 'string') aliasOf.set(m.id, info.modelID);
      continue;
    }
    kinds.set(m.id, type);
    for (const alias of entryAliases(m)) aliasOf.set(alias, m.id);
    if (type === 'peer' && typeof info.peerID === 'string' && m.id.startsWith(`${info.peerID}/`)) {
      const bare = m.id.slice(info.peerID.length + 1);
      peersByModel.set(bare, [...(peersByModel.get(bare) ?? []), m.id]);
    }
  }
  return {
    resolve(name) {
      if (kinds.has(name)) return name;
      const alias = aliasOf.get(name);
      if (alias !== undefined) return alias;
      const peers = peersByModel.get(name);
      return peers?.length === 1 ? peers[0] : undefined;
    },
    pinned(name) {
      return Object.hasOwn(pins, name) && pins[name] !== '' ? pins[name] : undefined;
    },
    coverable(id) {
      const kind = kinds.get(id);
      return kind === 'model' || kind === 'peer';
    },
  };
}

function llamaswapMeta(m: ListedModel): { type?: unknown; modelID?: unknown; peerID?: unknown } {
  const meta = m.meta as { llamaswap?: Record<string, unknown> } | undefined;
  return meta?.llamaswap ?? {};
}

/**
 * The catalog, refreshed from llama-swap at most every `ttlMs` and only when a call needs it
 * (a name not on the key's list as is). While llama-swap cannot be asked, the last list is used
 * for up to `staleMs`; after that only names on a key's list as is are allowed.
 */
export function cachedCatalog(
  list: () => Promise<ListedModel[]>,
  activePins: () => Promise<Readonly<Record<string, string>>> = async () => ({}),
  { ttlMs = 10_000, staleMs = 300_000, now = Date.now } = {},
) {
  let current: { catalog: ModelCatalog; at: number } | undefined;
  let pending: Promise<ModelCatalog | undefined> | undefined;
  return function catalog(): Promise<ModelCatalog | undefined> {
    const at = now();
    if (current && at - current.at < ttlMs) return Promise.resolve(current.catalog);
    pending ??= Promise.all([list(), activePins()])
      .then(([models, pins]) => {
        current = { catalog: catalogFromList(models, pins), at: now() };
        return current.catalog;
      })
      .catch(() => (current && now() - current.at < staleMs ? current.catalog : undefined))
      .finally(() => {
        pending = undefined;
      });
    return pending;
  };
}

/**
 * The entries of a key's model list that fall outside a member's allowance (empty: all
 * inside). An empty allowance allows every list; an empty key list means every model, which a
 * non-empty allowance does not cover. A pattern on the key must be in the allowance as is; a
 * name is inside when the allowance covers it as it would cover a call to it.
 */
export function outsideAllowance(
  allowance: readonly string[],
  keyModels: readonly string[],
  catalog: ModelCatalog | undefined,
): string[] {
  if (allowance.length === 0) return [];
  if (keyModels.length === 0) return ['*'];
  return keyModels.filter((entry) =>
    isPattern(entry) ? !allowance.includes(entry) : !modelCovered(allowance, entry, catalog),
  );
}

/** Whether the key's list or its owner's allowance narrows what the caller may use. */
export function allowanceRestricts(allowance: ModelAllowance): boolean {
  return allowance.key.length > 0 || allowance.owner.length > 0;
}

/** Whether a call to `requested` is allowed both by the key's list and by its owner's allowance. */
export function allowanceCovers(
  allowance: ModelAllowance,
  requested: string,
  catalog: ModelCatalog | undefined,
): boolean {
  return modelCovered(allowance.key, requested, catalog) && modelCovered(allowance.owner, requested, catalog);
}

/** What a refusal tells the caller it may use: the key's list, and its owner's allowance when that narrows it. */
export function allowanceText(allowance: ModelAllowance): string {
  const parts: string[] = [];
  if (allowance.key.length > 0) parts.push(`Allowed: ${allowance.key.join(', ')}`);
  if (allowance.owner.length > 0) parts.push(`the key's owner may use only: ${allowance.owner.join(', ')}`);
  return parts.join('; ');
}
