/**
 * llama-swap's request filters (`internal/server/filters.go` `applyFilters`): on a JSON body,
 * `stripParams`, then `setParams`, then `setParamsByID[<requested name>]`, each key a path whose
 * dots reach into objects (sjson). `model` is protected. A `setParams` / `setParamsByID` key
 * ending in `?` is set only when the request does not carry it already (llama-swap#1075).
 */
export interface Filters {
  stripParams: string[];
  setParams: Record<string, unknown>;
  setParamsByID: Record<string, Record<string, unknown>>;
}

const PROTECTED = new Set(['model']);

export const NO_FILTERS: Filters = Object.freeze({ stripParams: [], setParams: {}, setParamsByID: {} });

/** Reads `filters` of a model or peer; a malformed part counts as absent. */
export function readFilters(raw: unknown): Filters {
  if (!isRecord(raw)) return NO_FILTERS;
  const strip = typeof raw.stripParams === 'string' ? raw.stripParams.split(',').map((p) => p.trim()) : [];
  const byId: Record<string, Record<string, unknown>> = {};
  if (isRecord(raw.setParamsByID)) {
    for (const [id, params] of Object.entries(raw.setParamsByID)) if (isRecord(params)) byId[id] = params;
  }
  return {
    stripParams: [...new Set(strip.filter((p) => p !== '' && !PROTECTED.has(p)))].sort(),
    setParams: isRecord(raw.setParams) ? raw.setParams : {},
    setParamsByID: byId,
  };
}

function hasFilters(f: Filters): boolean {
  return f.stripParams.length > 0 || Object.keys(f.setParams).length > 0 || Object.keys(f.setParamsByID).length > 0;
}

/** The body the model server receives; non-JSON-object bodies pass unchanged. */
export function applyFilters(body: Buffer, requested: string, f: Filters): Buffer {
  if (!hasFilters(f)) return body;
  let doc: unknown;
  try {
    doc = JSON.parse(body.toString('utf8'));
  } catch {
    return body;
  }
  if (!isRecord(doc)) return body;
  for (const path of f.stripParams) removePath(doc, path.split('.'));
  for (const params of [f.setParams, f.setParamsByID[requested] ?? {}]) {
    for (const key of Object.keys(params).sort()) {
      const ifAbsent = key.endsWith('?');
      const path = (ifAbsent ? key.slice(0, -1) : key).split('.');
      if (PROTECTED.has(path.join('.'))) continue;
      if (ifAbsent && hasPath(doc, path)) continue;
      setPath(doc, path, params[key]);
    }
  }
  return Buffer.from(JSON.stringify(doc));
}

function hasPath(doc: Record<string, unknown>, path: string[]): boolean {
  let node: unknown = doc;
  for (const seg of path) {
    if (!isRecord(node) || !(seg in node)) return false;
    node = node[seg];
  }
  return true;
}

function setPath(doc: Record<string, unknown>, path: string[], value: unknown): void {
  let node = doc;
  for (const seg of path.slice(0, -1)) {
    const next = node[seg];
    if (!isRecord(next)) node[seg] = {};
    node = node[seg] as Record<string, unknown>;
  }
  node[path[path.length - 1]!] = value;
}

function removePath(doc: Record<string, unknown>, path: string[]): void {
  let node: unknown = doc;
  for (const seg of path.slice(0, -1)) {
    if (!isRecord(node)) return;
    node = node[seg];
  }
  if (isRecord(node)) delete node[path[path.length - 1]!];
}

function isRecord(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}
