/**
 * The `gatehouse_session` cookie's attributes, in one place: `HttpOnly` (page scripts never
 * see it), `SameSite=Strict` (never sent on a request another site starts), `Path=/`, and
 * `Secure` when the client reached us over HTTPS (TLS socket, or `X-Forwarded-Proto: https`
 * from a trusted proxy). Over plain HTTP `Secure` would make the browser drop the cookie.
 *
 * `Max-Age` is the session's absolute lifetime; the idle timeout is enforced by the server,
 * which is the authority either way.
 */
import type { FastifyReply, FastifyRequest } from 'fastify';
import { SESSION_COOKIE } from '../../auth/admin-identity.js';
import type { ProxyTrust } from '../../auth/proxy-trust.js';

export interface SessionCookie {
  /** `maxAgeMs`: how long the browser keeps it (the session's absolute lifetime). */
  set(request: FastifyRequest, reply: FastifyReply, token: string, maxAgeMs: number): void;
  clear(request: FastifyRequest, reply: FastifyReply): void;
}

export function sessionCookie(trust: ProxyTrust): SessionCookie {
  const attributes = (request: FastifyRequest) =>
    ({ httpOnly: true, sameSite: 'strict', path: '/', secure: trust.protocol(request.raw) === 'https' }) as const;
  return {
    set(request, reply, token, maxAgeMs) {
      void reply.setCookie(SESSION_COOKIE, token, {
        ...attributes(request),
        maxAge: Math.max(0, Math.floor(maxAgeMs / 1000)),
      });
    },
    clear(request, reply) {
      void reply.clearCookie(SESSION_COOKIE, attributes(request));
    },
  };
}
