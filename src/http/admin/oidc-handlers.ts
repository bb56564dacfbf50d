/**
 * OpenID Connect sign-in: `GET /api/oidc/login` sends the browser to the provider with a fresh
 * transaction cookie; `GET /api/oidc/callback` completes it, starts a session and opens the
 * dashboard. Both are top-level navigations, so a refusal is a redirect to the sign-in page
 * with the catalogue code (`/sign-in?oidc_error=<code>`), which the page explains; the reason
 * goes to the log. The provider's code, tokens and the client secret are never logged.
 */
import type { FastifyReply, FastifyRequest } from 'fastify';
import { userActor } from '../../audit/actor.js';
import type { AuditEvent } from '../../audit/audit-log.js';
import { userChanges, userTarget } from '../../audit/user-changes.js';
import type { ProxyTrust } from '../../auth/proxy-trust.js';
import type { ErrorCode } from '../../core/errors.js';
import type { OidcClient, OidcIdentity } from '../../oidc/oidc-client.js';
import type { OidcDecision } from '../../oidc/sign-in.js';
import { TRANSACTION_TTL_MS, type TransactionSeal } from '../../oidc/transaction.js';

export const TRANSACTION_COOKIE = 'gatehouse_oidc';

export interface OidcHandlerDeps {
  client: OidcClient;
  seal: TransactionSeal;
  decide: (identity: OidcIdentity) => Promise<OidcDecision>;
  /** Records what the sign-in changed on the user, starts their dashboard session and sets its cookie. */
  startSession: (request: FastifyRequest, reply: FastifyReply, decision: OidcAccepted) => Promise<void>;
  /** `GATEHOUSE_PUBLIC_URL`: the redirect URI's base and where the browser returns. */
  publicUrl: string;
  trust: ProxyTrust;
}

type Handler = (request: FastifyRequest, reply: FastifyReply) => Promise<unknown>;
export type OidcAccepted = Extract<OidcDecision, { ok: true }>;

export function createOidcHandlers(deps: OidcHandlerDeps): { login: Handler; callback: Handler } {
  const { client, seal, publicUrl } = deps;
  // SameSite=Lax: the provider sends the browser back with a cross-site navigation.
  const publicHost = new URL(publicUrl).host;
  const cookiePath = `${new URL(publicUrl).pathname.replace(/\/$/, '')}/api/oidc`;
  const cookie = (request: FastifyRequest) =>
    ({
      httpOnly: true,
      sameSite: 'lax',
      path: cookiePath,
      secure: deps.trust.protocol(request.raw) === 'https',
    }) as const;

  const refuse = (request: FastifyRequest, reply: FastifyReply, code: ErrorCode, log: Record<string, unknown>) => {
    request.log.warn({ event: 'oidc_sign_in_refused', code, ...log }, 'OpenID Connect sign-in refused');
    return reply.redirect(`${publicUrl}/sign-in?oidc_error=${code}`, 303);
  };

  return {
    async login(request, reply) {
      const query = request.query as Record<string, unknown>;
      const next = safeNext(query.next);
      // The cookie must be set on the host the provider sends the browser back to (once: a
      // proxy that rewrites Host must not make a loop).
      const host = hostOf(deps.trust.origin(request.raw));
      if (host !== publicHost && query.hop === undefined) {
        return reply.redirect(`${publicUrl}/api/oidc/login?next=${encodeURIComponent(next)}&hop=1`, 302);
      }
      let started: Awaited<ReturnType<OidcClient['start']>>;
      try {
        started = await client.start();
      } catch (error) {
        return refuse(request, reply, 'oidc_unavailable', { reason: 'discovery failed', ...describe(error) });
      }
      void reply.setCookie(TRANSACTION_COOKIE, await seal.seal(started.checks, next), {
        ...cookie(request),
        maxAge: TRANSACTION_TTL_MS / 1000,
      });
      return reply.header('cache-control', 'no-store').redirect(started.url.href, 302);
    },

    async callback(request, reply) {
      // One use: whatever happens next, this browser's transaction is over.
      void reply.clearCookie(TRANSACTION_COOKIE, cookie(request));
      const transaction = await seal.open(request.cookies[TRANSACTION_COOKIE]);
      if (typeof transaction === 'string')
        return refuse(request, reply, 'oidc_failed', { reason: `transaction cookie ${transaction}` });
      const query = new URLSearchParams(request.raw.url?.split('?')[1] ?? '');
      let identity: OidcIdentity;
      try {
        identity = await client.finish(query, transaction);
      } catch (error) {
        return refuse(request, reply, 'oidc_failed', {
          reason: 'the provider or its answer failed a check',
          ...describe(error),
        });
      }
      const decision = await deps.decide(identity);
      if (!decision.ok) return refuse(request, reply, decision.code, { reason: decision.reason });
      await deps.startSession(request, reply, decision);
      request.log.info(
        {
          event: 'oidc_sign_in',
          user: decision.user.id,
          role: decision.user.role,
          created: decision.created,
          linked: decision.linked,
        },
        'signed in through OpenID Connect',
      );
      return reply.redirect(`${publicUrl}${transaction.next}`, 303);
    },
  };
}

/**
 * The audit entry of what a sign-in changed on the user, by the person signing in: made
 * (auto-create), linked to an invitation, or given the role the provider's claim maps to now.
 * Null when nothing changed.
 */
export function oidcUserEvent(decision: OidcAccepted): Omit<AuditEvent, 'client'> | null {
  const { user, before } = decision;
  const changes = userChanges(before, user);
  if (changes === null) return null;
  const action =
    before === null
      ? 'user.create'
      : decision.linked
        ? 'user.invite_accept'
        : changes.role
          ? 'user.role_change'
          : 'user.update';
  return { actor: userActor(user), action, target: userTarget(user), outcome: 'success', reason: null, changes };
}

function hostOf(origin: string | undefined): string | undefined {
  return origin === undefined ? undefined : new URL(origin).host;
}

/** Only a path inside the dashboard: never `//host` or another origin. */
function safeNext(value: unknown): string {
  return typeof value === 'string' && /^\/(?![/\\])[^\s]*$/.test(value) && value.length <= 512 ? value : '/';
}

/**
 * What the library says went wrong, in named fields: its code, the OAuth `error`, its message and
 * the message of the check that failed (the library's `cause`; never the cause's own data, which
 * holds the claims). None of these carries the code, a token or the client secret.
 */
function describe(error: unknown): Record<string, unknown> {
  if (!(error instanceof Error)) return { error: String(error) };
  const fields = error as Error & { code?: unknown; error?: unknown; error_description?: unknown };
  return {
    error_name: error.name,
    error_code: typeof fields.code === 'string' ? fields.code : undefined,
    oauth_error: typeof fields.error === 'string' ? fields.error : undefined,
    oauth_error_description: typeof fields.error_description === 'string' ? fields.error_description : undefined,
    message: error.message,
    detail: error.cause instanceof Error ? error.cause.message : undefined,
  };
}
