/**
 * Admin API for the dashboard's session: `GET /api/session`, `POST /api/setup`,
 * `POST /api/login`, `POST /api/logout`, `POST /api/password`. Routes and their chains
 * (same-origin, JSON, rate limit, session) are declared in the route table; these are only the
 * handlers. Passwords and tokens arrive in JSON bodies, which are never logged. Each change is
 * written with its audit entry in one transaction (`audited.ts`); a slow scrypt hash is made
 * before the transaction starts.
 */
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { AuthResult, SessionInfo } from '../../admin-api/types.js';
import type { AdminAccount } from '../../auth/admin-account.js';
import { SESSION_COOKIE, type AdminIdentifier } from '../../auth/admin-identity.js';
import type { AdminSessions, StartedSession } from '../../auth/admin-sessions.js';
import { sessionActor } from '../../audit/actor.js';
import { passwordProblem } from '../../auth/passwords.js';
import { SETUP_DONE_MESSAGE } from '../../auth/setup-pending.js';
import { GatewayError } from '../../core/errors.js';
import type { StoreTransaction } from '../../store/store.js';
import type { AuditedHandler, AuditScope } from './audited.js';
import type { SessionCookie } from './session-cookie.js';

export interface SessionHandlerDeps {
  account: AdminAccount;
  sessions: AdminSessions;
  identifier: AdminIdentifier;
  cookie: SessionCookie;
  /** `GATEHOUSE_ADMIN_PASSWORD` manages the password: the API may not change it. */
  passwordFromSettings: boolean;
}

type Handler = (request: FastifyRequest, reply: FastifyReply) => Promise<unknown>;

export interface SessionHandlers {
  session: Handler;
  setup: AuditedHandler;
  login: AuditedHandler;
  logout: AuditedHandler;
  changePassword: AuditedHandler;
}

export function createSessionHandlers(deps: SessionHandlerDeps): SessionHandlers {
  const { account, sessions, identifier, cookie, passwordFromSettings } = deps;

  /** Opens a session in the action's transaction; its entry names the new session as the actor. */
  const startSession = (audit: AuditScope, work: (tx: StoreTransaction) => Promise<void> = async () => {}) =>
    audit.commit(async (tx) => {
      await work(tx);
      const started = await sessions.start(tx.sessions);
      audit.actor = sessionActor(started.session.id);
      return started;
    });

  const signedIn = (request: FastifyRequest, reply: FastifyReply, { token, session }: StartedSession) => {
    cookie.set(request, reply, token, session.expiresAt - session.createdAt);
    return { authenticated: true } satisfies AuthResult;
  };

  return {
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
      } satisfies SessionInfo;
    },

    async setup(request, reply, audit) {
      const body = readBody(request.body, ['token', 'password']);
      requireStrong(body.password, '/password');
      if (await account.hasPassword()) {
        throw new GatewayError('conflict', { message: SETUP_DONE_MESSAGE });
      }
      const hash = await account.hashPassword(body.password);
      const started = await startSession(audit, async (tx) => {
        const claim = await account.claimSetupToken(body.token, tx.meta);
        if (claim !== 'claimed') {
          throw new GatewayError('admin_forbidden', {
            message:
              claim === 'mismatch'
                ? 'The setup token is not valid. Use the link the gateway printed in its log at its last start.'
                : 'No setup token is active (it was used already). Restart the gateway to print a new setup link.',
          });
        }
        await account.storePasswordHash(hash, tx.meta);
      });
      request.log.warn({ event: 'admin_password_set' }, 'admin password set through the setup link');
      return signedIn(request, reply, started);
    },

    async login(request, reply, audit) {
      const body = readBody(request.body, ['password']);
      if (!(await account.hasPassword())) {
        throw new GatewayError('admin_unauthorized', {
          message: "No admin password is set yet: open the setup link printed in the gateway's log.",
        });
      }
      if (!(await account.verifyPassword(body.password))) {
        throw new GatewayError('admin_unauthorized', { message: 'Wrong password.' });
      }
      return signedIn(request, reply, await startSession(audit));
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
      if (passwordFromSettings) {
        throw new GatewayError('conflict', {
          message:
            'The admin password is set by GATEHOUSE_ADMIN_PASSWORD (or its _FILE): change it there and ' +
            'restart the gateway.',
        });
      }
      const body = readBody(request.body, ['currentPassword', 'newPassword']);
      requireStrong(body.newPassword, '/newPassword');
      if (!(await account.verifyPassword(body.currentPassword))) {
        throw new GatewayError('admin_unauthorized', {
          message: 'The current password is wrong.',
          details: [{ path: '/currentPassword', message: 'does not match' }],
        });
      }
      const hash = await account.hashPassword(body.newPassword);
      const identity = request.adminIdentity;
      const ended = await audit.commit(async (tx) => {
        await account.storePasswordHash(hash, tx.meta);
        return sessions.endAllExcept(identity?.via === 'session' ? identity.sessionId : null, tx.sessions);
      });
      request.log.warn(
        { event: 'admin_password_changed', sessions_ended: ended },
        'admin password changed; other sessions signed out',
      );
      return {};
    },
  };
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
