/**
 * Admin API for users: `GET/POST /api/users`, `PATCH /api/users/:id`, `POST /api/users/invite`.
 * Names are stored in NFKC and compared as `core/user-names.ts` says: a look-alike of a taken name is taken.
 * Bodies are checked by the route schemas (`admin-api/users.ts`) before a handler runs; what
 * needs the normalized name or the password's strength is checked here.
 * Routes, their chains and who may call them are in the route table; these are only the
 * handlers. An invitation link carries its token in the fragment (`/invite#token=...`), so it
 * never reaches a server log or a Referer; the answer that creates it is the only place it appears.
 * Every write commits with its audit entry (`audited.ts`): the user and what changed, never the link.
 */
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { Static } from 'typebox';
import type { AuditAction, CreatedUser, Invitation, UserList } from '../../admin-api/types.js';
import {
  USER_NAME_MAX,
  type InviteInput,
  type NewUserInput,
  type UserParams,
  type UserPatch,
} from '../../admin-api/users.js';
import { userChanges, userTarget } from '../../audit/user-changes.js';
import { passwordProblem } from '../../auth/passwords.js';
import { nameTaken, toUserView, type Users } from '../../auth/users.js';
import { GatewayError } from '../../core/errors.js';
import type { FieldIssue } from '../../core/schema-validator.js';
import { hasInvisibleCharacters, normalizeUserName } from '../../core/user-names.js';
import { hasBudget, type KeyBudget, type UserRecord, type UserRole } from '../../store/records.js';
import type { AuditedHandler, AuditScope } from './audited.js';

export interface UsersHandlerDeps {
  users: Users;
  /** The origin people open the dashboard at, for the link: GATEHOUSE_PUBLIC_URL or the request's own. */
  origin: (request: FastifyRequest) => string;
  /** Reloads the key index after a change that alters what keys may do (disabling, role, allowance). */
  keysChanged: () => Promise<void>;
}

type Handler = (request: FastifyRequest, reply: FastifyReply) => Promise<unknown>;

const INVISIBLE_IN_NAME =
  'must not contain invisible or control characters ' +
  '(zero-width, direction marks, tabs, line breaks, spaces other than U+0020)';
type NewUserBody = Static<typeof NewUserInput>;
type PatchBody = Static<typeof UserPatch>;

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
  const createUser = async (request: FastifyRequest, audit: AuditScope) => {
    const input = parseNewUser(request.body as NewUserBody);
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
      const { user, invite } = await createUser(request, audit);
      reply.code(201);
      return { user: toUserView(user), invite } satisfies CreatedUser;
    },

    /** `{userId}`: a new link for a user who has not set a password; otherwise a new user with one. */
    async invite(request, reply, audit) {
      const body = request.body as Static<typeof InviteInput>;
      if ('userId' in body) {
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
      const { user, invite } = await createUser(request, audit);
      reply.code(201);
      return { user: toUserView(user), invite } satisfies CreatedUser;
    },

    async update(request, _reply, audit) {
      const { maxBudget, allowedModels, ...fields } = request.body as PatchBody;
      const rest = { ...fields, ...(allowedModels ? { allowedModels: distinctModels(allowedModels) } : {}) };
      audit.action = patchAction(rest);
      const { id } = request.params as Static<typeof UserParams>;
      const current = await users.get(id);
      if (!current) throw new GatewayError('not_found', { message: `No user with id ${JSON.stringify(id)}.` });
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
function patchAction(change: Pick<PatchBody, 'role' | 'disabled'>): AuditAction {
  if (change.disabled !== undefined) return change.disabled ? 'user.disable' : 'user.enable';
  return change.role !== undefined ? 'user.role_change' : 'user.update';
}

/**
 * What the user route schemas cannot check (their refinement): a name's length once in NFKC and
 * trimmed, its invisible characters, and a new password's strength. Fields of the wrong type are
 * the schema's to report.
 */
export function userFieldIssues(body: unknown): FieldIssue[] {
  if (typeof body !== 'object' || body === null) return [];
  const { name, password } = body as Record<string, unknown>;
  const issues: FieldIssue[] = [];
  if (typeof name === 'string') {
    const normalized = normalizeUserName(name);
    if (normalized === '' || normalized.length > USER_NAME_MAX)
      issues.push({ path: '/name', message: `required: 1 to ${USER_NAME_MAX} characters` });
    else if (hasInvisibleCharacters(name)) issues.push({ path: '/name', message: INVISIBLE_IN_NAME });
  }
  const weak = typeof password === 'string' ? passwordProblem(password) : undefined;
  if (weak) issues.push({ path: '/password', message: weak });
  return issues;
}

function emptyCap(base: KeyBudget | null): KeyBudget {
  return base ?? { tokens: null, requests: null, gpuSeconds: null, period: 'day' };
}

function toCap(budget: KeyBudget | null): KeyBudget | null {
  return budget && hasBudget(budget) ? budget : null;
}

/** The new user from a body the route schema and its refinement accepted. */
function parseNewUser(body: NewUserBody): {
  name: string;
  email: string | null;
  role: UserRole;
  allowedModels: string[];
  maxBudget: KeyBudget | null;
  password?: string;
} {
  const cap = body.maxBudget ? toCap({ ...emptyCap(null), ...body.maxBudget }) : null;
  return {
    name: normalizeUserName(body.name),
    email: body.email || null,
    role: body.role,
    allowedModels: distinctModels(body.allowedModels ?? []),
    maxBudget: cap,
    ...(body.password !== undefined ? { password: body.password } : {}),
  };
}

function distinctModels(models: readonly string[]): string[] {
  return [...new Set(models.map((model) => model.trim()))];
}
