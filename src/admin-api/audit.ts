/** The audit log's shapes: `GET /api/audit` and what each entry names (docs/admin-api.md). */
import type { Static } from 'typebox';
import type * as common from './common.js';

/** ISO 8601, UTC. */
type Iso = string;
type KeyBudget = Static<typeof common.KeyBudget>;

/** Stable names of the recorded admin actions (docs/admin-api.md lists when each is written). */
export type AuditAction =
  | 'session.sign_in'
  | 'session.sign_in_failed'
  | 'session.sign_out'
  | 'setup.complete'
  | 'password.change'
  | 'key.create'
  | 'key.update'
  | 'key.revoke'
  | 'key.delete'
  | 'config.save'
  | 'config.format'
  | 'model.load'
  | 'model.unload'
  | 'model.unload_all'
  | 'user.create'
  | 'user.invite'
  | 'user.reinvite'
  | 'user.invite_accept'
  | 'user.role_change'
  | 'user.disable'
  | 'user.enable'
  | 'user.update';

/**
 * Who acted: a dashboard session (its id; null for a sign-in that opened none), a script with
 * the admin token, a user (named once users exist), `gatehouse keys` on the server (`cli`,
 * named after the operating-system account), or a client with an API key of the `manage` scope
 * (`api-key`: the key's id and name; both null in open mode, where no key is needed).
 */
export interface AuditActor {
  kind: 'session' | 'admin-token' | 'user' | 'cli' | 'api-key';
  id: string | null;
  name: string | null;
}

/**
 * What was acted on: a key (id, name), a model (id), llama-swap's config (path, version
 * written), a user (id, name).
 */
export interface AuditTarget {
  kind: 'key' | 'model' | 'config' | 'user';
  id: string;
  name: string | null;
  version: string | null;
}

export type AuditOutcome = 'success' | 'failure';

/** A value an action changed: a name, a role, a list of model ids, a budget; null for none. */
export type AuditValue = string | boolean | null | string[] | KeyBudget;

/** What an action changed, by field: its value before and after (`from` null for a new user). */
export type AuditChanges = Record<string, { from: AuditValue; to: AuditValue }>;

/** One entry of `GET /api/audit`. Never holds a secret, a key, a password or config text. */
export interface AuditEntry {
  id: string;
  at: Iso;
  actor: AuditActor;
  /** The client address (as `GATEHOUSE_TRUSTED_PROXIES` allows); null for the CLI. */
  client: string | null;
  action: AuditAction;
  target: AuditTarget | null;
  outcome: AuditOutcome;
  /** Why it failed: the error code (`admin_unauthorized`, `not_found`...); null on success. */
  reason: string | null;
  /** The fields a user action changed, from → to; null for other actions and failures. */
  changes: AuditChanges | null;
}

/** `GET /api/audit`: newest first; pass `nextBefore` as `before` for the next page. */
export interface AuditPage {
  entries: AuditEntry[];
  nextBefore: string | null;
}
