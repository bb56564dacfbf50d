/**
 * Who is calling the admin API, if anyone: a dashboard session (the `gatehouse_session`
 * cookie) or a script with `Authorization: Bearer <GATEHOUSE_ADMIN_TOKEN>`. Client API keys
 * (`sk-...`) are neither, so they never open the admin API.
 *
 * Either credential is enough; an unrelated `Authorization` header (e.g. Basic auth added by a
 * reverse proxy) does not spoil a valid cookie.
 */
import { createHash, timingSafeEqual } from 'node:crypto';
import type { FastifyRequest } from 'fastify';
import type { AdminSessions } from './admin-sessions.js';

export const SESSION_COOKIE = 'gatehouse_session';

export type AdminIdentity = { via: 'session'; sessionId: string } | { via: 'token' };

export interface AdminIdentifier {
  /** Whether `GATEHOUSE_ADMIN_TOKEN` is configured. */
  readonly tokenEnabled: boolean;
  identify(request: FastifyRequest): Promise<AdminIdentity | undefined>;
}

export function createAdminIdentifier(options: {
  sessions: AdminSessions;
  adminToken: string | undefined;
}): AdminIdentifier {
  const { sessions } = options;
  // Compare digests: always equal length, so neither the content nor the length of a guess
  // changes how long the comparison takes.
  const expected = options.adminToken ? digest(options.adminToken) : undefined;

  const tokenMatches = (request: FastifyRequest): boolean => {
    if (!expected) return false;
    const header = request.headers.authorization;
    const match = typeof header === 'string' ? /^Bearer\s+(\S+)\s*$/i.exec(header) : null;
    return match !== null && timingSafeEqual(digest(match[1]!), expected);
  };

  return {
    tokenEnabled: expected !== undefined,
    async identify(request) {
      // The cookie first: when a browser sends both, its session is who it is (sign-out and
      // password change act on it).
      const cookie = request.cookies[SESSION_COOKIE];
      const session = cookie ? await sessions.resolve(cookie) : undefined;
      if (session) return { via: 'session', sessionId: session.id };
      return tokenMatches(request) ? { via: 'token' } : undefined;
    },
  };
}

function digest(value: string): Buffer {
  return createHash('sha256').update(value, 'utf8').digest();
}
