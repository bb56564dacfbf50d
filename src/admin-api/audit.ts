/**
 * `GET /api/audit`: its query and the entries it lists (docs/admin-api.md says when each action
 * is written). Entries never hold a secret, a key, a password or config text.
 */
import { Type, type Static } from 'typebox';
import { ISO_8601, Iso, KeyBudget, messages } from './common.js';

/** Stable names of the recorded admin actions. */
const AUDIT_ACTIONS = [
  'session.sign_in',
  'session.sign_in_failed',
  'session.sign_out',
  'setup.complete',
  'password.change',
  'key.create',
  'key.update',
  'key.revoke',
  'key.delete',
  'config.save',
  'config.format',
  'model.load',
  'model.unload',
  'model.unload_all',
  'user.create',
  'user.invite',
  'user.reinvite',
  'user.invite_accept',
  'user.role_change',
  'user.disable',
  'user.enable',
  'user.update',
] as const;

export type AuditAction = (typeof AUDIT_ACTIONS)[number];

const literals = <const T extends readonly string[]>(values: T) =>
  Type.Unsafe<T[number]>({ type: 'string', enum: [...values] });

const AuditActionName = literals(AUDIT_ACTIONS);

/**
 * Who acted: a dashboard session (its id; null for a sign-in that opened none), a script with
 * the admin token, a user (named once users exist), `gatehouse keys` on the server (`cli`,
 * named after the operating-system account), or a client with an API key of the `manage` scope
 * (`api-key`: the key's id and name; both null in open mode, where no key is needed).
 */
export const AuditActor = Type.Object({
  kind: literals(['session', 'admin-token', 'user', 'cli', 'api-key']),
  id: Type.Union([Type.String(), Type.Null()]),
  name: Type.Union([Type.String(), Type.Null()]),
});

/** What was acted on: a key (id, name), a model (id), llama-swap's config (path, version written), a user. */
export const AuditTarget = Type.Object({
  kind: literals(['key', 'model', 'config', 'user']),
  id: Type.String(),
  name: Type.Union([Type.String(), Type.Null()]),
  version: Type.Union([Type.String(), Type.Null()]),
});

export const AuditOutcome = literals(['success', 'failure']);

/** A value an action changed: a name, a role, a list of model ids, a budget; null for none. */
export const AuditValue = Type.Union([
  Type.String(),
  Type.Boolean(),
  Type.Null(),
  Type.Array(Type.String()),
  KeyBudget,
]);

/** What an action changed, by field: its value before and after (`from` null for a new user). */
export const AuditChanges = Type.Record(Type.String(), Type.Object({ from: AuditValue, to: AuditValue }));

/** One entry of `GET /api/audit`. */
export const AuditEntry = Type.Object({
  id: Type.String(),
  at: Iso,
  actor: AuditActor,
  client: Type.Union([Type.String(), Type.Null()], {
    description: 'The client address (as `GATEHOUSE_TRUSTED_PROXIES` allows); null for the CLI.',
  }),
  action: AuditActionName,
  target: Type.Union([AuditTarget, Type.Null()]),
  outcome: AuditOutcome,
  reason: Type.Union([Type.String(), Type.Null()], {
    description: 'Why it failed: the error code (`admin_unauthorized`, `not_found`...); null on success.',
  }),
  changes: Type.Union([AuditChanges, Type.Null()], {
    description: 'The fields a user action changed, from → to; null for other actions and failures.',
  }),
});

/** `GET /api/audit`: newest first; pass `nextBefore` as `before` for the next page. */
export const AuditPage = Type.Object({
  entries: Type.Array(AuditEntry),
  nextBefore: Type.Union([Type.String(), Type.Null()]),
});

const AUDIT_MAX_LIMIT = 500;
const GIVEN_ONCE = { type: 'must be given once' };

/** `GET /api/audit?limit=&before=&action=`; an empty parameter is an absent one. */
export const AuditQuery = Type.Object(
  {
    limit: Type.Optional(
      Type.String({
        pattern: `^(?:|0*(?:[1-9]\\d?|[1-4]\\d\\d|${AUDIT_MAX_LIMIT}))$`,
        description: `1 to ${AUDIT_MAX_LIMIT} entries (default 50).`,
        ...messages({ ...GIVEN_ONCE, pattern: `must be a whole number from 1 to ${AUDIT_MAX_LIMIT}` }),
      }),
    ),
    before: Type.Optional(
      Type.String({
        // An entry id begins with nine base-36 digits of its time and a dash.
        pattern: `^(?:|[0-9a-z]{9}-[\\s\\S]*|${ISO_8601.slice(1, -1)})$`,
        description: 'Entries strictly before this ISO 8601 time, or older than this `nextBefore`.',
        ...messages({
          ...GIVEN_ONCE,
          pattern: 'must be an ISO 8601 time (2031-01-31T12:00:00Z) or the nextBefore of a previous page',
        }),
      }),
    ),
    action: Type.Optional(
      Type.Unsafe<AuditAction | ''>({
        type: 'string',
        enum: ['', ...AUDIT_ACTIONS],
        ...messages({ ...GIVEN_ONCE, enum: `must be one of ${AUDIT_ACTIONS.join(', ')}` }),
      }),
    ),
  },
  { additionalProperties: false, ...messages({ additionalProperties: 'unknown parameter' }) },
);

export type AuditActor = Static<typeof AuditActor>;
export type AuditTarget = Static<typeof AuditTarget>;
export type AuditOutcome = Static<typeof AuditOutcome>;
export type AuditValue = Static<typeof AuditValue>;
export type AuditChanges = Static<typeof AuditChanges>;
export type AuditEntry = Static<typeof AuditEntry>;
export type AuditPage = Static<typeof AuditPage>;
