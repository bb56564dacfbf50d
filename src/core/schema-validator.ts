/**
 * Validates values against the admin API's JSON schemas (`src/admin-api`) with Ajv, and turns
 * Ajv's errors into the admin error shape's field issues: `{ path, message }`, `path` a JSON
 * pointer to the bad field. Each schema object compiles once per process, on its first use,
 * however many apps are built from it (tests build thousands).
 */
import { createRequire } from 'node:module';
import type { Ajv as AjvClass, ErrorObject, ValidateFunction } from 'ajv';

/** A refused field: where (JSON pointer into the validated value) and why. */
export interface FieldIssue {
  path: string;
  message: string;
}

/**
 * The keyword a schema carries its messages in, per failing keyword (`type`, `maxLength`,
 * `anyOf`, `required`...): the words the admin API answered with before it had schemas.
 */
const MESSAGES = 'x-messages';

type Messages = Partial<Record<string, string>>;
type SchemaNode = { [MESSAGES]?: Messages; properties?: Record<string, SchemaNode> };

/** What a validator is for: request bodies are taken as sent; query strings and params are text. */
export type ValidatedPart = 'body' | 'text';

let ajvs: Record<ValidatedPart, AjvClass> | undefined;
const compiled: Record<ValidatedPart, WeakMap<object, ValidateFunction>> = {
  body: new WeakMap(),
  text: new WeakMap(),
};

function ajvFor(part: ValidatedPart): AjvClass {
  if (!ajvs) {
    // Loaded on the first validation, not at start: most processes (the CLI's other commands,
    // a gateway nobody signs in to) never need it.
    const { Ajv } = createRequire(import.meta.url)('ajv') as { Ajv: typeof AjvClass };
    const options = {
      allErrors: true,
      // `parentSchema` on each error: its messages.
      verbose: true,
      // Formats (`date-time`) document; the code that reads the value checks it.
      validateFormats: false,
      keywords: [MESSAGES],
    };
    ajvs = { body: new Ajv(options), text: new Ajv({ ...options, coerceTypes: true }) };
  }
  return ajvs[part];
}

/**
 * A check a schema cannot state (a name's NFKC length, that a cursor decodes, `to` after `from`),
 * run beside the schema on the value as sent, so one answer lists every problem. It must accept
 * any value: a field of the wrong type is the schema's to report.
 */
export type Refinement = (value: unknown) => FieldIssue[];

const refinements = new WeakMap<object, Refinement>();

/** A copy of `schema` whose validation also runs `check` (`refinementIssues`). */
export function refined<T extends object>(schema: T, check: Refinement): T {
  const copy = { ...schema };
  refinements.set(copy, check);
  return copy;
}

/** The issues `schema`'s refinement finds in `value`; none when it has no refinement. */
export function refinementIssues(schema: object, value: unknown): FieldIssue[] {
  return refinements.get(schema)?.(value) ?? [];
}

/**
 * A refined schema's issues in the order a reader meets the fields: unknown fields first, then
 * by the schema's properties, each field's own issues (a budget's amounts) in the order they
 * came. Other schemas' issues stay in Ajv's order.
 */
export function inSchemaOrder(issues: FieldIssue[], schema: object | undefined): FieldIssue[] {
  if (!schema || !refinements.has(schema)) return issues;
  const fields = Object.keys((schema as { properties?: object } | undefined)?.properties ?? {});
  const rank = (issue: FieldIssue) => fields.indexOf(issue.path.split('/')[1] ?? '');
  return [...issues].sort((a, b) => rank(a) - rank(b));
}

/** The compiled validator of `schema`, compiled once per process. */
export function validatorFor(schema: object, part: ValidatedPart = 'body'): ValidateFunction {
  let validate = compiled[part].get(schema);
  if (!validate) {
    validate = ajvFor(part).compile(schema);
    compiled[part].set(schema, validate);
  }
  return validate;
}

/** `value`'s issues against `schema`; empty when it is valid. */
export function schemaIssues(schema: object, value: unknown, part: ValidatedPart = 'body'): FieldIssue[] {
  const validate = validatorFor(schema, part);
  return validate(value) ? [] : fieldIssues(validate.errors ?? []);
}

/**
 * One issue per bad field, the most specific: an error under another's path replaces it (a bad
 * amount inside a budget, not "budget must be an object or null"), and among one field's errors
 * the first that has a message of its own wins (a union's, over each branch's `type`).
 */
export function fieldIssues(errors: readonly ErrorObject[]): FieldIssue[] {
  const byPath = new Map<string, { issue: FieldIssue; own: boolean }>();
  for (const error of errors) {
    const { path, message, own } = describe(error);
    const seen = byPath.get(path);
    if (!seen || (own && !seen.own)) byPath.set(path, { issue: { path, message }, own });
  }
  const paths = [...byPath.keys()];
  return paths
    .filter((path) => !paths.some((other) => other !== path && other.startsWith(`${path}/`)))
    .map((path) => byPath.get(path)!.issue);
}

/**
 * The issues with those inside one top-level field (a budget's amounts) in the order `value`
 * holds them, as a reader of the request meets them; top-level fields keep the schema's order.
 */
export function nestedInValueOrder(issues: readonly FieldIssue[], value: unknown): FieldIssue[] {
  const topLevel = (path: string) => path.split('/')[1] ?? '';
  const tops = [...new Set(issues.map((issue) => topLevel(issue.path)))];
  const place = (path: string): number[] => {
    let node = value;
    const indices: number[] = [tops.indexOf(topLevel(path))];
    for (const segment of path.split('/').slice(1)) {
      const key = segment.replaceAll('~1', '/').replaceAll('~0', '~');
      const keys = node !== null && typeof node === 'object' ? Object.keys(node) : [];
      const index = keys.indexOf(key);
      indices.push(index === -1 ? keys.length : index);
      node = index === -1 ? undefined : (node as Record<string, unknown>)[key];
    }
    return indices;
  };
  const places = new Map(issues.map((issue) => [issue, place(issue.path)]));
  return [...issues].sort((a, b) => compare(places.get(a)!, places.get(b)!));
}

/** Orders issues by `fields` (their top-level names); issues of other fields (unknown ones) first. */
export function inFieldOrder(fields: readonly string[]): (issues: FieldIssue[]) => FieldIssue[] {
  const rank = (issue: FieldIssue) => fields.indexOf(issue.path.split('/')[1] ?? '');
  return (issues) => [...issues].sort((a, b) => rank(a) - rank(b));
}

function compare(a: readonly number[], b: readonly number[]): number {
  for (let i = 0; i < Math.min(a.length, b.length); i++) if (a[i] !== b[i]) return a[i]! - b[i]!;
  return a.length - b.length;
}

function describe(error: ErrorObject): { path: string; message: string; own: boolean } {
  const parent = (error.parentSchema ?? {}) as SchemaNode;
  if (error.keyword === 'required') {
    const field = String((error.params as { missingProperty: string }).missingProperty);
    const message = parent.properties?.[field]?.[MESSAGES]?.required;
    return { path: `${error.instancePath}/${field}`, message: message ?? 'required', own: true };
  }
  if (error.keyword === 'additionalProperties') {
    const field = String((error.params as { additionalProperty: string }).additionalProperty);
    const expected = Object.keys(parent.properties ?? {}).join(', ');
    const unknown = parent[MESSAGES]?.additionalProperties ?? 'unknown field';
    return { path: `${error.instancePath}/${field}`, message: `${unknown}; expected one of ${expected}`, own: true };
  }
  const own = parent[MESSAGES]?.[error.keyword] ?? parent[MESSAGES]?.['*'];
  return { path: error.instancePath, message: own ?? error.message ?? 'is invalid', own: own !== undefined };
}
