/**
 * The route table: every path the gateway serves, with its middleware chain, on one screen. The
 * `/v1` and Ollama chains are built in `proxy-chains.ts`; admin routes are registered by one plugin
 * per feature under `routes/` from the services `admin-services.ts` builds once.
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
 *   GET  /api/openapi.json   the admin API reference, OpenAPI 3.1 from the route schemas   everyone → handler
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
 * PUBLIC_ADMIN_ROUTES (`admin-route-guard.ts`): an onRoute check refuses to start otherwise, so a new
 * route cannot be left open, or open to every role, by mistake.
 *
 * `/v1/*` is dispatched before Fastify's router, on Node's raw objects: it is the hot path
 * and needs nothing Fastify adds (see docs/architecture.md).
 */
import type { FastifyInstance } from 'fastify';
import { metricsToken } from './hooks/metrics-token.js';
import { buildAdminServices } from './admin-services.js';
import { defaultDashboardRoot, registerDashboard } from './dashboard.js';
import { buildProxyChains } from './proxy-chains.js';
import { auditRoutes } from './routes/audit.js';
import { configRoutes } from './routes/config.js';
import { keysRoutes } from './routes/keys.js';
import { liveRoutes } from './routes/live.js';
import { modelsRoutes } from './routes/models.js';
import fastifySwagger from '@fastify/swagger';
import { OPENAPI_OPTIONS, openapiRoutes } from './routes/openapi.js';
import { queueRoutes } from './routes/queue.js';
import { sessionRoutes } from './routes/session.js';
import { usageRoutes } from './routes/usage.js';
import { usersRoutes } from './routes/users.js';
import type { RouteDeps, RouteTable } from './route-deps.js';

/** Largest body of an `/api/*` request (and any other Fastify route): JSON of a few fields. */
export const ADMIN_BODY_LIMIT_BYTES = 64 * 1024;

export type { RouteDeps, RouteTable } from './route-deps.js';

export function registerRoutes(app: FastifyInstance, deps: RouteDeps): RouteTable {
  const { v1, ollama, catalog, trust } = buildProxyChains(deps);

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
    const { contentType, body } = await deps.usage.metrics.exposition();
    return reply.header('content-type', contentType).header('cache-control', 'no-store').send(body);
  });

  const dashboard = registerDashboard(app, { root: defaultDashboardRoot() });

  if (deps.admin) {
    const services = buildAdminServices(app, deps, deps.admin, { trust, catalog, dashboard });
    // Loaded by the app's ready(); the guard above checks each route as the plugins register it.
    // Swagger's collector registers first (not encapsulated), so it sees every admin route.
    void app.register(fastifySwagger, OPENAPI_OPTIONS);
    for (const plugin of [
      openapiRoutes(services),
      sessionRoutes(services),
      usersRoutes(services),
      keysRoutes(services),
      queueRoutes(services),
      modelsRoutes(services),
      liveRoutes(services),
      ...(deps.configEditor ? [configRoutes(services, deps.configEditor)] : []),
      usageRoutes(services),
      auditRoutes(services),
    ])
      void app.register(plugin);
  }

  return {
    raw(url) {
      return url.startsWith('/v1/') || url === '/v1' || url.startsWith('/v1?') ? v1 : undefined;
    },
    ollama,
  };
}
