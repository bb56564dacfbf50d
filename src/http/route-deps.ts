/** What the route table is built from: settings, the modules' entry points and the clock. */
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Logger } from 'pino';
import type { KeyIndex, KeyVerifier } from '../auth/key-index.js';
import type { KeyUseRecorder } from '../auth/client-auth-steps.js';
import type { ConfigEditor } from '../config-editor/config-editor.js';
import type { ProxyContext } from '../core/context.js';
import type { TapFactory } from '../core/steps.js';
import type { LineBuffer } from '../logging/line-buffer.js';
import type { Forwarder } from '../proxy/forward.js';
import type { ListModels } from '../proxy/models-list.js';
import type { Settings } from '../settings/index.js';
import type { Store } from '../store/store.js';
import type { Upstream } from '../management-client/upstream.js';
import type { UpstreamView } from '../live/upstream-view.js';
import type { UsageAccounting } from '../usage/usage-accounting.js';
import type { Scheduler } from '../queue/scheduler.js';

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
