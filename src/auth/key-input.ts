/**
 * The one validator of a key's fields, for the admin API (`POST/PATCH /api/keys`) and the CLI
 * (`gatehouse keys create|update|limits`), so neither can make a key the other would refuse.
 * The route schemas (`admin-api/keys.ts`) say the shapes; `keyInputRules` adds what a schema
 * cannot: trimmed names, dates in the future, duplicate models.
 */
import type { Static } from 'typebox';
import { KeyPatch as KeyPatchSchema, NewKeyInput as NewKeySchema } from '../admin-api/keys.js';
import { schemaIssues, type FieldIssue } from '../core/schema-validator.js';
import type { KeyBudget, KeyPatch } from '../store/records.js';
import { parseIsoTimestamp, type NewKeyInput } from './api-keys.js';

export type KeyInputKind = 'create' | 'update';

interface KeyInputs {
  create: NewKeyInput;
  update: { patch: KeyPatch; revoke: boolean };
}

export type KeyInputCheck<K extends KeyInputKind> =
  { ok: true; input: KeyInputs[K] } | { ok: false; issues: FieldIssue[] };

/** The body schema of each kind of key write, as the route declares it. */
export const KEY_INPUT_SCHEMAS = { create: NewKeySchema, update: KeyPatchSchema } as const;

/** A key's create or update body, checked whole: the route schema, then `keyInputRules`. */
export function validateKeyInput<K extends KeyInputKind>(kind: K, body: unknown, nowMs: number): KeyInputCheck<K> {
  const issues = schemaIssues(KEY_INPUT_SCHEMAS[kind], body);
  return issues.length > 0 ? { ok: false, issues } : keyInputRules(kind, body as never, nowMs);
}

/** What the schema cannot say, on a body that passed it (Fastify checked it, or `validateKeyInput`). */
export function keyInputRules<K extends KeyInputKind>(
  kind: K,
  body: Static<(typeof KEY_INPUT_SCHEMAS)[K]>,
  nowMs: number,
): KeyInputCheck<K> {
  const issues: FieldIssue[] = [];
  const fields: NewKeyInput | KeyPatch = {};
  if (body.name !== undefined) {
    fields.name = body.name.trim();
    if (fields.name === '') issues.push({ path: '/name', message: 'must not be empty' });
  }
  if (body.models !== undefined) {
    body.models.forEach((model, i) => {
      if (model.trim() === '') issues.push({ path: `/models/${i}`, message: 'must be a non-empty string' });
    });
    fields.models = [...new Set(body.models.map((model) => model.trim()).filter(Boolean))];
  }
  if (body.expiresAt !== undefined) {
    const expiresAt = body.expiresAt === null ? null : parseIsoTimestamp(body.expiresAt);
    if (expiresAt === undefined)
      issues.push({ path: '/expiresAt', message: 'must be an ISO 8601 date-time (e.g. 2030-01-31T00:00:00Z) or null' });
    else if (kind === 'create' && expiresAt !== null && expiresAt <= nowMs)
      issues.push({ path: '/expiresAt', message: 'must be in the future' });
    else fields.expiresAt = expiresAt;
  }
  if (body.note !== undefined) fields.note = body.note;
  if (body.limits !== undefined) fields.limits = body.limits;
  if (body.priority !== undefined) fields.priority = body.priority;
  if (body.manage !== undefined) fields.manage = body.manage;
  if (body.budget !== undefined) fields.budget = budgetChange(body.budget);
  if (issues.length > 0) return { ok: false, issues };
  if (kind === 'create') return { ok: true, input: { name: '', ...fields } as KeyInputs[K] };
  const revoke = (body as Static<typeof KeyPatchSchema>).revoked === true;
  return { ok: true, input: { patch: fields, revoke } as KeyInputs[K] };
}

/** `null` clears every amount. */
function budgetChange(budget: Partial<KeyBudget> | null): Partial<KeyBudget> {
  return budget ?? { tokens: null, requests: null, gpuSeconds: null };
}
