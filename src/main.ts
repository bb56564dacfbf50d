/**
 * `gatehouse serve`: settings → store → admin account (password from settings, or a first-run
 * setup token) → key index → app → listen → setup link, plus signal handling.
 */
import type { Logger } from 'pino';
import { buildApp, type App } from './app.js';
import { announceSetupLink, prepareAdminAccess, setupLink } from './auth/admin-bootstrap.js';
import { authModeLine } from './auth/auth-mode.js';
import { KeyIndex } from './auth/key-index.js';
import { ConfigEditor } from './config-editor/config-editor.js';
import { createLogger } from './logger.js';
import { LineBuffer } from './logging/line-buffer.js';
import { lockDataDir } from './store/data-dir-lock.js';
import { describeStoreLocation, openStore } from './store/open-store.js';
import { openUpstream, type DetectionReport } from './management-client/open-upstream.js';
import type { Settings } from './settings/index.js';

export interface RunningGateway {
  app: App;
  url: string;
  logger: Logger;
  /** The one-time first-run link, while the admin password is still to be chosen. */
  setupLink: string | undefined;
  stop(): Promise<{ drained: boolean }>;
}

export async function startGateway(settings: Readonly<Settings>): Promise<RunningGateway> {
  const gatewayLog = new LineBuffer(1000);
  const logger = createLogger(settings.logLevel, undefined, gatewayLog);
  // SQLite: one server per data directory (PostgreSQL replicas each spool in a directory of their own).
  const dataDirLock = settings.databaseUrl === undefined ? lockDataDir(settings.dataDir) : undefined;
  const store = await openStore(settings);
  // Where, never how: the URL may carry a password, so only host/database/schema are logged.
  const location = describeStoreLocation(settings);
  const applied = store.migrationsApplied.length > 0 ? `, applied ${store.migrationsApplied.length} migration(s)` : '';
  logger.info(
    { store: store.kind, location, migrations_applied: store.migrationsApplied },
    `store: ${location}${applied}`,
  );
  const { setupToken } = await prepareAdminAccess({
    store,
    adminPassword: settings.adminPassword,
    passwordHashCost: settings.passwordHashCost,
    logger,
  });
  const index = await KeyIndex.open(store, {
    onError: (error, during) => logger.error({ err: error }, `key index ${during} failed`),
  });
  const upstream = openUpstream({
    kind: settings.upstreamKind,
    baseUrl: settings.upstreamUrl,
    apiKey: settings.upstreamApiKey,
    timeoutMs: 10_000,
    onDetection: (report) => logDetection(logger, report),
  });
  const configEditor = new ConfigEditor({
    configFile: settings.inferenceConfigFile,
    schemaSource: settings.inferenceConfigSchema,
    dataDir: settings.dataDir,
    proxyLog: upstream,
    logger,
  });
  const configTarget = await configEditor.target();
  if (configTarget.enabled) {
    logger.info(
      { path: configTarget.path, realPath: configTarget.realPath },
      `config editor on: ${configTarget.realPath}`,
    );
    configEditor.start();
  } else {
    logger.info({ config_editor: 'off' }, configTarget.reason);
  }
  const app = await buildApp({
    settings,
    logger,
    upstream,
    listModels: () => upstream.models(),
    activeProfilePins: () => upstream.activeProfilePins(),
    admin: { store, index, llamaSwap: upstream, gatewayLog },
    configEditor,
    // The lock goes last: nothing of this process touches the data directory after it.
    closeables: [configEditor, index, store, upstream, { close: () => dataDirLock?.release() }],
  });
  const url = await app.listen(settings.port, settings.host);
  logger.info(
    { url, upstream: settings.upstreamUrl.origin, upstream_kind: settings.upstreamKind, store: store.kind },
    `Gatehouse listening on ${url}, forwarding /v1 to ${settings.upstreamUrl.origin}` +
      (settings.upstreamKind === 'auto' ? '' : ` (${settings.upstreamKind})`),
  );
  logAuthMode(logger, index, settings.host);
  if (settings.ollamaListen) {
    const ollamaUrl = await app.listenOllama(settings.ollamaListen.port, settings.ollamaListen.host);
    logger.info(
      { ollama_url: ollamaUrl, ollama_keyless_key: settings.ollamaKey },
      `Ollama API listening on ${ollamaUrl}: ${ollamaAuthLine(settings.ollamaKey)}`,
    );
  }
  logUsageMode(logger, app, index, settings);
  logLimitsMode(logger, settings);
  if (setupToken) announceSetupLink(logger, url, setupToken);
  return {
    app,
    url,
    logger,
    setupLink: setupToken ? setupLink(url, setupToken) : undefined,
    stop: () => app.shutdown(settings.shutdownGraceMs),
  };
}

/** `GATEHOUSE_UPSTREAM_KIND=auto`: what the upstream turned out to be, or why it is not known yet. */
function logDetection(logger: Logger, report: DetectionReport): void {
  if ('detected' in report) {
    const { kind, via } = report.detected;
    logger.info({ upstream_kind: kind, via }, `upstream: ${kind} (told by ${via})`);
    return;
  }
  logger.warn(
    { err: report.failed.message, attempt: report.attempt, retry_in_ms: report.retryInMs },
    `upstream: cannot tell yet whether it is llama-swap or llama-server: ${report.failed.message}; ` +
      `asking again in ${Math.round(report.retryInMs / 1000)} s`,
  );
}

/** How the Ollama listener authenticates, for its start-up line (the key's name, never a secret). */
function ollamaAuthLine(keylessKey: string | undefined): string {
  const withKey = 'a call sends its Gatehouse key as "Authorization: Bearer sk-..."';
  return keylessKey === undefined
    ? `${withKey}; without one it gets 401 once any key exists.`
    : `${withKey}; a call without a key acts as the key "${keylessKey}" (GATEHOUSE_OLLAMA_KEY).`;
}

function logAuthMode(logger: Logger, index: KeyIndex, host: string): void {
  const line = authModeLine({ anyKeys: index.hasAnyKeys(), activeKeys: index.activeCount(), host });
  logger[line.level](line.fields, line.message);
}

function logUsageMode(logger: Logger, app: App, index: KeyIndex, settings: Readonly<Settings>): void {
  const capture =
    settings.usageCaptureBytes > 0 ? `first ${settings.usageCaptureBytes} bytes of bodies kept` : 'bodies not kept';
  const retentionDays = Math.round((settings.usageRetentionMs / 86_400_000) * 100) / 100;
  if (app.usage.recording) {
    logger.info(
      { usage: 'recording', retention_days: retentionDays, capture_bytes: settings.usageCaptureBytes },
      `Usage: every /v1 call is recorded (kept ${retentionDays} days, ${capture}); metrics at ` +
        `/metrics${settings.metricsToken ? ' (Bearer token required)' : ''}.`,
    );
    return;
  }
  logger.info(
    { usage: 'off' },
    'Usage: recording is OFF (GATEHOUSE_USAGE_RECORDING=false): no request log, no token counts.',
  );
  if (index.anyKeyHasTpmLimit())
    logger.warn(
      { usage: 'off' },
      'Some API keys have a tokens-per-minute limit, which cannot be enforced while usage recording is off.',
    );
}

/** With Redis the limit store logs its own state (connected, unreachable, back). */
function logLimitsMode(logger: Logger, settings: Readonly<Settings>): void {
  if (settings.redisUrl !== undefined || settings.databaseUrl === undefined) return;
  logger.info(
    { limits: 'replica' },
    'Limits: per-key rpm/tpm/concurrency limits are counted by each replica on its own (N replicas allow ' +
      'up to N times a limit); set GATEHOUSE_REDIS_URL to share them.',
  );
}

/**
 * Runs until SIGTERM/SIGINT, then drains in-flight work for the grace period and exits 0. The
 * logger's stdout destination writes the lines still waiting synchronously as the process exits.
 */
export async function serve(settings: Readonly<Settings>): Promise<void> {
  const gateway = await startGateway(settings);
  let stopping = false;
  const onSignal = (signal: NodeJS.Signals) => {
    if (stopping) {
      gateway.logger.warn({ signal }, 'second signal: exiting now');
      process.exit(1);
    }
    stopping = true;
    const inFlight = gateway.app.inFlight();
    // The listener closes as stop() begins: by the time this line is read, new connections are refused.
    const stopped = gateway.stop();
    gateway.logger.info(
      { signal, in_flight: inFlight, grace_ms: settings.shutdownGraceMs },
      'shutting down: no new connections; letting in-flight requests finish',
    );
    stopped.then(
      ({ drained }) => {
        gateway.logger.info(
          { drained },
          drained ? 'shutdown complete' : 'grace period over: remaining connections closed',
        );
        process.exit(0);
      },
      (error: unknown) => {
        gateway.logger.error({ err: error }, 'shutdown failed');
        process.exit(1);
      },
    );
  };
  process.on('SIGTERM', onSignal);
  process.on('SIGINT', onSignal);
}
