/**
 * Signing in and out: first-run setup, password and invitation sign-in, the session itself, the
 * password change and, with GATEHOUSE_OIDC_ISSUER, the OpenID Connect sign-in.
 */
import type { FastifyPluginAsync } from 'fastify';
import type { KeyIndex } from '../../auth/key-index.js';
import { loginRateLimit } from '../../auth/login-rate-limit.js';
import { setupPending } from '../hooks/setup-pending.js';
import { userActor } from '../../audit/actor.js';
import { OidcClient } from '../../oidc/oidc-client.js';
import { oidcSignIn } from '../../oidc/sign-in.js';
import { TransactionSeal } from '../../oidc/transaction.js';
import { createOidcHandlers, oidcUserEvent } from '../admin/oidc-handlers.js';
import { createSessionHandlers } from '../admin/session-handlers.js';
import {
  LOGIN_ACCOUNT_MAX_FAILURES,
  LOGIN_MAX_FAILURES,
  LOGIN_WINDOW_MS,
  type AdminServices,
} from '../admin-services.js';

export const sessionRoutes =
  (services: AdminServices): FastifyPluginAsync =>
  async (app) => {
    const { deps, access, audited, setupLimit, account, users, sessions, identifier, cookie, oidc, now } = services;
    const { checks, open, everyone } = access;
    const s = createSessionHandlers({
      account,
      users,
      sessions,
      identifier,
      cookie,
      passwordFromSettings: deps.settings.adminPassword !== undefined,
      oidcName: oidc?.name,
    });
    const loginLimit = loginRateLimit({
      maxFailures: LOGIN_MAX_FAILURES,
      maxAccountFailures: LOGIN_ACCOUNT_MAX_FAILURES,
      windowMs: LOGIN_WINDOW_MS,
      clientAddress: services.clientAddress,
      account: s.attemptedAccount,
      now,
    });
    app.get('/api/session', open, s.session);
    app.post(
      '/api/setup',
      { onRequest: [...checks, setupPending(account), setupLimit.check], onResponse: setupLimit.settle },
      audited('setup.complete', s.setup),
    );
    app.post(
      '/api/login',
      { onRequest: checks, preHandler: loginLimit.check, onResponse: loginLimit.settle },
      audited('session.sign_in', s.login, { failureAction: 'session.sign_in_failed' }),
    );
    // Wrong or used tokens (403) count like wrong setup tokens.
    app.post(
      '/api/invite/accept',
      { onRequest: [...checks, setupLimit.check], onResponse: setupLimit.settle },
      audited('user.invite_accept', s.acceptInvite),
    );
    app.post('/api/logout', everyone, audited('session.sign_out', s.logout));
    app.get('/api/me', everyone, s.me);
    app.post(
      '/api/password',
      { ...everyone, preHandler: loginLimit.check, onResponse: loginLimit.settle },
      audited('password.change', s.changePassword),
    );
    if (oidc) app.register(oidcRoutes(services, oidc));
  };

const oidcRoutes =
  (services: AdminServices, oidc: NonNullable<AdminServices['oidc']>): FastifyPluginAsync =>
  async (app) => {
    const { admin, auditLog, sessions, cookie, clientAddress, now } = services;
    const o = createOidcHandlers({
      client: new OidcClient({ ...oidc.client, now }),
      seal: new TransactionSeal(admin.store.meta, now),
      decide: reloadingKeysAfter(
        oidcSignIn({ users: services.users, store: admin.store, mapping: oidc.mapping, autoCreate: oidc.autoCreate }),
        admin.index,
      ),
      startSession: async (request, reply, decision) => {
        const { user } = decision;
        // The decision changed the user already; its entry follows, before the session opens.
        const change = oidcUserEvent(decision);
        if (change) await auditLog.record({ ...change, client: clientAddress(request) });
        const { token, session } = await auditLog.commit(
          (tx) => sessions.start(user.id, tx.sessions),
          () => ({
            actor: userActor(user),
            client: clientAddress(request),
            action: 'session.sign_in',
            target: null,
            outcome: 'success',
            reason: null,
          }),
        );
        cookie.set(request, reply, token, session.expiresAt - session.createdAt);
      },
      publicUrl: oidc.publicUrl,
      trust: services.trust,
    });
    app.get('/api/oidc/login', services.access.open, o.login);
    app.get('/api/oidc/callback', services.access.open, o.callback);
  };

/**
 * A provider's sign-in may change the person's role (its claim), which decides whether an
 * allowance bounds their keys: the key index reloads before the session starts.
 */
function reloadingKeysAfter<I, D extends { ok: boolean }>(
  decide: (identity: I) => Promise<D>,
  index: Pick<KeyIndex, 'reload'>,
): (identity: I) => Promise<D> {
  return async (identity) => {
    const decision = await decide(identity);
    if (decision.ok) await index.reload();
    return decision;
  };
}
