/**
 * The admin API's composition root: builds every service its route plugins share (sessions,
 * accounts, audit log, the upstream view...) and the role chains routes are declared with,
 * once per app. The plugins under `routes/` only register routes with these.
 */
import type { FastifyInstance, FastifyRequest, onRequestHookHandler } from 'fastify';
import { AdminAccount } from '../auth/admin-account.js';
import { createAdminIdentifier, type AdminIdentifier } from '../auth/admin-identity.js';
import { adminSession } from './hooks/admin-session.js';
import { allowRoles } from './hooks/admin-role.js';
import { AdminSessions } from '../auth/admin-sessions.js';
import { jsonContentType } from './hooks/json-content-type.js';
import { loginRateLimit } from '../auth/login-rate-limit.js';
import type { ModelCatalog } from '../auth/model-access.js';
import type { ProxyTrust } from '../auth/proxy-trust.js';
import { sameOrigin } from './hooks/same-origin.js';
import { Users } from '../auth/users.js';
import { AuditLog } from '../audit/audit-log.js';
import { AuditRetention } from '../audit/retention.js';
import { feedLoadedModels } from '../live/loaded-models-feed.js';
import { UpstreamView } from '../live/upstream-view.js';
import { oidcSetup } from '../oidc/oidc-setup.js';
import { createAudited, type Audited } from './admin/audited.js';
import { sessionCookie, type SessionCookie } from './admin/session-cookie.js';
import { guardAdminRoutes } from './admin-route-guard.js';
import type { Dashboard } from './dashboard.js';
import type { RouteDeps } from './route-deps.js';

/** Wrong passwords allowed per client address within `LOGIN_WINDOW_MS` before `429`. */
export const LOGIN_MAX_FAILURES = 5;
/** Wrong passwords allowed per account, from all addresses together, within `LOGIN_WINDOW_MS`. */
export const LOGIN_ACCOUNT_MAX_FAILURES = 10;
export const LOGIN_WINDOW_MS = 15 * 60_000;

type OnRequest = { onRequest: onRequestHookHandler[] };

/** Who may call a route, as the route options that say it. */
export interface RouteAccess {
  /** The cross-site checks alone: public routes (PUBLIC_ADMIN_ROUTES). */
  open: OnRequest;
  /** Every signed-in role: admin, member, viewer. */
  everyone: OnRequest;
  /** Admins and viewers (reads). */
  readers: OnRequest;
  /** Admins and members (a member only their own keys). */
  keyOwners: OnRequest;
  admins: OnRequest;
  /** The cross-site checks, for routes that add steps of their own before the handler. */
  checks: OnRequest['onRequest'];
}

export interface AdminServices {
  deps: RouteDeps;
  admin: NonNullable<RouteDeps['admin']>;
  now: () => number;
  trust: ProxyTrust;
  catalog: () => Promise<ModelCatalog | undefined>;
  clientAddress: (request: FastifyRequest) => string;
  access: RouteAccess;
  sessions: AdminSessions;
  account: AdminAccount;
  users: Users;
  identifier: AdminIdentifier;
  auditLog: AuditLog;
  audited: Audited;
  cookie: SessionCookie;
  oidc: ReturnType<typeof oidcSetup>;
  /** Wrong setup and invitation tokens (403) count like wrong passwords, separately from sign-in's. */
  setupLimit: ReturnType<typeof loginRateLimit>;
  /** The one shared view of llama-swap every dashboard reads. */
  view: UpstreamView;
  dashboard: Dashboard;
}

/**
 * Builds the admin services on `app` and installs the route guard, so every `/api/*` route
 * registered after it is checked. Closing the app stops what these services run in the background.
 */
export function buildAdminServices(
  app: FastifyInstance,
  deps: RouteDeps,
  admin: NonNullable<RouteDeps['admin']>,
  shared: { trust: ProxyTrust; catalog: () => Promise<ModelCatalog | undefined>; dashboard: Dashboard },
): AdminServices {
  const { store } = admin;
  const { trust } = shared;
  const now = deps.now ?? Date.now;
  const sessions = new AdminSessions({ store: store.sessions, ttlMs: deps.settings.sessionTtlMs, now });
  const scryptCost = deps.settings.passwordHashCost;
  const account = new AdminAccount(store, { now, scryptCost });
  const users = new Users({ store, now, scryptCost });
  const identifier = createAdminIdentifier({
    sessions,
    users: { get: (id) => store.users.get(id), firstAdmin: () => account.firstAdmin() },
    adminToken: deps.settings.adminToken,
  });
  const clientAddress = (request: FastifyRequest) => trust.clientAddress(request.raw);
  const setupLimit = loginRateLimit({
    maxFailures: LOGIN_MAX_FAILURES,
    windowMs: LOGIN_WINDOW_MS,
    clientAddress,
    now,
    failureStatus: 403,
    attemptName: 'setup',
  });
  const checks = [sameOrigin(trust), jsonContentType()];
  const session = adminSession(identifier);
  guardAdminRoutes(app, session, checks);
  app.decorateRequest('adminIdentity', null);

  const auditLog = new AuditLog(store, { now, logger: deps.logger });
  const auditRetention = new AuditRetention(store.audit, {
    retentionMs: deps.settings.auditRetentionMs,
    now,
    onError: (error) => deps.logger.error({ err: error }, 'pruning old audit entries failed'),
  });
  app.addHook('onClose', async () => auditRetention.close());

  const view = admin.liveView ?? new UpstreamView({ client: admin.llamaSwap, logger: deps.logger });
  if (!admin.liveView) app.addHook('onClose', async () => view.close());
  if (deps.queue.capped) {
    const stopFeeding = feedLoadedModels(deps.queue, view);
    app.addHook('onClose', async () => stopFeeding());
  }

  return {
    deps,
    admin,
    now,
    trust,
    catalog: shared.catalog,
    clientAddress,
    access: {
      open: { onRequest: checks },
      everyone: { onRequest: [...checks, session, allowRoles('admin', 'member', 'viewer')] },
      readers: { onRequest: [...checks, session, allowRoles('admin', 'viewer')] },
      keyOwners: { onRequest: [...checks, session, allowRoles('admin', 'member')] },
      admins: { onRequest: [...checks, session, allowRoles('admin')] },
      checks,
    },
    sessions,
    account,
    users,
    identifier,
    auditLog,
    audited: createAudited(auditLog, clientAddress),
    cookie: sessionCookie(trust),
    oidc: oidcSetup(deps.settings),
    setupLimit,
    view,
    dashboard: shared.dashboard,
  };
}
