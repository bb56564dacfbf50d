/**
 * Validation of a config text: YAML (duplicate keys are errors, as in llama-swap's yaml.v3),
 * then llama-swap's JSON schema, then the loader's own checks as warnings. Every finding
 * carries the line and column it points at, found through the YAML document's node ranges.
 */
import type { ErrorObject, ValidateFunction } from 'ajv';
import type { ConfigIssue } from '../admin-api/types.js';
import { isAlias, isMap, isPair, isScalar, isSeq, LineCounter, parseDocument, type Document, type Node } from 'yaml';
import { loaderChecks } from './loader-checks.js';

export type { ConfigIssue };

export interface ParsedConfig {
  doc: Document.Parsed;
  lineCounter: LineCounter;
  /** The plain value (merge keys applied), or undefined when the YAML has errors. */
  value: unknown;
  errors: ConfigIssue[];
  warnings: ConfigIssue[];
}

/**
 * YAML as llama-swap (yaml.v3) reads it: merge keys (`<<: *anchor`) on, duplicate keys an
 * error. `maxAliasCount` caps alias expansion (a "billion laughs" text cannot hang the server).
 */
export function parseConfig(text: string): ParsedConfig {
  const lineCounter = new LineCounter();
  const doc = parseDocument(text, { lineCounter, uniqueKeys: true, merge: true, prettyErrors: false });
  const at = (pos: [number, number] | undefined) => (pos ? span(lineCounter, pos[0], pos[1]) : NO_SPAN);
  const errors: ConfigIssue[] = doc.errors.map((e) => ({
    kind: 'yaml',
    message: yamlMessage(e.message),
    path: '',
    ...at(e.pos),
  }));
  const warnings: ConfigIssue[] = doc.warnings.map((w) => ({
    kind: 'yaml',
    message: yamlMessage(w.message),
    path: '',
    ...at(w.pos),
  }));
  let value: unknown;
  if (errors.length === 0) {
    try {
      value = doc.toJS({ maxAliasCount: 1000 });
    } catch (error) {
      errors.push({ kind: 'yaml', message: (error as Error).message, path: '', ...NO_SPAN });
    }
  }
  return { doc, lineCounter, value, errors, warnings };
}

export interface TextValidation {
  errors: ConfigIssue[];
  warnings: ConfigIssue[];
}

/**
 * All findings for a text. Without `schema`, only YAML and loader checks run (the caller
 * reports the schema as unavailable; saving then refuses).
 */
export function validateConfigText(text: string, schema: ValidateFunction | undefined): TextValidation {
  const parsed = parseConfig(text);
  const errors = [...parsed.errors];
  const warnings = [...parsed.warnings];
  if (errors.length > 0) return { errors, warnings };
  const locate = (path: string, at: 'key' | 'value') => locateSpan(parsed, path, at);

  if (schema) {
    schema(parsed.value);
    for (const error of schemaErrors(schema.errors ?? [])) {
      const pointer = errorPointer(error);
      const issue: ConfigIssue = {
        kind: 'schema',
        message: schemaMessage(error),
        path: pointer.path,
        ...locate(pointer.path, pointer.at),
      };
      // llama-swap substitutes `${env.X}` and macros before decoding, so `ttl: ${my_ttl}` is
      // valid for it though the raw text fails `type: integer`.
      const data = error.keyword === 'type' ? valueAt(parsed.value, error.instancePath) : undefined;
      if (isPlaceholderValue(data)) {
        warnings.push({
          ...issue,
          kind: 'placeholder',
          message: `${issue.message}; not checked here: llama-swap replaces ${String(data)} before it reads the value.`,
        });
      } else {
        errors.push(issue);
      }
    }
  }
  const errorPaths = new Set(errors.map((e) => e.path));
  for (const finding of loaderChecks(parsed.value)) {
    if (errorPaths.has(finding.path)) continue; // the schema already reported this value
    warnings.push({
      kind: 'loader',
      message: finding.message,
      path: finding.path,
      ...locate(finding.path, finding.at),
    });
  }
  return { errors, warnings };
}

/**
 * With `allErrors`, a failed `oneOf`/`if` also reports every branch's own failures; those
 * branch errors sit at the same place and only repeat the summary, so one per place is kept
 * when a `oneOf`/`anyOf` summary exists there.
 */
function schemaErrors(errors: ErrorObject[]): ErrorObject[] {
  const summaries = new Set(
    errors
      .filter((e) => e.keyword === 'oneOf' || e.keyword === 'anyOf')
      .map((e) => `${e.instancePath}|${e.schemaPath}`),
  );
  if (summaries.size === 0) return dedupe(errors);
  return dedupe(
    errors.filter((e) => {
      if (e.keyword === 'oneOf' || e.keyword === 'anyOf') return true;
      for (const s of summaries) {
        const [instancePath, schemaPath] = s.split('|') as [string, string];
        if (e.instancePath === instancePath && e.schemaPath.startsWith(`${schemaPath}/`)) return false;
      }
      return true;
    }),
  );
}

function dedupe(errors: ErrorObject[]): ErrorObject[] {
  const seen = new Set<string>();
  // An `if` failure ("must match \"then\" schema") only announces the `then` keyword's own error.
  const places = new Set(errors.filter((e) => e.keyword !== 'if').map((e) => e.instancePath));
  // `propertyNames` adds a summary ("property name must be valid") next to the name's own error.
  const named = new Set(
    errors.filter((e) => e.propertyName !== undefined).map((e) => `${e.instancePath}/${e.propertyName}`),
  );
  return errors.filter((e) => {
    if (e.keyword === 'if' && places.has(e.instancePath)) return false;
    const params = e.params as { propertyName?: unknown };
    if (e.keyword === 'propertyNames' && named.has(`${e.instancePath}/${String(params.propertyName)}`)) return false;
    const key = `${e.instancePath}|${schemaMessage(e)}`;
    if (seen.has(key)) return false;
    seen.add(key);
    return true;
  });
}

function valueAt(root: unknown, pointer: string): unknown {
  let current = root;
  for (const segment of pointer === '' ? [] : pointer.split('/').slice(1).map(unescapePointer)) {
    if (typeof current !== 'object' || current === null) return undefined;
    current = (current as Record<string, unknown>)[segment];
  }
  return current;
}

function isPlaceholderValue(value: unknown): boolean {
  return typeof value === 'string' && /^\s*\$\{[^}]+\}\s*$/.test(value);
}

/** Where an Ajv error points: the offending key for key-level keywords, else the value. */
function errorPointer(error: ErrorObject): { path: string; at: 'key' | 'value' } {
  const params = error.params as Record<string, unknown>;
  if (error.keyword === 'additionalProperties' && typeof params.additionalProperty === 'string') {
    return { path: `${error.instancePath}/${escapePointer(params.additionalProperty)}`, at: 'key' };
  }
  if (error.keyword === 'propertyNames' && typeof params.propertyName === 'string') {
    return { path: `${error.instancePath}/${escapePointer(params.propertyName)}`, at: 'key' };
  }
  if (error.propertyName !== undefined)
    return { path: `${error.instancePath}/${escapePointer(error.propertyName)}`, at: 'key' };
  // `required` and friends: the object itself; point at its key, the line the user sees.
  if (error.keyword === 'required' || error.keyword === 'minProperties' || error.keyword === 'dependencies')
    return { path: error.instancePath, at: 'key' };
  return { path: error.instancePath, at: 'value' };
}

function schemaMessage(error: ErrorObject): string {
  const params = error.params as Record<string, unknown>;
  const where = error.instancePath === '' ? '/' : error.instancePath;
  let message = `${where} ${notMessage(error) ?? error.message ?? 'is invalid'}`;
  if (error.keyword === 'additionalProperties' && typeof params.additionalProperty === 'string')
    message += `: '${params.additionalProperty}'`;
  if (error.keyword === 'enum' && Array.isArray(params.allowedValues))
    message += `: ${params.allowedValues.map((v) => JSON.stringify(v)).join(', ')}`;
  if (error.propertyName !== undefined)
    message = `${where} property name '${error.propertyName}' ${notMessage(error) ?? error.message ?? 'is invalid'}`;
  return message;
}

/** Ajv says only "must NOT be valid"; llama-swap's `not`s forbid a property or a few names. */
function notMessage(error: ErrorObject): string | undefined {
  if (error.keyword !== 'not' || typeof error.schema !== 'object' || error.schema === null) return undefined;
  const forbidden = error.schema as { required?: unknown; enum?: unknown };
  if (Array.isArray(forbidden.required))
    return `must not have ${forbidden.required.map((r) => `'${String(r)}'`).join(', ')} here`;
  if (Array.isArray(forbidden.enum)) return `must not be ${forbidden.enum.map((v) => JSON.stringify(v)).join(' or ')}`;
  return undefined;
}

/** yaml's messages end with " at line L, column C" (and a snippet); line/column are separate fields here. */
function yamlMessage(message: string): string {
  return message.split('\n')[0]!.replace(/ at line \d+, column \d+:?$/, '');
}

// ---------------------------------------------------------------------------------------
// JSON pointer → place in the text

type Span = Pick<ConfigIssue, 'line' | 'column' | 'endLine' | 'endColumn' | 'from' | 'to'>;
const NO_SPAN: Span = { line: null, column: null, endLine: null, endColumn: null, from: null, to: null };

function span(lineCounter: LineCounter, from: number, to: number): Span {
  const start = lineCounter.linePos(from);
  const end = lineCounter.linePos(Math.max(from, to));
  return { line: start.line, column: start.col, endLine: end.line, endColumn: end.col, from, to: Math.max(from, to) };
}

export function unescapePointer(segment: string): string {
  return segment.replace(/~1/g, '/').replace(/~0/g, '~');
}

function escapePointer(segment: string): string {
  return segment.replace(/~/g, '~0').replace(/\//g, '~1');
}

function locateSpan(parsed: ParsedConfig, pointer: string, at: 'key' | 'value'): Span {
  const found = findNode(parsed.doc, pointer);
  const useKey = found.key && (at === 'key' || !found.value || isEmptyScalar(found.value));
  const node = useKey ? found.key : (found.value ?? found.key);
  const range = node?.range;
  if (!range) {
    const contents = parsed.doc.contents;
    return contents?.range
      ? span(parsed.lineCounter, contents.range[0], contents.range[0])
      : span(parsed.lineCounter, 0, 0);
  }
  return span(parsed.lineCounter, range[0], range[1]);
}

function isEmptyScalar(node: Node): boolean {
  return (
    isScalar(node) &&
    node.value === null &&
    node.range !== undefined &&
    node.range !== null &&
    node.range[0] === node.range[1]
  );
}

/**
 * Walks the pointer through maps (following aliases and `<<` merge keys, as the value was
 * built) and sequences. When the path leaves the document (a missing key), the deepest node
 * reached stands in, so the error still lands near its cause.
 */
function findNode(doc: Document.Parsed, pointer: string): { key?: Node; value?: Node } {
  const segments = pointer === '' ? [] : pointer.split('/').slice(1).map(unescapePointer);
  let value: Node | undefined = doc.contents ?? undefined;
  let key: Node | undefined;
  for (const segment of segments) {
    const container: Node | undefined = deref(doc, value);
    let next: { key?: Node; value?: Node } | undefined;
    if (isMap(container)) next = findInMap(doc, container, segment, 0);
    else if (isSeq(container) && /^\d+$/.test(segment)) {
      const item = container.items[Number(segment)];
      next = item === undefined ? undefined : { value: item as Node };
    }
    if (!next) break;
    key = next.key;
    value = next.value;
  }
  return { key, value };
}

function deref(doc: Document.Parsed, node: Node | undefined): Node | undefined {
  let current = node;
  for (let i = 0; i < 20 && current && isAlias(current); i++) current = current.resolve(doc);
  return current;
}

function findInMap(
  doc: Document.Parsed,
  map: Node,
  segment: string,
  depth: number,
): { key?: Node; value?: Node } | undefined {
  if (!isMap(map) || depth > 10) return undefined;
  const merges: Node[] = [];
  for (const pair of map.items) {
    if (!isPair(pair)) continue;
    const k = pair.key as Node | null;
    if (isScalar(k) && (typeof k.value === 'symbol' || (k.value === '<<' && k.type === 'PLAIN'))) {
      if (pair.value) merges.push(pair.value as Node);
      continue;
    }
    if (keyString(k) === segment) return { key: k ?? undefined, value: (pair.value ?? undefined) as Node | undefined };
  }
  // Later keys win over merged ones, so merged maps are searched only after the map itself.
  for (const source of merges) {
    const resolved = deref(doc, source);
    const candidates = isSeq(resolved) ? resolved.items.map((i) => deref(doc, i as Node)) : [resolved];
    for (const candidate of candidates) {
      const found = candidate ? findInMap(doc, candidate, segment, depth + 1) : undefined;
      if (found) return found;
    }
  }
  return undefined;
}

function keyString(key: Node | null): string | undefined {
  if (key === null) return '';
  if (isScalar(key)) return key.value === null ? '' : String(key.value);
  return undefined;
}
