/**
 * Walks llama-swap's JSON schema (draft-07, as GET /api/config sends it) along a YAML path:
 * which properties a mapping may have, which values a key takes, and what a key means.
 * `$ref` (local), `allOf`/`anyOf`/`oneOf`, `properties`, `patternProperties`,
 * `additionalProperties` and `items` are followed; a union contributes all its branches, since
 * the editor cannot know which one the user means yet.
 */
import type { PathSegment } from './yaml-context.js';

export type JsonSchema = Record<string, unknown>;

const isObject = (value: unknown): value is JsonSchema =>
  typeof value === 'object' && value !== null && !Array.isArray(value);

function resolveRef(root: JsonSchema, ref: string): JsonSchema | undefined {
  if (!ref.startsWith('#/')) return undefined;
  let node: unknown = root;
  for (const raw of ref.slice(2).split('/')) {
    const part = decodeURIComponent(raw).replace(/~1/g, '/').replace(/~0/g, '~');
    if (!isObject(node)) return undefined;
    node = node[part];
  }
  return isObject(node) ? node : undefined;
}

/** The schema and every schema it is made of (refs resolved, unions flattened), depth-limited. */
function expand(root: JsonSchema, schema: unknown, depth = 0): JsonSchema[] {
  if (!isObject(schema) || depth > 12) return [];
  const out: JsonSchema[] = [];
  const ref = schema.$ref;
  if (typeof ref === 'string') {
    const target = resolveRef(root, ref);
    if (target) out.push(...expand(root, target, depth + 1));
  }
  out.push(schema);
  for (const keyword of ['allOf', 'anyOf', 'oneOf'] as const) {
    const branches = schema[keyword];
    if (Array.isArray(branches)) for (const branch of branches) out.push(...expand(root, branch, depth + 1));
  }
  return out;
}

function child(root: JsonSchema, schema: JsonSchema, segment: PathSegment): JsonSchema[] {
  if (typeof segment === 'number') {
    const items = schema.items;
    if (Array.isArray(items)) return items.flatMap((item) => expand(root, item));
    return expand(root, items);
  }
  const properties = schema.properties;
  if (isObject(properties) && isObject(properties[segment])) return expand(root, properties[segment]);
  const patterns = schema.patternProperties;
  if (isObject(patterns)) {
    for (const [pattern, sub] of Object.entries(patterns)) {
      try {
        if (new RegExp(pattern, 'u').test(segment)) return expand(root, sub);
      } catch {
        // not a JavaScript-compatible pattern: skip it
      }
    }
  }
  return isObject(schema.additionalProperties) ? expand(root, schema.additionalProperties) : [];
}

/** Every schema that applies to the node at `path` (empty: unknown to the schema). */
export function schemasAt(root: JsonSchema, path: readonly PathSegment[]): JsonSchema[] {
  let current = expand(root, root);
  for (const segment of path) {
    current = current.flatMap((schema) => child(root, schema, segment));
    if (current.length === 0) break;
  }
  return current;
}

export interface PropertyDoc {
  name: string;
  description: string | null;
  type: string | null;
  required: boolean;
  enumValues: unknown[] | null;
  defaultValue: unknown;
}

function typeLabel(schemas: readonly JsonSchema[]): string | null {
  const types = new Set<string>();
  for (const schema of schemas) {
    const type = schema.type;
    if (typeof type === 'string') types.add(type);
    else if (Array.isArray(type)) for (const t of type) if (typeof t === 'string') types.add(t);
  }
  if (types.size === 0) return null;
  return [...types].join(' | ');
}

/** What a node's schemas say about it: the first description wins, enums are merged. */
export function describe(schemas: readonly JsonSchema[]): Omit<PropertyDoc, 'name' | 'required'> {
  let description: string | null = null;
  let defaultValue: unknown;
  const enums: unknown[] = [];
  let hasEnum = false;
  for (const schema of schemas) {
    if (description === null && typeof schema.description === 'string') description = schema.description;
    if (defaultValue === undefined && 'default' in schema) defaultValue = schema.default;
    if (Array.isArray(schema.enum)) {
      hasEnum = true;
      for (const value of schema.enum) if (!enums.includes(value)) enums.push(value);
    }
    if ('const' in schema && !enums.includes(schema.const)) {
      hasEnum = true;
      enums.push(schema.const);
    }
  }
  return { description, type: typeLabel(schemas), enumValues: hasEnum ? enums : null, defaultValue };
}

/** The properties a mapping at `path` may have, in schema order, with their docs. */
export function propertiesAt(root: JsonSchema, path: readonly PathSegment[]): PropertyDoc[] {
  const schemas = schemasAt(root, path);
  const required = new Set<string>();
  const names: string[] = [];
  for (const schema of schemas) {
    if (Array.isArray(schema.required))
      for (const name of schema.required) if (typeof name === 'string') required.add(name);
    if (isObject(schema.properties))
      for (const name of Object.keys(schema.properties)) if (!names.includes(name)) names.push(name);
  }
  return names.map((name) => {
    const docs = describe(schemas.flatMap((schema) => child(root, schema, name)));
    return { name, required: required.has(name), ...docs };
  });
}

export interface ValueOption {
  /** As it is typed in YAML. */
  label: string;
  detail: string | null;
}

/** Values a key takes when the schema lists them: enums, consts, booleans. */
export function valuesAt(root: JsonSchema, path: readonly PathSegment[]): ValueOption[] {
  const schemas = schemasAt(root, path);
  const docs = describe(schemas);
  const values: unknown[] = [...(docs.enumValues ?? [])];
  if (docs.enumValues === null && docs.type?.split(' | ').includes('boolean')) values.push(true, false);
  return values.map((value) => ({ label: yamlScalar(value), detail: value === docs.defaultValue ? 'default' : null }));
}

/** A JSON value as a YAML scalar; strings that YAML would read as something else are quoted. */
export function yamlScalar(value: unknown): string {
  if (typeof value !== 'string') return JSON.stringify(value);
  if (
    value === '' ||
    /^(true|false|yes|no|on|off|null|~|[-+]?[\d.]+(e[-+]?\d+)?)$/i.test(value) ||
    /[:#{}[\],&*!|>'"%@`]|^\s|\s$|^-/.test(value)
  ) {
    return JSON.stringify(value);
  }
  return value;
}

/** A short human line for a default value. */
export function formatDefault(value: unknown): string | null {
  if (value === undefined) return null;
  if (typeof value === 'string') return value === '' ? '""' : value;
  return JSON.stringify(value);
}
