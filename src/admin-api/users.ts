/**
 * `GET/POST /api/users`, `POST /api/users/invite`, `PATCH /api/users/:id` and
 * `POST /api/invite/accept`: what a request may send and what it gets. A name's NFKC length, its
 * invisible characters and a password's strength are checked by the handlers, on the normalized
 * text (`core/user-names.ts`, `auth/passwords.ts`).
 */
import { Type, type Static } from 'typebox';
import { BudgetInput, Iso, KeyBudget, messages } from './common.js';

/** A name's most characters, counted after NFKC. */
export const USER_NAME_MAX = 100;
const EMAIL_MAX = 320;
const MODELS_MAX = 500;

const ROLE_MESSAGE = 'must be one of admin, member, viewer';

export const UserRole = Type.Union(
  [Type.Literal('admin'), Type.Literal('member'), Type.Literal('viewer')],
  messages({ anyOf: ROLE_MESSAGE, required: ROLE_MESSAGE }),
);

export const User = Type.Object({
  id: Type.String(),
  name: Type.String(),
  email: Type.Union([Type.String(), Type.Null()]),
  role: UserRole,
  signIn: Type.Union([Type.Literal('password'), Type.Literal('oidc')]),
  status: Type.Union([Type.Literal('active'), Type.Literal('invited'), Type.Literal('disabled')], {
    description: '`invited`: has not set a password yet (OIDC users never need one).',
  }),
  createdAt: Iso,
  disabledAt: Type.Union([Iso, Type.Null()]),
  allowedModels: Type.Array(Type.String(), {
    description: 'Models a member may allow on their own keys; empty: every model.',
  }),
  maxBudget: Type.Union([KeyBudget, Type.Null()], {
    description: "The most a member's non-revoked keys may hold in budgets together; null: no cap.",
  }),
});

/** The name as typed; its normalized length and characters are checked by the handler. */
const NAME_MESSAGE = `required: 1 to ${USER_NAME_MAX} characters`;
const name = Type.String(messages({ '*': NAME_MESSAGE, required: NAME_MESSAGE }));

const EMAIL_MESSAGE = 'must be an email address';
/** Absent, null and "" are no address. */
const email = Type.Union(
  [Type.Null(), Type.Literal(''), Type.String({ maxLength: EMAIL_MAX, pattern: '^[^\\s@]+@[^\\s@]+$' })],
  messages({ anyOf: EMAIL_MESSAGE }),
);

/** An array of model ids, each with a visible character; one message for the array as a whole. */
const allowedModels = Type.Unsafe<string[]>({
  type: 'array',
  maxItems: MODELS_MAX,
  not: { contains: { not: { type: 'string', pattern: '\\S' } } },
  description: 'Model ids, aliases or patterns; [] allows every model. Ids are trimmed and deduplicated.',
  ...messages({ '*': `must be an array of at most ${MODELS_MAX} model ids ([] = every model)` }),
});

const maxBudget = Type.Optional(BudgetInput);

const password = Type.String({
  description: 'At least 8 and at most 1024 characters.',
  ...messages({ '*': 'must be a string' }),
});

const notAnObject = messages({ type: 'must be an object' });

const newUserFields = {
  name,
  email: Type.Optional(email),
  role: UserRole,
  allowedModels: Type.Optional(allowedModels),
  maxBudget,
};

/** `POST /api/users`: with `password`, the user can sign in at once; without, they get an invitation. */
export const NewUserInput = Type.Object(
  { ...newUserFields, password: Type.Optional(password) },
  { additionalProperties: false, ...notAnObject },
);

const NewInvitedUser = Type.Object(newUserFields, { additionalProperties: false, ...notAnObject });

/** A new link for an invited user who has not set a password yet; the handler looks the id up. */
const Reinvite = Type.Object({ userId: Type.Unknown() }, notAnObject);

/** `POST /api/users/invite`: `{userId}` sends a user a new link; otherwise a new user and their link. */
export const InviteInput = Type.Unsafe<Static<typeof NewInvitedUser> | { userId: string }>({
  if: { type: 'object', required: ['userId'] },
  then: Reinvite,
  else: NewInvitedUser,
});

/** `PATCH /api/users/:id`. */
export const UserPatch = Type.Object(
  {
    role: Type.Optional(UserRole),
    disabled: Type.Optional(Type.Boolean(messages({ type: 'must be true or false' }))),
    allowedModels: Type.Optional(allowedModels),
    maxBudget,
  },
  {
    additionalProperties: false,
    minProperties: 1,
    ...messages({ type: 'must be an object', minProperties: 'nothing to change' }),
  },
);

export const UserParams = Type.Object({ id: Type.String() });

/** An invitation link: shown once; the server keeps only its hash. */
export const Invitation = Type.Object({
  url: Type.String({ description: '`<origin>/invite#token=...`' }),
  expiresAt: Iso,
});

/** `GET /api/users`. */
export const UserList = Type.Object({ users: Type.Array(User) });

/** `POST /api/users`, `POST /api/users/invite`: `invite` is null when a password was set. */
export const CreatedUser = Type.Object({ user: User, invite: Type.Union([Invitation, Type.Null()]) });

/** `PATCH /api/users/:id`. */
export const UpdatedUser = Type.Object({ user: User });
