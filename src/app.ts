/**
 * buildApp(deps) wires the modules together and returns a server that is not yet listening
 * (tests call it and listen on port 0; main.ts adds signals). Nothing here reads process.env.
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { join } from 'node:path';
import fastifyCookie from '@fastify/cookie';
import Fastify, { LogController, type FastifyError, type FastifyInstance } from 'fastify';
import { GatewayError, isGatewayError } from './core/errors.js';
import { trackAnswer } from './http/answering.js';
import { answerClientError } from './http/client-error.js';
import { redactSecrets } from './core/redact-secrets.js';
import { errorBody } from './core/render-error.js';
import { Scheduler } from './queue/scheduler.js';
import { sharedQueueCaps } from './limits/shared-queue-caps.js';
import { ADMIN_BODY_LIMIT_BYTES, registerRoutes, type RouteDeps, type RouteTable } from './http/routes.js';
import { createAccessLog } from './logging/access-log.js';
import { isDashboardBackgroundRead } from './logging/dashboard-reads.js';
import { DASHBOARD_ROUTE_URL } from './http/dashboard.js';
import { compileRequestValidator, compileResponseSerializer, invalidInputError } from './http/route-schemas.js';
import type { KeyVerifier } from './auth/key-index.js';
import type { KeyUseRecorder } from './auth/client-auth-steps.js';
import type { ListModels } from './proxy/models-list.js';
import { wireFormatForPath } from './core/wire-format.js';
import { createForwarder, type Forwarder } from './proxy/forward.js';
import { openSpoolDir } from './proxy/spool-dir.js';
import { createUsageAccounting, type UsageAccounting, type UsageAccountingOptions } from './usage/usage-accounting.js';

/** Open mode: no key records, everyone may call. For tests and tools without a store. */
const NO_KEYS: KeyVerifier & KeyUseRecorder = {
  hasAnyKeys: () => false,
  verify: () => undefined,
  markUsed: () => undefined,
};

function bodyTooLarge(limit: number): GatewayError {
  const size =
    limit % (1024 * 1024) === 0
      ? `${limit / (1024 * 1024)} MiB`
      : limit % 1024 === 0
        ? `${limit / 1024} KiB`
        : `${limit} bytes`;
  return new GatewayError('body_too_large', { message: `The request body exceeds this route's limit of ${size}.` });
}

export interface App {
  server: Server;
  fastify: FastifyInstance;
  /** Requests (including streams) not yet finished. */
  inFlight(): number;
  /** Usage records, limits and metrics of this app. */
  readonly usage: UsageAccounting;
  /** The admission queue in front of llama-swap. */
  readonly queue: Scheduler;
  listen(port: number, host: string): Promise<string>;
  /** Starts the Ollama listener (GATEHOUSE_OLLAMA_LISTEN); undefined when the door is off. */
  listenOllama(port: number, host: string): Promise<string> | undefined;
  /** Stops accepting, lets in-flight work finish for up to `graceMs`, then closes everything. */
  shutdown(graceMs: number): Promise<{ drained: boolean }>;
}

export interface BuildAppInput extends Omit<
  RouteDeps,
  'forwarder' | 'keys' | 'listModels' | 'usage' | 'queue' | 'spoolDir'
> {
  /** Default: from the settings, on the system clock. */
  queue?: Scheduler;
  forwarder?: Forwarder;
  /** Default: built from the settings and the admin store (`createUsageAccounting`). */
  usage?: UsageAccounting;
  /** Options for the default usage subsystem (tests shorten its timers, move its clock). */
  usageOptions?: Partial<Omit<UsageAccountingOptions, 'settings' | 'store' | 'logger'>>;
  keys?: RouteDeps['keys'];
  listModels?: ListModels;
  /** Closed after the server on shutdown (store, key index, usage writer...). */
  closeables?: Array<{ close(): unknown }>;
}

export async function buildApp(input: BuildAppInput): Promise<App> {
  const { settings, logger } = input;
  const forwarder =
    input.forwarder ??
    createForwarder({
      url: settings.upstreamUrl,
      apiKey: settings.upstreamApiKey,
      connectTimeoutMs: settings.connectTimeoutMs,
      headersTimeoutMs: settings.headersTimeoutMs,
      idleTimeoutMs: settings.idleTimeoutMs,
      connections: settings.upstreamConnections,
    });
  const queue: Scheduler =
    input.queue ??
    new Scheduler({
      maxInflight: settings.maxInflight,
      maxInflightPerModel: settings.maxInflightPerModel,
      swapFairnessMs: settings.swapFairnessMs,
      queueTimeoutMs: settings.queueTimeoutMs,
      queueMax: settings.queueMax,
      queueMaxPerKey: settings.queueMaxPerKey,
      // With Redis, the caps hold for every replica together.
      ...(settings.redisUrl !== undefined ? { shared: sharedQueueCaps(() => usage.limits, settings) } : {}),
    });
  const usage: UsageAccounting =
    input.usage ??
    createUsageAccounting({
      ...input.usageOptions,
      metrics: { ...input.usageOptions?.metrics, queueDepth: (): number => queue.waitingCount },
      queue,
      settings,
      store: input.admin?.store,
      logger,
    });
  // With GATEHOUSE_REDIS_URL: the first calls already count in Redis (waits ~1 s at most when it is down).
  await usage.ready();
  const spool = openSpoolDir(join(settings.dataDir, 'spool'));
  const deps: RouteDeps = {
    ...input,
    spoolDir: spool.dir,
    usage,
    queue,
    forwarder,
    keys: input.keys ?? input.admin?.index ?? NO_KEYS,
    listModels:
      input.listModels ??
      (() => Promise.reject(Object.assign(new Error('no model lister configured'), { kind: 'unreachable' }))),
  };

  let inFlight = 0;
  let draining = false;
  let drained: (() => void) | undefined;
  const started = (res: ServerResponse) => {
    inFlight++;
    if (draining) res.shouldKeepAlive = false;
  };
  const ended = () => {
    inFlight--;
    if (draining && inFlight === 0) drained?.();
  };
  // /v1 calls report through the proxy route's own 'close' listener (one per call on the hot path).
  deps.proxyInFlight = { start: started, end: ended };

  // eslint-disable-next-line prefer-const -- assigned once Fastify exists; the serverFactory closure reads it.
  let routes: RouteTable | undefined;
  const fastify = Fastify({
    loggerInstance: logger,
    // We write our own access line (onResponse below); Fastify's two lines per request would double it.
    logController: new LogController({ disableRequestLogging: true }),
    // Fastify never sees /v1 (GATEHOUSE_BODY_LIMIT applies there); its routes take small JSON.
    bodyLimit: ADMIN_BODY_LIMIT_BYTES,
    // Requests Node's parser refuses get the catalogue's JSON, not Fastify's `{"error":"Bad Request"}`.
    clientErrorHandler: answerClientError,
    // Node 20's http server closes idle keep-alive sockets after 5 s; keep the default.
    serverFactory: (fastifyHandler) =>
      createServer({ noDelay: true }, (req: IncomingMessage, res: ServerResponse) => {
        trackAnswer(req, res);
        const raw = routes?.raw(req.url ?? '/');
        if (raw) return raw(req, res);
        started(res);
        res.once('close', ended);
        fastifyHandler(req, res);
      }),
  }) as unknown as FastifyInstance;

  // Route schemas (src/admin-api) validate requests with validators shared across apps and
  // document responses without reshaping them (http/route-schemas.ts).
  fastify.setValidatorCompiler(compileRequestValidator);
  fastify.setSerializerCompiler(compileResponseSerializer);
  fastify.setErrorHandler((error: FastifyError, request, reply) => {
    const format = wireFormatForPath(request.url);
    let gatewayError: GatewayError;
    if (isGatewayError(error)) gatewayError = error;
    else if (error.validation) gatewayError = invalidInputError(error, request);
    else if (error.statusCode === 413) gatewayError = bodyTooLarge(request.routeOptions.bodyLimit);
    else if (error.statusCode === 415)
      gatewayError = new GatewayError('unsupported_media_type', { message: error.message });
    else if (error.statusCode === 400) gatewayError = new GatewayError('bad_request', { message: error.message });
    else {
      request.log.error({ err: error }, 'unexpected error');
      gatewayError = new GatewayError('internal_error');
    }
    // As on /v1: a client told its key is refused should not retry (`/models*` answer API clients too).
    if (format !== 'admin' && (gatewayError.status === 401 || gatewayError.status === 403))
      reply.header('x-should-retry', 'false');
    void reply.code(gatewayError.status).headers(gatewayError.headers).send(errorBody(gatewayError, format));
  });
  fastify.setNotFoundHandler((request, reply) => {
    const error = new GatewayError('not_found', {
      message: `No route for ${request.method} ${request.url.split('?')[0]}.`,
    });
    void reply.code(404).send(errorBody(error, wireFormatForPath(request.url)));
  });
  const accessLog = createAccessLog(logger);
  fastify.addHook('onResponse', (request, reply, done) => {
    const url = request.url;
    const q = url.indexOf('?');
    const path = redactSecrets(q < 0 ? url : url.slice(0, q));
    const quiet = isDashboardBackgroundRead({
      method: request.method,
      path,
      status: reply.statusCode,
      dashboardSession: request.adminIdentity?.via === 'session',
      dashboardFile: request.routeOptions.url === DASHBOARD_ROUTE_URL,
    });
    if (!quiet)
      accessLog({
        req_id: request.id,
        method: request.method,
        path,
        status: reply.statusCode,
        ms: Math.round(reply.elapsedTime * 100) / 100,
      });
    done();
  });

  // Parses `Cookie` for the admin API's session cookie (`gatehouse_session`) and writes `Set-Cookie`.
  await fastify.register(fastifyCookie);
  routes = registerRoutes(fastify, deps);
  await fastify.ready();

  const server = fastify.server;
  const ollamaHandler = routes.ollama;
  // The Ollama door's own listener: every call goes to its chain; the admin API is not reachable there.
  const ollamaServer = ollamaHandler
    ? createServer({ noDelay: true }, (req: IncomingMessage, res: ServerResponse) => {
        trackAnswer(req, res);
        ollamaHandler(req, res);
      })
    : undefined;
  let ollamaListening = false;
  return {
    server,
    fastify,
    usage,
    queue,
    inFlight: () => inFlight,
    listen: (port, host) => listenOn(server, port, host),
    listenOllama(port, host) {
      if (!ollamaServer) return undefined;
      ollamaListening = true;
      return listenOn(ollamaServer, port, host);
    },
    async shutdown(graceMs) {
      draining = true;
      const closed = new Promise<void>((resolve) => server.close(() => resolve()));
      server.closeIdleConnections();
      const ollamaClosed =
        ollamaServer && ollamaListening
          ? new Promise<void>((resolve) => ollamaServer.close(() => resolve()))
          : Promise.resolve();
      ollamaServer?.closeIdleConnections();
      let wasDrained = inFlight === 0;
      if (!wasDrained) {
        wasDrained = await new Promise<boolean>((resolve) => {
          const timer = setTimeout(() => resolve(false), graceMs);
          drained = () => {
            clearTimeout(timer);
            resolve(true);
          };
        });
      }
      server.closeAllConnections();
      ollamaServer?.closeAllConnections();
      await closed;
      await ollamaClosed;
      await fastify.close();
      await forwarder.close();
      spool.close();
      // Before the store closes: the calls that just ended are written.
      await usage.close();
      for (const closeable of input.closeables ?? []) await closeable.close();
      return { drained: wasDrained };
    },
  };
}

/** Listens and says where, as a URL. */
async function listenOn(server: Server, port: number, host: string): Promise<string> {
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => {
      server.off('error', reject);
      resolve();
    });
  });
  const address = server.address();
  if (address === null || typeof address === 'string') throw new Error('server has no TCP address');
  const shownHost = address.family === 'IPv6' ? `[${address.address}]` : address.address;
  return `http://${shownHost}:${address.port}`;
}
