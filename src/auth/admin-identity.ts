/**
 * Who is calling the admin API, if anyone: a dashboard session (the `gatehouse_session`
 * cookie) of an enabled user, or a script with `Authorization: Bearer <GATEHOUSE_ADMIN_TOKEN>`
 * (an admin that is no user). Client API keys (`sk-...`) are neither, so they never open the
 * admin API.
 *
 * Either credential is enough; an unrelated `Authorization` header (e.g. Basic auth added by a
 * reverse proxy) does not spoil a valid cookie. The user is read on every request, so a role
 * change or a disabled user takes effect at the next request, on every replica.
 */
import type { UserRecord, UserRole } from '../store/records.js';
import type { AdminSessions } from './admin-sessions.js';
import { bearerTokenMatcher } from './bearer-token.js';

export const SESSION_COOKIE = 'gatehouse_session';

export type AdminIdentity = { via: 'session'; sessionId: string; user: UserRecord } | { via: 'token' };

/** The admin token acts as an admin; a session as its user's role. */
export function roleOf(identity: AdminIdentity): UserRole {
  return identity.via === 'token' ? 'admin' : identity.user.role;
}

/** What a request shows of its credentials: its headers and its parsed cookies (a Fastify request is one). */
export interface AdminCredentials {
  readonly headers: { readonly authorization?: string | undefined };
  readonly cookies: Readonly<Record<string, string | undefined>>;
}

export interface AdminIdentifier {
  /** Whether `GATEHOUSE_ADMIN_TOKEN` is configured. */
  readonly tokenEnabled: boolean;
  identify(request: AdminCredentials): Promise<AdminIdentity | undefined>;
}

export interface SessionUsers {
  get(id: string): Promise<UserRecord | undefined>;
  /** The user a session without one belongs to (one an older version started): the first admin. */
  firstAdmin(): Promise<UserRecord | undefined>;
}

export function createAdminIdentifier(options: {
  sessions: AdminSessions;
  users: SessionUsers;
  adminToken: string | undefined;
}): AdminIdentifier {
  const { sessions, users } = options;
  const tokenMatches = bearerTokenMatcher(options.adminToken);

  const sessionUser = async (request: AdminCredentials): Promise<AdminIdentity | undefined> => {
    const cookie = request.cookies[SESSION_COOKIE];
    const session = cookie ? await sessions.resolve(cookie) : undefined;
    if (!session) return undefined;
    const user = session.userId === null ? await users.firstAdmin() : await users.get(session.userId);
    if (!user || user.disabledAt !== null) {
      // Disabling ends sessions; one that slipped through (a race) ends here.
      await sessions.end(session.id);
      return undefined;
    }
    return { via: 'session', sessionId: session.id, user };
  };

  return {
    tokenEnabled: tokenMatches !== undefined,
    async identify(request) {
      // The cookie first: when a browser sends both, its session is who it is (sign-out and
      // password change act on it).
      const fromSession = await sessionUser(request);
      if (fromSession) return fromSession;
      return tokenMatches?.(request.headers.authorization) ? { via: 'token' } : undefined;
    },
  };
}
