/**
 * Starts a real gateway on port 0 in this process, with its log lines captured in memory.
 * With `withStore`, it opens a real SQLite store in a fresh temp dir (or `dataDir`), prepares
 * the admin account and opens the key index, as `gatehouse serve` does, and prints the
 * first-run setup link to the captured log when the store has no admin password yet. Passwords
 * are hashed at TEST_PASSWORD_HASH_COST unless the overrides say otherwise.
 */
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import { buildApp, type App, type BuildAppInput } from '../../src/app.js';
import { announceSetupLink, prepareAdminAccess } from '../../src/auth/admin-bootstrap.js';
import { KeyIndex } from '../../src/auth/key-index.js';
import { createLogger } from '../../src/logger.js';
import { LineBuffer } from '../../src/logging/line-buffer.js';
import { openUpstream, type UpstreamKindSetting } from '../../src/management-client/open-upstream.js';
import type { Upstream } from '../../src/management-client/upstream.js';
import { UpstreamView } from '../../src/live/upstream-view.js';
import { settingsFor, type Settings } from '../../src/settings/index.js';
import { openStore } from '../../src/store/open-store.js';
import type { Store } from '../../src/store/store.js';
import { TEST_PASSWORD_HASH_COST } from './password-cost.js';

export interface TestGateway {
  url: string;
  app: App;
  settings: Readonly<Settings>;
  store: Store | undefined;
  index: KeyIndex | undefined;
  dataDir: string;
  /** The shared view of llama-swap the admin API answers from (with `withStore`). */
  view: UpstreamView | undefined;
  /** Every log line written so far, raw. */
  logText(): string;
  logLines(): Array<Record<string, unknown>>;
  /** Resolves with the first log line (parsed) matching `predicate`, as soon as it is written. */
  waitForLog(predicate: (line: Record<string, unknown>) => boolean): Promise<Record<string, unknown>>;
  close(): Promise<void>;
}

export interface TestGatewayOptions {
  withStore?: boolean;
  dataDir?: string;
  /** What the admin API's upstream client takes the upstream for (default llama-swap). */
  upstreamKind?: UpstreamKindSetting;
  /** Listen on this port (when its address must be known before: a redirect URI); default 0. */
  port?: number;
}

export async function startTestGateway(
  upstreamUrl: string,
  overrides: Partial<Settings> = {},
  extra: Partial<BuildAppInput> = {},
  options: TestGatewayOptions = {},
): Promise<TestGateway> {
  const dataDir = options.dataDir ?? mkdtempSync(join(tmpdir(), 'gh-test-'));
  const settings = settingsFor({
    host: '127.0.0.1',
    port: 0,
    upstreamUrl: new URL(upstreamUrl),
    logLevel: 'info',
    dataDir,
    passwordHashCost: TEST_PASSWORD_HASH_COST,
    ...overrides,
  });
  let text = '';
  const logWatchers = new Set<() => void>();
  const sink = new Writable({
    write(chunk: Buffer, _enc, cb) {
      text += chunk.toString('utf8');
      for (const watcher of [...logWatchers]) watcher();
      cb();
    },
  });
  const logLines = () =>
    text
      .split('\n')
      .filter(Boolean)
      .map((l) => JSON.parse(l) as Record<string, unknown>);
  const gatewayLog = new LineBuffer(1000);
  const logger = createLogger(settings.logLevel, sink, gatewayLog);
  let store: Store | undefined;
  let index: KeyIndex | undefined;
  let llamaSwap: Upstream | undefined;
  let liveView: UpstreamView | undefined;
  let setupToken: string | undefined;
  if (options.withStore) {
    store = await openStore(settings);
    ({ setupToken } = await prepareAdminAccess({
      store,
      adminPassword: settings.adminPassword,
      passwordHashCost: settings.passwordHashCost,
      logger,
    }));
    index = await KeyIndex.open(store, { flushIntervalMs: 200 });
    llamaSwap = openUpstream({ kind: options.upstreamKind ?? 'llama-swap', baseUrl: new URL(upstreamUrl) });
    liveView = new UpstreamView({ client: llamaSwap, logger });
  }
  const app = await buildApp({
    settings,
    logger,
    upstream: { health: async () => ({ ok: true }) },
    ...(store && index && llamaSwap && liveView
      ? { admin: { store, index, llamaSwap, gatewayLog, liveView }, closeables: [liveView, index, store, llamaSwap] }
      : {}),
    ...extra,
  });
  const url = await app.listen(options.port ?? 0, '127.0.0.1');
  if (setupToken) announceSetupLink(logger, url, setupToken);
  let closed = false;
  return {
    url,
    app,
    settings,
    store,
    index,
    dataDir,
    view: liveView,
    logText: () => text,
    logLines,
    waitForLog(predicate) {
      return new Promise((resolve) => {
        const check = () => {
          const hit = logLines().find(predicate);
          if (!hit) return;
          logWatchers.delete(check);
          resolve(hit);
        };
        logWatchers.add(check);
        check();
      });
    },
    async close() {
      if (closed) return;
      closed = true;
      await app.shutdown(100);
    },
  };
}
