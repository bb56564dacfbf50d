/**
 * The route table: every path the gateway serves, with its middleware chain, on one screen.
 *
 *   /v1/*              client API → llama-swap   cors → clientAuth → keyLimits → readModel →
 *                                                [captureRequestBody] → rateLimitHeaders (GET/HEAD) →
 *                                                modelsListing → modelAllowList → tokenReservation →
 *                                                budgetReservation → rateLimitHeaders (others) →
 *                                                admissionQueue → forward (+ usage tap)
 *                      cors answers OPTIONS preflights (204, no key) and marks browsers' calls readable
 *                      every call, whichever way it ends, is recorded once (usage/call-recorder.ts)
 *   HEAD /             liveness probe (Claude Code sends it before anything else)
 *   GET  /healthz      the process is alive
 *   GET  /readyz       llama-swap's /health answers within GATEHOUSE_READY_TIMEOUT
 *   GET  /metrics      Prometheus text format        metricsToken (when GATEHOUSE_METRICS_TOKEN is set) → handler
 *   GET  /models       models with llama-server's status (a browser without a key: the dashboard page)
 *   POST /models/load | /models/unload   llama-server router-mode compatible   authorizeManage (key with
 *                      the manage scope; its model list applies) → handler      (docs/llama-server.md)
 *
 * Admin API (`/api/*`): `open` = sameOrigin → jsonContentType; then adminSession → allowRoles(...), written
 * as who may call: `everyone` (admin, member, viewer), `readers` (admin, viewer), `keyOwners` (admin,
 * member: a member only their own keys), `admins`. Members see only their own keys and calls (handlers).
 * sameOrigin acts on every method but GET/HEAD/OPTIONS; jsonContentType on requests with a body
 * (always POST/PUT/PATCH). loginRateLimit also settles in onResponse (it counts 401s; setup's, 403s).
 * Bodies: at most ADMIN_BODY_LIMIT_BYTES (64 KiB), the config editor's CONFIG_BODY_LIMIT_BYTES (4 MiB);
 * Fastify counts while reading and refuses a larger Content-Length before reading (413).
 *   GET  /api/session   public: signed in? first run? who, role  open → handler
 *   POST /api/setup     public: first password + setup token    open → setupPending → loginRateLimit → handler
 *                                                               (setup has its own loginRateLimit)
 *   POST /api/login     public: [name +] password → session     open → loginRateLimit (per address and
 *                                                               per account: a preHandler, it reads the name) → handler
 *   POST /api/invite/accept  public: invitation token + password → session   open → setup's loginRateLimit → handler
 *   GET  /api/oidc/login      public: redirect to the OpenID Provider (transaction cookie)   open → handler
 *   GET  /api/oidc/callback   public: the provider's answer → session cookie, or /sign-in?oidc_error=   open → handler
 *                      (both only with GATEHOUSE_OIDC_ISSUER; a refusal is a redirect, the page explains it)
 *   POST /api/logout    end this session                        everyone → handler
 *   GET  /api/me        the signed-in user and role             everyone → handler
 *   POST /api/password  change own password, end other sessions everyone → loginRateLimit → handler
 *   GET  /api/users     list users                              readers → handler
 *   POST /api/users | /api/users/invite   create / invite (one-time link)   admins → handler
 *   PATCH /api/users/:id   role, disabled, allowedModels, maxBudget   admins → handler
 *   GET  /api/keys      list keys (a member: their own)         everyone → handler
 *   POST /api/keys      create a key (shown once)               keyOwners → handler
 *   PATCH/DELETE /api/keys/:id                                  keyOwners → handler
 *   GET  /api/limits    are per-key limits shared (Redis) or per replica?   everyone → handler
 *   GET  /api/queue     calls in flight and waiting their turn (admission queue)   readers → handler
 *   GET  /api/queue/stream   the same view as SSE, on connect and on changes (throttled)   readers → handler
 *   GET  /api/upstream  llama-swap reachable? version            readers → handler
 *   GET  /api/models    models with their state                  everyone → handler
 *   POST /api/models/:id/load | /api/models/:id/unload | /api/models/unload-all   admins → handler
 *   GET  /api/logs/stream?source=…  relayed log stream (SSE)     readers → handler
 *   GET  /api/live      upstream status, models, logs, gaps, queue: one SSE stream per browser   readers → handler
 *   GET  /api/endpoints public URL, open mode, Ollama door     everyone → handler
 *   GET  /api/config    llama-swap's config.yaml + version      admins → handler
 *   PUT  /api/config    save (version-checked, validated)       admins → handler       (4 MiB body)
 *   POST /api/config/validate   YAML + schema + loader checks   admins → handler       (4 MiB body)
 *   POST /api/config/format     re-print; never saves           admins → handler       (4 MiB body)
 *   GET  /api/config/reload-status  did llama-swap reload?      admins → handler
 *   GET  /api/usage/summary?range=&groupBy=   totals + series (a member: own keys)   everyone → handler
 *   GET  /api/usage/requests?key=&model=&status=&from=&to=&cursor=&limit=   request log   everyone → handler
 *   GET  /api/usage/requests/:id   one call; captured bodies to admins and the key's owner only   everyone → handler
 *   GET  /api/budgets   each key's use of its budgets this period (a member: own keys)   everyone → handler
 *   GET  /api/usage/export?from=&to=&format=csv|json&group=call|key|model|day&key=&model=&status=
 *                       request log or its sums as a download, streamed page by page   readers → handler
 *   GET  /api/audit?limit=&before=&action=   who changed what, newest first   readers → handler
 *
 * Audited (`http/admin/audited.ts`): setup, login, logout, password, key writes, user writes and
 * invitation accepts, config save and format, model load/unload/unload-all, and `/models/load|unload`
 * by an API key (manage-models.ts); an OIDC sign-in's user change and session (oidc-handlers.ts).
 * Each call that reaches its handler leaves one entry; a
 * store change commits with its entry, so an entry that cannot be written fails the action (500).
 *   GET  /*            dashboard (web/dist): /assets immutable, SPA fallback for HTML; never /api or /v1
 *
 * Every `/api/*` route must carry the admin chain with exactly one role declaration, or be listed in
 * PUBLIC_ADMIN_ROUTES: an onRoute check refuses to start otherwise, so a new route cannot be left
 * open, or open to every role, by mistake.
 *
 * `/v1/*` is dispatched before Fastify's router, on Node's raw objects: it is the hot path
 * and needs nothing Fastify adds (see docs/architecture.md).
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { FastifyInstance, FastifyRequest, RouteOptions } from 'fastify';
import type { Logger } from 'pino';
import { feedLoadedModels } from '../live/loaded-models-feed.js';
import type { KeyIndex, KeyVerifier } from '../auth/key-index.js';
import type { KeyUseRecorder } from '../auth/client-auth-steps.js';
import type { ConfigEditor } from '../config-editor/config-editor.js';
import type { ProxyContext } from '../core/context.js';
import type { LineBuffer } from '../logging/line-buffer.js';
import type { Forwarder } from '../proxy/forward.js';
import type { ListModels } from '../proxy/models-list.js';
import type { Settings } from '../settings/index.js';
import type { Store } from '../store/store.js';
import type { UserRole } from '../store/records.js';
import type { Upstream } from '../management-client/upstream.js';
import { UpstreamView } from '../live/upstream-view.js';
import type { UsageAccounting } from '../usage/usage-accounting.js';
import { AdminAccount } from '../auth/admin-account.js';
import { createAdminIdentifier } from '../auth/admin-identity.js';
import { adminSession } from './hooks/admin-session.js';
import { allowRoles, declaredRoles } from './hooks/admin-role.js';
import { Users } from '../auth/users.js';
import { AdminSessions } from '../auth/admin-sessions.js';
import { clientAuth, modelAllowList } from '../auth/client-auth-steps.js';
import { jsonContentType } from './hooks/json-content-type.js';
import { loginRateLimit } from '../auth/login-rate-limit.js';
import { metricsToken } from './hooks/metrics-token.js';
import { sameOrigin } from './hooks/same-origin.js';
import { setupPending } from './hooks/setup-pending.js';
import { modelsListing } from '../proxy/models-list.js';
import type { TapFactory } from '../core/steps.js';
import { bodyReceiver, readModel, type BodyReceiver } from '../proxy/read-model.js';
import { cachedCatalog, type ModelCatalog } from '../auth/model-access.js';
import { userActor } from '../audit/actor.js';
import { AuditLog } from '../audit/audit-log.js';
import { AuditRetention } from '../audit/retention.js';
import { createAuditHandler } from './admin/audit-handlers.js';
import { createAudited } from './admin/audited.js';
import { createConfigHandlers } from './admin/config-handlers.js';
import { createEndpointsHandler } from './admin/endpoints-handlers.js';
import { createKeyHandlers } from './admin/keys-handlers.js';
import { createLimitsHandler } from './admin/limits-handlers.js';
import { createBudgetsHandler } from './admin/budgets-handler.js';
import { createLiveStreamHandler } from './admin/live-stream.js';
import { createLogStreamHandler } from './admin/logs-stream.js';
import { createModelHandlers } from './admin/models-handlers.js';
import { sessionCookie } from './admin/session-cookie.js';
import { createSessionHandlers } from './admin/session-handlers.js';
import { createUsageHandlers } from './admin/usage-handlers.js';
import { createUsageExportHandler } from './admin/usage-export.js';
import { createUsersHandlers } from './admin/users-handlers.js';
import { createOidcHandlers, oidcUserEvent } from './admin/oidc-handlers.js';
import { OidcClient } from '../oidc/oidc-client.js';
import { oidcSetup } from '../oidc/oidc-setup.js';
import { oidcSignIn } from '../oidc/sign-in.js';
import { TransactionSeal } from '../oidc/transaction.js';
import { defaultDashboardRoot, registerDashboard } from './dashboard.js';
import { createManageModelHandlers } from './manage-models.js';
import { corsPolicy, withCors } from './cors.js';
import { createProxyRoute } from './proxy-route.js';
import { createProxyTrust, type ProxyTrust } from '../auth/proxy-trust.js';
import { GatewayError } from '../core/errors.js';
import type { ModelEntry } from '../management-client/types.js';
import { ollamaAuth } from '../ollama/door-auth.js';
import { ollamaCall } from '../ollama/door.js';
import { createOllamaRoute } from './ollama-route.js';
import type { Scheduler } from '../queue/scheduler.js';
import { queueAdmission, type ResolveModel } from '../queue/admission-step.js';
import { createQueueHandler } from './admin/queue-handlers.js';
import { createQueueStreamHandler } from './admin/queue-stream.js';

/** The only `/api/*` routes reachable without an admin session or token. */
export const PUBLIC_ADMIN_ROUTES: ReadonlySet<string> = new Set([
  '/api/session',
  '/api/setup',
  '/api/login',
  '/api/invite/accept',
  // OpenID Connect: the start of a sign-in and the provider's redirect back, both before any session.
  '/api/oidc/login',
  '/api/oidc/callback',
]);

/** Wrong passwords allowed per client address within `LOGIN_WINDOW_MS` before `429`. */
const LOGIN_MAX_FAILURES = 5;
/** Wrong passwords allowed per account, from all addresses together, within `LOGIN_WINDOW_MS`. */
const LOGIN_ACCOUNT_MAX_FAILURES = 10;
const LOGIN_WINDOW_MS = 15 * 60_000;

/** Largest body of an `/api/*` request (and any other Fastify route): JSON of a few fields. */
export const ADMIN_BODY_LIMIT_BYTES = 64 * 1024;
/** Largest body of the config editor's routes: llama-swap's config.yaml travels whole. */
const CONFIG_BODY_LIMIT_BYTES = 4 * 1024 * 1024;

export interface UpstreamHealthProbe {
  health(opts?: { timeoutMs?: number }): Promise<{ ok: boolean; status?: number; error?: string }>;
}

/** What the route table serves from: settings, the modules' entry points and the clock. */
export interface RouteDeps {
  settings: Readonly<Settings>;
  logger: Logger;
  forwarder: Forwarder;
  /** This process's own directory for spooled request bodies (proxy/spool-dir.ts). */
  spoolDir: string;
  upstream: UpstreamHealthProbe;
  /** API keys as the `/v1` chain sees them. */
  keys: KeyVerifier & KeyUseRecorder;
  /** llama-swap's model list, for answers the gateway must filter or reshape. */
  listModels: ListModels;
  /** The pins of llama-swap's active profile, for the model allow-list; none when unset. */
  activeProfilePins?: () => Promise<Readonly<Record<string, string>>>;
  /** The admin API's data; without it no `/api/*` route exists. */
  admin?: {
    store: Store;
    index: KeyIndex;
    /** The upstream's own API (llama-swap or llama-server), for the Models and Logs pages. */
    llamaSwap: Upstream;
    /** Gatehouse's recent log lines, for the Logs page. */
    gatewayLog: LineBuffer;
    /** The one shared view of llama-swap every dashboard reads; made from `llamaSwap` when absent. */
    liveView?: UpstreamView;
  };
  /** llama-swap's config.yaml editor (`/api/config*`, inside the admin API); off when unconfigured. */
  configEditor?: ConfigEditor;
  /** Usage records, per-key limits and metrics (`src/usage`). */
  usage: UsageAccounting;
  /** The admission queue every model call passes before it is forwarded (`src/queue`). */
  queue: Scheduler;
  /** An extra response tap, beside the usage tap (tests). */
  tap?: TapFactory;
  onProxyStart?: (ctx: ProxyContext) => void;
  /** Counts `/v1` calls in flight (graceful shutdown); set by buildApp. */
  proxyInFlight?: { start(res: ServerResponse): void; end(): void };
  /** The clock for admin sessions and the login rate limit (tests move it). Default `Date.now`. */
  now?: () => number;
}

export type RawHandler = (req: IncomingMessage, res: ServerResponse) => void;

export interface RouteTable {
  /** The handler for a raw fast-path route, or undefined to let Fastify route it. */
  raw(url: string): RawHandler | undefined;
  /** Every call on the Ollama listener; undefined while the door is off (GATEHOUSE_OLLAMA_LISTEN). */
  ollama: RawHandler | undefined;
}

export function registerRoutes(app: FastifyInstance, deps: RouteDeps): RouteTable {
  const usage = deps.usage;
  const catalog = cachedCatalog(deps.listModels, deps.activeProfilePins);
  const trust = createProxyTrust(deps.settings.trustedProxies);
  // One receiver for both doors, so the spool's caps count every body the gateway holds.
  const receiveBody = bodyReceiver({
    bodyLimitBytes: deps.settings.bodyLimitBytes,
    bodyTimeoutMs: deps.settings.bodyTimeoutMs,
    spoolDir: deps.spoolDir,
    spoolLimits: { maxBytes: deps.settings.spoolMaxBytes, maxPerKey: deps.settings.spoolMaxPerKey },
  });
  const v1Chain = createProxyRoute({
    steps: [
      clientAuth(deps.keys, deps.now),
      usage.limitStep,
      readModel(receiveBody),
      ...(usage.captureStep ? [usage.captureStep] : []),
      usage.readHeadersStep,
      modelsListing(deps.listModels),
      modelAllowList(catalog),
      usage.reserveStep,
      usage.budgetStep,
      usage.headersStep,
      queueAdmission(deps.queue, modelResolver(deps.settings, catalog), deps.settings.sseKeepAliveMs),
    ],
    forwarder: deps.forwarder,
    logger: deps.logger,
    tap: bothTaps(usage.tap, deps.tap),
    onStart: deps.onProxyStart
      ? (ctx) => {
          usage.onStart(ctx);
          deps.onProxyStart!(ctx);
        }
      : usage.onStart,
    inFlight: deps.proxyInFlight,
    trust,
  });
  const v1 = withCors(corsPolicy(deps.settings.corsOrigins), v1Chain);

  app.head('/', async (_request, reply) => reply.code(200).send());
  app.get('/healthz', async () => ({ status: 'ok' }));
  app.get('/readyz', async (_request, reply) => {
    // Short: a probe that hangs as long as llama-swap does tells the load balancer nothing.
    const health = await deps.upstream.health({ timeoutMs: deps.settings.readyTimeoutMs });
    return reply
      .code(health.ok ? 200 : 503)
      .send({ status: health.ok ? 'ready' : 'upstream unavailable', upstream: health });
  });
  // Not under /api: scrapers are neither browsers nor admins. Counters come from memory, never the store.
  app.get('/metrics', { onRequest: [metricsToken(deps.settings.metricsToken)] }, async (_request, reply) => {
    const { contentType, body } = await usage.metrics.exposition();
    return reply.header('content-type', contentType).header('cache-control', 'no-store').send(body);
  });

  const dashboard = registerDashboard(app, { root: defaultDashboardRoot() });

  if (deps.admin) {
    const { store, index } = deps.admin;
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
    // Wrong setup tokens (403) count like wrong passwords, separately from sign-in's.
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

    const open = { onRequest: checks };
    // Who may call a route: every signed-in role, admins and viewers (reads), admins and
    // members (their own keys), admins only.
    const everyone = { onRequest: [...checks, session, allowRoles('admin', 'member', 'viewer')] };
    const readers = { onRequest: [...checks, session, allowRoles('admin', 'viewer')] };
    const keyOwners = { onRequest: [...checks, session, allowRoles('admin', 'member')] };
    const admins = { onRequest: [...checks, session, allowRoles('admin')] };

    const auditLog = new AuditLog(store, { now, logger: deps.logger });
    const audited = createAudited(auditLog, clientAddress);
    const auditRetention = new AuditRetention(store.audit, {
      retentionMs: deps.settings.auditRetentionMs,
      now,
      onError: (error) => deps.logger.error({ err: error }, 'pruning old audit entries failed'),
    });
    app.addHook('onClose', async () => auditRetention.close());

    const cookie = sessionCookie(trust);
    const oidc = oidcSetup(deps.settings);
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
      clientAddress,
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
    if (oidc) {
      const o = createOidcHandlers({
        client: new OidcClient({ ...oidc.client, now }),
        seal: new TransactionSeal(store.meta, now),
        decide: reloadingKeysAfter(
          oidcSignIn({ users, store, mapping: oidc.mapping, autoCreate: oidc.autoCreate }),
          index,
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
        trust,
      });
      app.get('/api/oidc/login', open, o.login);
      app.get('/api/oidc/callback', open, o.callback);
    }
    app.post(
      '/api/password',
      { ...everyone, preHandler: loginLimit.check, onResponse: loginLimit.settle },
      audited('password.change', s.changePassword),
    );

    const usersApi = createUsersHandlers({
      users,
      origin: (request) => deps.settings.publicUrl ?? trust.origin(request.raw) ?? '',
      keysChanged: () => index.reload(),
    });
    app.get('/api/users', readers, usersApi.list);
    app.post('/api/users', admins, audited('user.create', usersApi.create));
    app.post('/api/users/invite', admins, audited('user.invite', usersApi.invite));
    app.patch('/api/users/:id', admins, audited('user.update', usersApi.update));

    const keys = createKeyHandlers({ store, index, catalog });
    app.get('/api/keys', everyone, keys.list);
    app.post('/api/keys', keyOwners, audited('key.create', keys.create));
    app.patch('/api/keys/:id', keyOwners, audited('key.update', keys.update));
    app.delete('/api/keys/:id', keyOwners, audited('key.delete', keys.remove));
    app.get('/api/limits', everyone, createLimitsHandler(usage.limits));
    app.get('/api/budgets', everyone, createBudgetsHandler(store, usage, deps.now));
    app.get('/api/queue', readers, createQueueHandler(deps.queue, deps.now));
    app.get('/api/queue/stream', readers, createQueueStreamHandler(deps.queue, deps.now));

    const view = deps.admin.liveView ?? new UpstreamView({ client: deps.admin.llamaSwap, logger: deps.logger });
    if (!deps.admin.liveView) app.addHook('onClose', async () => view.close());
    if (deps.queue.capped) {
      const stopFeeding = feedLoadedModels(deps.queue, view);
      app.addHook('onClose', async () => stopFeeding());
    }
    const models = createModelHandlers({ upstream: deps.admin.llamaSwap, view, logger: deps.logger });
    app.get('/api/upstream', readers, models.upstreamStatus);
    // Members pick models for their keys and snippets: names and states only, no load/unload.
    app.get('/api/models', everyone, models.list);
    const manage = createManageModelHandlers({
      upstream: deps.admin.llamaSwap,
      keys: deps.keys,
      dashboard,
      logger: deps.logger,
      changed: () => void view.refresh(),
      audit: (request, event) => auditLog.record({ ...event, client: clientAddress(request) }),
      now: deps.now,
    });
    app.get('/models', manage.list);
    app.post('/models/load', manage.load);
    app.post('/models/unload', manage.unload);
    app.post('/api/models/unload-all', admins, audited('model.unload_all', models.unloadAll));
    app.post('/api/models/:id/load', admins, audited('model.load', models.load));
    app.post('/api/models/:id/unload', admins, audited('model.unload', models.unload));
    app.get(
      '/api/logs/stream',
      readers,
      createLogStreamHandler({ upstream: deps.admin.llamaSwap, view, gatewayLog: deps.admin.gatewayLog }),
    );
    const stillSignedIn = async (request: FastifyRequest) => (await identifier.identify(request)) !== undefined;
    app.get(
      '/api/live',
      readers,
      createLiveStreamHandler({
        view,
        gatewayLog: deps.admin.gatewayLog,
        queue: deps.queue,
        now: deps.now,
        stillSignedIn,
      }),
    );
    app.get(
      '/api/endpoints',
      everyone,
      createEndpointsHandler({
        publicUrl: deps.settings.publicUrl,
        keys: deps.keys,
        ollamaPort: deps.settings.ollamaListen?.port,
        ollamaKeyless: deps.settings.ollamaKey !== undefined,
      }),
    );

    if (deps.configEditor) {
      // Admins only: config.yaml may hold upstream API keys, which viewers must not see.
      const config = createConfigHandlers({ editor: deps.configEditor, onConfigChanged: () => void view.refresh() });
      const adminConfigText = { ...admins, bodyLimit: CONFIG_BODY_LIMIT_BYTES };
      app.get('/api/config', admins, config.load);
      app.put('/api/config', adminConfigText, audited('config.save', config.save));
      app.post('/api/config/validate', adminConfigText, config.validate);
      app.post('/api/config/format', adminConfigText, audited('config.format', config.format));
      app.get('/api/config/reload-status', admins, config.reloadStatus);
    }

    const usageApi = createUsageHandlers({
      usage,
      store: store.usage,
      ownedKeyIds: async (userId) => (await store.keys.list({ ownerId: userId })).map((key) => key.id),
      keyOwners: () => keyOwnerNames(store),
    });
    app.get('/api/usage/summary', everyone, usageApi.summary);
    app.get('/api/usage/requests', everyone, usageApi.requests);
    app.get('/api/usage/requests/:id', everyone, usageApi.request);
    // Exports and the audit log list every key and user: not for members, who see only their own.
    app.get('/api/usage/export', readers, createUsageExportHandler({ usage, store: store.usage, now }));
    app.get('/api/audit', readers, createAuditHandler(store.audit));
  }

  return {
    raw(url) {
      return url.startsWith('/v1/') || url === '/v1' || url.startsWith('/v1?') ? v1 : undefined;
    },
    ollama: deps.settings.ollamaListen ? ollamaDoor(deps, catalog, trust, receiveBody) : undefined,
  };
}

/**
 * The Ollama listener's chain: the `/v1` steps, with the door's key check (keyless calls act as
 * GATEHOUSE_OLLAMA_KEY) and `ollamaCall` (answers or translates) in place of readModel and
 * modelsListing. The queue sends no SSE keep-alive comments: NDJSON clients would choke on them.
 *
 *   ollama listener     ollamaAuth → keyLimits → ollamaCall → [captureRequestBody] → rateLimitHeaders (GET) →
 *                       modelAllowList → tokenReservation → budgetReservation → rateLimitHeaders →
 *                       admissionQueue (no keep-alive) → forward (translated) (+ usage tap)
 */
function ollamaDoor(
  deps: RouteDeps,
  catalog: () => Promise<ModelCatalog | undefined>,
  trust: ProxyTrust,
  receiveBody: BodyReceiver,
): RawHandler {
  const usage = deps.usage;
  const upstream = deps.admin?.llamaSwap;
  const unavailable = () =>
    Promise.reject(new GatewayError('service_unavailable', { message: "llama-swap's own API is not configured." }));
  const index = deps.admin?.index;
  const keyName = deps.settings.ollamaKey;
  return createOllamaRoute({
    steps: [
      ollamaAuth(
        deps.keys,
        keyName !== undefined && index ? { name: keyName, find: (n) => index.named(n) } : undefined,
        deps.now,
      ),
      usage.limitStep,
      ollamaCall({
        listModels: deps.listModels as () => Promise<ModelEntry[]>,
        models: {
          running: () => upstream?.running() ?? unavailable(),
          load: (model) => upstream?.load(model) ?? unavailable(),
          unload: (model) => upstream?.unload(model) ?? unavailable(),
        },
        catalog,
        receiveBody,
        logger: deps.logger,
      }),
      ...(usage.captureStep ? [usage.captureStep] : []),
      usage.readHeadersStep,
      modelAllowList(catalog),
      usage.reserveStep,
      usage.budgetStep,
      usage.headersStep,
      queueAdmission(deps.queue, modelResolver(deps.settings, catalog), 0),
    ],
    forwarder: deps.forwarder,
    logger: deps.logger,
    tap: bothTaps(usage.tap, deps.tap),
    onStart: usage.onStart,
    inFlight: deps.proxyInFlight,
    trust,
  });
}

/** Key id → the user who owns it, to name the user beside each call in the request log. */
async function keyOwnerNames(store: Store): Promise<ReadonlyMap<string, { id: string; name: string }>> {
  const [keys, users] = await Promise.all([store.keys.list(), store.users.list()]);
  const names = new Map(users.map((user) => [user.id, user.name]));
  const owners = new Map<string, { id: string; name: string }>();
  for (const key of keys) {
    const name = key.ownerId === null ? undefined : names.get(key.ownerId);
    if (name !== undefined) owners.set(key.id, { id: key.ownerId!, name });
  }
  return owners;
}

/** One tap from two optional ones (the usage tap and an extra one from tests). */
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

function bothTaps(a: TapFactory | undefined, b: TapFactory | undefined): TapFactory | undefined {
  if (!a || !b) return a ?? b;
  return (ctx, status, contentType) => {
    const first = a(ctx, status, contentType);
    const second = b(ctx, status, contentType);
    if (!first || !second) return first ?? second;
    return {
      onChunk(chunk) {
        first.onChunk(chunk);
        second.onChunk(chunk);
      },
      onEnd(outcome) {
        first.onEnd(outcome);
        second.onEnd(outcome);
      },
    };
  };
}

type Hook = (...args: never[]) => unknown;

/** One `/api/*` route and who may call it (`public`: no session needed). */
export interface AdminRouteAccess {
  method: string;
  url: string;
  roles: readonly UserRole[] | 'public';
}

const routeAccess = new WeakMap<FastifyInstance, AdminRouteAccess[]>();

/** Every `/api/*` route registered on `app` so far, with its declared roles (the role tests iterate it). */
export function adminRouteAccess(app: FastifyInstance): readonly AdminRouteAccess[] {
  return routeAccess.get(app) ?? [];
}

/**
 * Refuses, at start, an `/api/*` route without the cross-site checks, or without the admin
 * session step and exactly one declared role (`allowRoles`, after the session step) unless it
 * is in PUBLIC_ADMIN_ROUTES.
 */
export function guardAdminRoutes(app: FastifyInstance, session: Hook, checks: readonly Hook[]): void {
  const seen: AdminRouteAccess[] = [];
  routeAccess.set(app, seen);
  app.addHook('onRoute', (route: RouteOptions) => {
    if (route.url !== '/api' && !route.url.startsWith('/api/')) return;
    const hooks: unknown[] =
      route.onRequest === undefined ? [] : Array.isArray(route.onRequest) ? route.onRequest : [route.onRequest];
    const what = `${String(route.method)} ${route.url}`;
    if (!checks.every((check) => hooks.includes(check))) {
      throw new Error(`route table: ${what} lacks the sameOrigin/jsonContentType checks every /api route needs`);
    }
    const methods = (Array.isArray(route.method) ? route.method : [route.method]).map(String);
    if (PUBLIC_ADMIN_ROUTES.has(route.url)) {
      for (const method of methods) seen.push({ method, url: route.url, roles: 'public' });
      return;
    }
    if (!hooks.includes(session)) {
      throw new Error(`route table: ${what} has no adminSession step; add it or list the route in PUBLIC_ADMIN_ROUTES`);
    }
    const declared = hooks.flatMap((hook, i) => {
      const roles = declaredRoles(hook);
      return roles ? [{ roles, i }] : [];
    });
    if (declared.length !== 1 || declared[0]!.i < hooks.indexOf(session)) {
      const count = declared.length;
      throw new Error(
        `route table: ${what} must declare exactly one allowRoles(...) step after adminSession (it has ${count})`,
      );
    }
    for (const method of methods) seen.push({ method, url: route.url, roles: declared[0]!.roles });
  });
}

/**
 * Aliases count as their model for the per-model cap and the loaded-model preference, so a
 * capped queue resolves names against llama-swap's list; without caps the name is enough.
 */
function modelResolver(
  settings: Pick<Settings, 'maxInflight' | 'maxInflightPerModel'>,
  catalog: () => Promise<ModelCatalog | undefined>,
): ResolveModel {
  if (settings.maxInflight === 0 && settings.maxInflightPerModel === 0) return (name) => name;
  return async (name) => (await catalog())?.resolve(name) ?? name;
}
