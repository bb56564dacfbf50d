/**
 * Admin API for users: `GET/POST /api/users`, `PATCH /api/users/:id`, `POST /api/users/invite`.
 * Names are stored in NFKC and compared as `core/user-names.ts` says: a look-alike of a taken name is taken.
 * A member's `maxBudget` is read by the key budget's own parser (`budget-input.ts`).
 * Routes, their chains and who may call them are in the route table; these are only the
 * handlers. An invitation link carries its token in the fragment (`/invite#token=...`), so it
 * never reaches a server log or a Referer; the answer that creates it is the only place it appears.
 * Every write commits with its audit entry (`audited.ts`): the user and what changed, never the link.
 */
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { AuditAction, CreatedUser, Invitation, UserList } from '../../admin-api/types.js';
import { userChanges, userTarget } from '../../audit/user-changes.js';
import { passwordProblem } from '../../auth/passwords.js';
import { nameTaken, toUserView, type Users } from '../../auth/users.js';
import { GatewayError } from '../../core/errors.js';
import { hasInvisibleCharacters, normalizeUserName } from '../../core/user-names.js';
import { hasBudget, USER_ROLES, type KeyBudget, type UserRecord, type UserRole } from '../../store/records.js';
import type { AuditedHandler, AuditScope } from './audited.js';
import { parseBudget } from './budget-input.js';

export interface UsersHandlerDeps {
  users: Users;
  /** The origin people open the dashboard at, for the link: GATEHOUSE_PUBLIC_URL or the request's own. */
  origin: (request: FastifyRequest) => string;
  /** Reloads the key index after a change that alters what keys may do (disabling, role, allowance). */
  keysChanged: () => Promise<void>;
}

type Handler = (request: FastifyRequest, reply: FastifyReply) => Promise<unknown>;

const NAME_MAX = 100;
const INVISIBLE_IN_NAME =
  'must not contain invisible or control characters ' +
  '(zero-width, direction marks, tabs, line breaks, spaces other than U+0020)';
const EMAIL_MAX = 320;
const MODELS_MAX = 500;

export function createUsersHandlers({ users, origin, keysChanged }: UsersHandlerDeps): {
  list: Handler;
  create: AuditedHandler;
  invite: AuditedHandler;
  update: AuditedHandler;
} {
  const invitation = async (request: FastifyRequest, within: Users, user: UserRecord): Promise<Invitation> => {
    const { token, expiresAt } = await within.issueInvite(user.id);
    return { url: `${origin(request)}/invite#token=${token}`, expiresAt: new Date(expiresAt).toISOString() };
  };

  /** Creates the user (and their link) with its audit entry in one transaction. */
  const createUser = async (request: FastifyRequest, audit: AuditScope, allowPassword: boolean) => {
    const input = parseNewUser(request.body, allowPassword);
    const taken = await users.findByName(input.name);
    if (taken) throw nameTaken(taken.name);
    const passwordHash = input.password === undefined ? undefined : await users.hashPassword(input.password);
    const answer = await audit.commit(async (tx) => {
      const within = users.through(tx);
      const created = await within.createPasswordUser({ ...input, ...(passwordHash ? { passwordHash } : {}) });
      const user =
        input.allowedModels.length > 0 || input.maxBudget !== null
          ? ((await within.update(created.id, { allowedModels: input.allowedModels, maxBudget: input.maxBudget })) ??
            created)
          : created;
      audit.target = userTarget(user);
      audit.changes = userChanges(null, user);
      return { user, invite: passwordHash === undefined ? await invitation(request, within, user) : null };
    });
    request.log.info({ event: 'user_created', user_id: answer.user.id, role: answer.user.role }, 'user created');
    return answer;
  };

  return {
    async list() {
      return { users: (await users.list()).map(toUserView) } satisfies UserList;
    },

    async create(request, reply, audit) {
      const { user, invite } = await createUser(request, audit, true);
      reply.code(201);
      return { user: toUserView(user), invite } satisfies CreatedUser;
    },

    /** `{userId}`: a new link for a user who has not set a password; otherwise a new user with one. */
    async invite(request, reply, audit) {
      const body = request.body as Record<string, unknown> | null;
      if (body && typeof body === 'object' && 'userId' in body) {
        audit.action = 'user.reinvite';
        const user = typeof body.userId === 'string' ? await users.get(body.userId) : undefined;
        if (!user) throw new GatewayError('not_found', { message: 'No such user.' });
        audit.target = userTarget(user);
        if (user.signIn !== 'password' || user.passwordHash !== null || user.disabledAt !== null)
          throw new GatewayError('conflict', {
            message: 'Only an invited user who has not set a password yet can get a new link.',
          });
        const invite = await audit.commit((tx) => invitation(request, users.through(tx), user));
        return { user: toUserView(user), invite } satisfies CreatedUser;
      }
      const { user, invite } = await createUser(request, audit, false);
      reply.code(201);
      return { user: toUserView(user), invite } satisfies CreatedUser;
    },

    async update(request, _reply, audit) {
      const { maxBudget, ...rest } = parsePatch(request.body);
      audit.action = patchAction(rest);
      const id = (request.params as { id?: unknown } | undefined)?.id;
      const current = typeof id === 'string' ? await users.get(id) : undefined;
      if (!current) throw new GatewayError('not_found', { message: `No user with id ${JSON.stringify(id ?? '')}.` });
      audit.target = userTarget(current);
      // An object changes what it names, as a key's budget does; a cap without amounts is no cap.
      const change =
        maxBudget === undefined
          ? rest
          : { ...rest, maxBudget: maxBudget && toCap({ ...emptyCap(current.maxBudget), ...maxBudget }) };
      const identity = request.adminIdentity;
      const self = identity?.via === 'session' && identity.user.id === current.id;
      const losesAdmin =
        current.role === 'admin' &&
        ((change.role !== undefined && change.role !== 'admin') || change.disabled === true);
      if (self && losesAdmin)
        throw new GatewayError('conflict', {
          message: 'You cannot demote or disable yourself: ask another admin.',
        });
      if (losesAdmin && current.disabledAt === null && !(await users.anotherEnabledAdmin(current.id)))
        throw new GatewayError('conflict', { message: 'This is the last enabled admin: promote someone else first.' });
      const updated = await audit.commit(async (tx) => {
        const after = await users.through(tx).update(current.id, change);
        if (!after) throw new GatewayError('not_found', { message: `No user with id ${JSON.stringify(id)}.` });
        audit.changes = userChanges(current, after);
        return after;
      });
      // Disabling stops the user's keys, and a role or allowance bounds what they may call: at once.
      await keysChanged();
      request.log.info(
        { event: 'user_updated', user_id: updated.id, role: updated.role, disabled: updated.disabledAt !== null },
        'user updated',
      );
      return { user: toUserView(updated) };
    },
  };
}

/** A PATCH's action: named after what it asks, the most telling first (`changes` says the rest). */
function patchAction(change: Pick<ParsedPatch, 'role' | 'disabled'>): AuditAction {
  if (change.disabled !== undefined) return change.disabled ? 'user.disable' : 'user.enable';
  return change.role !== undefined ? 'user.role_change' : 'user.update';
}

interface Issue {
  path: string;
  message: string;
}

function fail(issues: Issue[]): never {
  throw new GatewayError('validation_failed', {
    message: `Invalid: ${issues.map((i) => i.path.slice(1) || 'body').join(', ')}.`,
    details: issues,
  });
}

function asObject(body: unknown, allowed: readonly string[], issues: Issue[]): Record<string, unknown> {
  if (typeof body !== 'object' || body === null || Array.isArray(body))
    fail([{ path: '', message: 'must be an object' }]);
  const object = body as Record<string, unknown>;
  for (const field of Object.keys(object))
    if (!allowed.includes(field))
      issues.push({ path: `/${field}`, message: `unknown field; expected one of ${allowed.join(', ')}` });
  return object;
}

function parseRole(value: unknown, issues: Issue[]): UserRole | undefined {
  const role = USER_ROLES.find((r) => r === value);
  if (!role) issues.push({ path: '/role', message: `must be one of ${USER_ROLES.join(', ')}` });
  return role;
}

function parseAllowedModels(value: unknown, issues: Issue[]): string[] {
  if (
    !Array.isArray(value) ||
    value.length > MODELS_MAX ||
    !value.every((m) => typeof m === 'string' && m.trim() !== '')
  ) {
    issues.push({
      path: '/allowedModels',
      message: `must be an array of at most ${MODELS_MAX} model ids ([] = every model)`,
    });
    return [];
  }
  return [...new Set(value.map((m: string) => m.trim()))];
}

/** `null` is no cap; an object the amounts and period it names. */
function parseMaxBudget(value: unknown, issues: Issue[]): Partial<KeyBudget> | null | undefined {
  if (value === null) return null;
  return parseBudget(value, '/maxBudget', (path, message) => issues.push({ path, message }));
}

function emptyCap(base: KeyBudget | null): KeyBudget {
  return base ?? { tokens: null, requests: null, gpuSeconds: null, period: 'day' };
}

function toCap(budget: KeyBudget | null): KeyBudget | null {
  return budget && hasBudget(budget) ? budget : null;
}

function parseNewUser(
  body: unknown,
  allowPassword: boolean,
): {
  name: string;
  email: string | null;
  role: UserRole;
  allowedModels: string[];
  maxBudget: KeyBudget | null;
  password?: string;
} {
  const issues: Issue[] = [];
  const fields = ['name', 'email', 'role', 'allowedModels', 'maxBudget', ...(allowPassword ? ['password'] : [])];
  const object = asObject(body, fields, issues);
  const typed = typeof object.name === 'string' ? object.name : '';
  const name = normalizeUserName(typed);
  if (name === '' || name.length > NAME_MAX)
    issues.push({ path: '/name', message: `required: 1 to ${NAME_MAX} characters` });
  else if (hasInvisibleCharacters(typed)) issues.push({ path: '/name', message: INVISIBLE_IN_NAME });
  let email: string | null = null;
  if (object.email !== undefined && object.email !== null && object.email !== '') {
    if (typeof object.email !== 'string' || object.email.length > EMAIL_MAX || !/^[^\s@]+@[^\s@]+$/.test(object.email))
      issues.push({ path: '/email', message: 'must be an email address' });
    else email = object.email;
  }
  const role = parseRole(object.role, issues);
  const allowedModels = object.allowedModels === undefined ? [] : parseAllowedModels(object.allowedModels, issues);
  const cap = object.maxBudget === undefined ? null : parseMaxBudget(object.maxBudget, issues);
  const maxBudget = cap ? toCap({ ...emptyCap(null), ...cap }) : null;
  let password: string | undefined;
  if (object.password !== undefined) {
    const problem = typeof object.password === 'string' ? passwordProblem(object.password) : 'must be a string';
    if (problem) issues.push({ path: '/password', message: problem });
    else password = object.password as string;
  }
  if (issues.length > 0 || !role) fail(issues);
  return { name, email, role, allowedModels, maxBudget, ...(password !== undefined ? { password } : {}) };
}

interface ParsedPatch {
  role?: UserRole;
  disabled?: boolean;
  allowedModels?: string[];
  maxBudget?: Partial<KeyBudget> | null;
}

function parsePatch(body: unknown): ParsedPatch {
  const issues: Issue[] = [];
  const object = asObject(body, ['role', 'disabled', 'allowedModels', 'maxBudget'], issues);
  const change: ParsedPatch = {};
  if (object.role !== undefined) change.role = parseRole(object.role, issues);
  if (object.disabled !== undefined) {
    if (typeof object.disabled !== 'boolean') issues.push({ path: '/disabled', message: 'must be true or false' });
    else change.disabled = object.disabled;
  }
  if (object.allowedModels !== undefined) change.allowedModels = parseAllowedModels(object.allowedModels, issues);
  if (object.maxBudget !== undefined) change.maxBudget = parseMaxBudget(object.maxBudget, issues);
  if (Object.keys(object).length === 0) issues.push({ path: '', message: 'nothing to change' });
  if (issues.length > 0) fail(issues);
  return change;
}
