/**
 * `GET/POST /api/keys`, `PATCH/DELETE /api/keys/:id`: what a request may send and what it gets.
 * The same body schemas check the CLI's `gatehouse keys create|update` (`auth/key-input.ts`).
 */
import { Type } from 'typebox';
import { BudgetInput, Iso, ISO_8601, KeyBudget, messages, nullable } from './common.js';

const KEY_NAME_MAX = 100;
const KEY_NOTE_MAX = 2000;
const KEY_MODELS_MAX = 500;
const MODEL_ID_MAX = 256;
const LIMIT_MAX = 1_000_000_000;
const PRIORITY_MIN = -10;
const PRIORITY_MAX = 10;

const KeyStatus = Type.Union([Type.Literal('active'), Type.Literal('revoked'), Type.Literal('expired')]);

export const KeyLimits = Type.Object({
  rpm: Type.Union([Type.Integer(), Type.Null()]),
  tpm: Type.Union([Type.Integer(), Type.Null()]),
  concurrent: Type.Union([Type.Integer(), Type.Null()]),
});

export const ApiKey = Type.Object({
  id: Type.String(),
  name: Type.String(),
  prefix: Type.String(),
  status: KeyStatus,
  createdAt: Iso,
  lastUsedAt: Type.Union([Iso, Type.Null()]),
  expiresAt: Type.Union([Iso, Type.Null()]),
  revokedAt: Type.Union([Iso, Type.Null()]),
  models: Type.Array(Type.String(), { description: 'Empty: every model is allowed.' }),
  note: Type.String(),
  limits: KeyLimits,
  priority: Type.Integer({ description: 'Place in the admission queue, -10..10 (default 0): higher goes first.' }),
  manage: Type.Boolean({ description: 'May list, load and unload models through `/models*` (default false).' }),
  budget: KeyBudget,
  ownerId: Type.Union([Type.String(), Type.Null()], {
    description: 'The owning user; null for keys made with the admin token or the CLI.',
  }),
  ownerName: Type.Union([Type.String(), Type.Null()]),
});

const name = Type.String({
  minLength: 1,
  maxLength: KEY_NAME_MAX,
  // Control characters would let a name forge lines in logs and terminals.
  pattern: '^[^\\u0000-\\u001f\\u007f]*$',
  ...messages({
    type: 'must be a string',
    minLength: 'must not be empty',
    maxLength: `must be at most ${KEY_NAME_MAX} characters`,
    pattern: 'must not contain control characters',
  }),
});

const models = Type.Array(
  Type.String({
    minLength: 1,
    maxLength: MODEL_ID_MAX,
    ...messages({ '*': 'must be a non-empty string', maxLength: `must be at most ${MODEL_ID_MAX} characters` }),
  }),
  {
    maxItems: KEY_MODELS_MAX,
    description: 'Model ids, aliases or patterns (`qwen*`, `gpu-box/*`); [] allows every model.',
    ...messages({
      type: 'must be an array of model ids ([] allows every model)',
      maxItems: `at most ${KEY_MODELS_MAX} models`,
    }),
  },
);

const expiresAt = nullable(
  Type.String({ format: 'date-time', pattern: ISO_8601 }),
  'must be an ISO 8601 date-time (e.g. 2030-01-31T00:00:00Z) or null',
);

const note = Type.String({
  maxLength: KEY_NOTE_MAX,
  ...messages({ type: 'must be a string', maxLength: `must be at most ${KEY_NOTE_MAX} characters` }),
});

const limit = nullable(
  Type.Integer({ minimum: 1, maximum: LIMIT_MAX }),
  `must be a whole number from 1 to ${LIMIT_MAX}, or null for no limit`,
);

const limits = Type.Object(
  { rpm: Type.Optional(limit), tpm: Type.Optional(limit), concurrent: Type.Optional(limit) },
  {
    additionalProperties: false,
    ...messages({
      type: 'must be an object like {"rpm": 60, "tpm": null, "concurrent": 2}',
      additionalProperties: 'unknown limit',
    }),
  },
);

const priority = Type.Integer({
  minimum: PRIORITY_MIN,
  maximum: PRIORITY_MAX,
  ...messages({ '*': `must be a whole number from ${PRIORITY_MIN} to ${PRIORITY_MAX} (higher goes first)` }),
});

const manage = Type.Boolean(messages({ type: 'must be true or false' }));

const keyFields = {
  models: Type.Optional(models),
  expiresAt: Type.Optional(expiresAt),
  note: Type.Optional(note),
  limits: Type.Optional(limits),
  priority: Type.Optional(priority),
  manage: Type.Optional(manage),
  budget: Type.Optional(BudgetInput),
};

const notAnObject = messages({ type: 'expected a JSON object' });

/** `POST /api/keys`. */
export const NewKeyInput = Type.Object({ name, ...keyFields }, { additionalProperties: false, ...notAnObject });

/** `PATCH /api/keys/:id`: the fields to change; `revoked: true` revokes (for good). */
export const KeyPatch = Type.Object(
  {
    name: Type.Optional(name),
    ...keyFields,
    revoked: Type.Optional(
      Type.Literal(
        true,
        messages({ '*': 'only true is accepted: a revoked key cannot be reinstated; create a new one' }),
      ),
    ),
  },
  {
    additionalProperties: false,
    minProperties: 1,
    ...messages({ type: 'expected a JSON object', minProperties: 'nothing to change' }),
  },
);

export const KeyParams = Type.Object({ id: Type.String() });

/** `DELETE /api/keys/:id?confirm=last`: deleting the last key reopens the API (also header `x-confirm: last`). */
export const KeyDeleteQuery = Type.Object({ confirm: Type.Optional(Type.String()) });

/** `GET /api/keys`. */
export const KeyList = Type.Object({ keys: Type.Array(ApiKey) });

/** `PATCH /api/keys/:id`. */
export const UpdatedKey = Type.Object({ key: ApiKey });

/** `POST /api/keys`. */
export const CreatedKey = Type.Object({
  key: ApiKey,
  secret: Type.String({ description: 'Shown once; the server keeps only a hash.' }),
});

/** `DELETE /api/keys/:id`. */
export const DeletedKey = Type.Object({
  deleted: Type.Literal(true),
  remaining: Type.Integer(),
  warning: Type.Optional(Type.String()),
});
