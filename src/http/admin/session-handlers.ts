/**
 * Admin API for the dashboard's session: `GET /api/session`, `GET /api/me`, `POST /api/setup`,
 * `POST /api/login`, `POST /api/logout`, `POST /api/password`, `POST /api/invite/accept`. Routes and their chains
 * (same-origin, JSON, rate limit, session) are declared in the route table; these are only the
 * handlers. Passwords and tokens arrive in JSON bodies, which are never logged. Each change is
 * written with its audit entry in one transaction (`audited.ts`); a slow scrypt hash is made
 * before the transaction starts.
 */
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { AuthResult, InviteAcceptInput, Me, SessionInfo } from '../../admin-api/types.js';
import type { AdminAccount } from '../../auth/admin-account.js';
import { roleOf, SESSION_COOKIE, type AdminIdentifier } from '../../auth/admin-identity.js';
import { toUserView, type Users } from '../../auth/users.js';
import type { UserRecord } from '../../store/records.js';
import type { AdminSessions, StartedSession } from '../../auth/admin-sessions.js';
import { userActor } from '../../audit/actor.js';
import { userChanges, userTarget } from '../../audit/user-changes.js';
import { passwordProblem } from '../../auth/passwords.js';
import { SETUP_DONE_MESSAGE } from '../hooks/setup-pending.js';
import { GatewayError } from '../../core/errors.js';
import { userNameKey } from '../../core/user-names.js';
import type { StoreTransaction } from '../../store/store.js';
import type { AuditedHandler, AuditScope } from './audited.js';
import type { SessionCookie } from './session-cookie.js';

export interface SessionHandlerDeps {
  account: AdminAccount;
  users: Users;
  sessions: AdminSessions;
  identifier: AdminIdentifier;
  cookie: SessionCookie;
  /** `GATEHOUSE_ADMIN_PASSWORD` manages the password: the API may not change it. */
  passwordFromSettings: boolean;
  /** The OpenID Provider's name for the sign-in page; undefined without OIDC sign-in. */
  oidcName?: string;
}

type Handler = (request: FastifyRequest, reply: FastifyReply) => Promise<unknown>;

export interface SessionHandlers {
  session: Handler;
  setup: AuditedHandler;
  login: AuditedHandler;
  logout: AuditedHandler;
  changePassword: AuditedHandler;
  me: Handler;
  acceptInvite: AuditedHandler;
  /** The account a sign-in or password change tries, for the sign-in rate limit. */
  attemptedAccount: (request: FastifyRequest) => Promise<string | undefined>;
}

export function createSessionHandlers(deps: SessionHandlerDeps): SessionHandlers {
  const { account, users, sessions, identifier, cookie, passwordFromSettings } = deps;

  const setCookie = (request: FastifyRequest, reply: FastifyReply, { token, session }: StartedSession) => {
    cookie.set(request, reply, token, session.expiresAt - session.createdAt);
    return { authenticated: true } satisfies AuthResult;
  };

  /** Opens the user's session in the action's transaction; its entry names the user as the actor. */
  const signIn = async (
    request: FastifyRequest,
    reply: FastifyReply,
    audit: AuditScope,
    work: (tx: StoreTransaction) => Promise<UserRecord>,
  ) => {
    const started = await audit.commit(async (tx) => {
      const user = await work(tx);
      audit.actor = userActor(user);
      return sessions.start(user.id, tx.sessions);
    });
    return setCookie(request, reply, started);
  };

  return {
    async attemptedAccount(request) {
      // A password change: the signed-in user's own (the admin token's is the first admin's).
      const identity = request.adminIdentity;
      if (identity) return `user:${(identity.via === 'session' ? identity.user : await account.firstAdmin())?.id}`;
      let name: string | undefined;
      try {
        name = readName(request.body);
      } catch {
        return undefined; // a malformed body: the handler refuses it, and nothing is guessed
      }
      // A name nobody has is counted under the name itself, exactly as a user is under their id.
      const user = name === undefined ? await account.firstAdmin() : await users.findByName(name);
      return user ? `user:${user.id}` : `name:${userNameKey(name ?? '')}`;
    },

    async session(request, reply) {
      const identity = await identifier.identify(request);
      // Recorded like adminSession does, so the access log knows a signed-in dashboard asked.
      request.adminIdentity = identity ?? null;
      // A cookie that no longer opens anything (expired, signed out elsewhere) is dropped.
      if (request.cookies[SESSION_COOKIE] !== undefined && identity?.via !== 'session') cookie.clear(request, reply);
      return {
        authenticated: identity !== undefined,
        setupRequired: !(await account.hasPassword()),
        via: identity?.via ?? null,
        user: identity?.via === 'session' ? toUserView(identity.user) : null,
        role: identity ? roleOf(identity) : null,
        oidc: deps.oidcName === undefined ? null : { name: deps.oidcName },
      } satisfies SessionInfo;
    },

    async me(request) {
      const identity = request.adminIdentity!;
      return {
        user: identity.via === 'session' ? toUserView(identity.user) : null,
        role: roleOf(identity),
      } satisfies Me;
    },

    async acceptInvite(request, reply, audit) {
      const body: InviteAcceptInput = readBody(request.body, ['token', 'password']);
      requireStrong(body.password, '/password');
      const hash = await users.hashPassword(body.password);
      const answer = await signIn(request, reply, audit, async (tx) => {
        const result = await users.through(tx).acceptInvite(body.token, hash);
        if (!result.ok) {
          throw new GatewayError('admin_forbidden', {
            message:
              result.reason === 'expired'
                ? 'This invitation has expired. Ask an admin for a new link.'
                : result.reason === 'disabled'
                  ? 'This account is disabled.'
                  : 'This invitation is not valid (it may have been used already). Ask an admin for a new link.',
          });
        }
        audit.target = userTarget(result.user);
        audit.changes = userChanges(result.before, result.user);
        return result.user;
      });
      request.log.info({ event: 'invite_accepted', user_id: audit.target?.id }, 'invitation accepted');
      return answer;
    },

    async setup(request, reply, audit) {
      const body = readBody(request.body, ['token', 'password']);
      requireStrong(body.password, '/password');
      if (await account.hasPassword()) {
        throw new GatewayError('conflict', { message: SETUP_DONE_MESSAGE });
      }
      const hash = await account.hashPassword(body.password);
      const answer = await signIn(request, reply, audit, async (tx) => {
        const claim = await account.claimSetupToken(body.token, tx.meta);
        if (claim !== 'claimed') {
          throw new GatewayError('admin_forbidden', {
            message:
              claim === 'mismatch'
                ? 'The setup token is not valid. Use the link the gateway printed in its log at its last start.'
                : 'No setup token is active (it was used already). Restart the gateway to print a new setup link.',
          });
        }
        return account.storePasswordHash(hash, tx);
      });
      request.log.warn({ event: 'admin_password_set' }, 'admin password set through the setup link');
      return answer;
    },

    async login(request, reply, audit) {
      const body = readBody(request.body, ['password']);
      // Without a name: the first admin (the one-password sign-in of earlier versions).
      const name = readName(request.body);
      if (name === undefined && !(await account.hasPassword())) {
        throw new GatewayError('admin_unauthorized', {
          message: "No admin password is set yet: open the setup link printed in the gateway's log.",
        });
      }
      const user =
        name === undefined
          ? await account.verifyPassword(body.password)
          : await users.verifyPassword(name, body.password);
      if (!user) {
        throw new GatewayError('admin_unauthorized', {
          message: name === undefined ? 'Wrong password.' : 'Wrong name or password.',
        });
      }
      return signIn(request, reply, audit, async () => user);
    },

    async logout(request, reply, audit) {
      const identity = request.adminIdentity;
      await audit.commit(async (tx) => {
        if (identity?.via === 'session') await sessions.end(identity.sessionId, tx.sessions);
      });
      cookie.clear(request, reply);
      return { authenticated: false } satisfies AuthResult;
    },

    async changePassword(request, _reply, audit) {
      // A signed-in user changes their own password; the admin token (a script) the first admin's.
      const identity = request.adminIdentity;
      const first = await account.firstAdmin();
      const user = identity?.via === 'session' ? identity.user : first;
      if (!user) throw new GatewayError('conflict', { message: 'No admin password is set yet.' });
      audit.target = userTarget(user);
      if (user.signIn !== 'password') {
        throw new GatewayError('conflict', { message: 'You sign in through your identity provider: change it there.' });
      }
      if (passwordFromSettings && first?.id === user.id) {
        throw new GatewayError('conflict', {
          message:
            'The admin password is set by GATEHOUSE_ADMIN_PASSWORD (or its _FILE): change it there and ' +
            'restart the gateway.',
        });
      }
      const body = readBody(request.body, ['currentPassword', 'newPassword']);
      requireStrong(body.newPassword, '/newPassword');
      if (!(await users.verifyPassword(user.name, body.currentPassword))) {
        throw new GatewayError('admin_unauthorized', {
          message: 'The current password is wrong.',
          details: [{ path: '/currentPassword', message: 'does not match' }],
        });
      }
      const hash = await account.hashPassword(body.newPassword);
      const ended = await audit.commit(async (tx) => {
        await tx.users.update(user.id, { passwordHash: hash });
        return sessions.endAllExcept(identity?.via === 'session' ? identity.sessionId : null, user.id, tx.sessions);
      });
      request.log.warn(
        { event: 'admin_password_changed', sessions_ended: ended },
        'admin password changed; other sessions signed out',
      );
      return {};
    },
  };
}

/** The optional `name` of a sign-in body; absent or empty means the first admin. */
function readName(body: unknown): string | undefined {
  const name = (body as Record<string, unknown> | null | undefined)?.name;
  if (name === undefined || name === '') return undefined;
  if (typeof name !== 'string')
    throw new GatewayError('validation_failed', {
      message: 'Invalid: name.',
      details: [{ path: '/name', message: 'must be a string' }],
    });
  return name;
}

/** The named string fields of a JSON object body, or 422 listing every problem. */
function readBody<K extends string>(body: unknown, fields: readonly K[]): Record<K, string> {
  if (typeof body !== 'object' || body === null || Array.isArray(body)) {
    throw new GatewayError('validation_failed', {
      message: 'The body must be a JSON object.',
      details: [{ path: '', message: 'must be an object' }],
    });
  }
  const record = body as Record<string, unknown>;
  const details = fields
    .filter((f) => typeof record[f] !== 'string' || record[f] === '')
    .map((f) => ({ path: `/${f}`, message: 'is required (a string)' }));
  if (details.length > 0)
    throw new GatewayError('validation_failed', {
      message: `Missing or invalid: ${details.map((d) => d.path.slice(1)).join(', ')}.`,
      details,
    });
  return record as Record<K, string>;
}

function requireStrong(password: string, path: string): void {
  const problem = passwordProblem(password);
  if (problem)
    throw new GatewayError('validation_failed', {
      message: `The new password ${problem}.`,
      details: [{ path, message: problem }],
    });
}
