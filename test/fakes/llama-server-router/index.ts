/**
 * A real HTTP server that plays llama.cpp's `llama-server` in router mode (started without a
 * model, one child per model): statuses, LRU eviction at `modelsMax`, load and unload times,
 * autoload on the first call, and the fake inference of the llama-swap simulator for the calls
 * themselves. Tests and `npm run demo` (`DEMO_UPSTREAM=llama-server`) use it; README.md here.
 */
import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { createKnobs } from '../llama-swap/knobs.js';
import { llamaServerError } from '../llama-swap/media-api.js';
import { ChangeNotifier, Recorder } from '../llama-swap/recorder.js';
import type { ResponderContext } from '../llama-swap/stream.js';
import type { Knobs, RecordedRequest } from '../llama-swap/types.js';
import { RouterModels, type RouterModel, type RouterModelConfig } from './models.js';
import { routeRouterRequest } from './routes.js';

export type { RouterModelConfig } from './models.js';

export interface RouterSimulatorOptions {
  models: RouterModelConfig[];
  /** `--models-max`: most models running at once; 0 = no limit (llama-server's default is 4). */
  modelsMax?: number;
  /** `--no-models-autoload` when false. */
  autoload?: boolean;
  loadDelayMs?: number;
  unloadDelayMs?: number;
  /** `--api-key`: every route but `/health` needs it. */
  apiKey?: string;
  /** The fake inference's knobs (tokens, timing, failures), as in the llama-swap simulator. */
  knobs?: Partial<Knobs>;
  host?: string;
  port?: number;
}

export interface RouterSimulator {
  url: string;
  readonly received: RecordedRequest[];
  readonly knobs: Knobs;
  /** A model's status and counters (by ID). */
  model(id: string): RouterModel;
  /** Resolves once `check` holds, re-checked on every request and status change. */
  waitFor<T>(check: () => T | undefined | null | false, timeoutMs?: number, what?: string): Promise<T>;
  close(): Promise<void>;
}

export async function startRouterSimulator(options: RouterSimulatorOptions): Promise<RouterSimulator> {
  const changes = new ChangeNotifier();
  const recorder = new Recorder(changes);
  const knobs = createKnobs(options.knobs);
  const models = new RouterModels(
    options.models,
    options.modelsMax ?? 4,
    { loadDelayMs: options.loadDelayMs ?? 0, unloadDelayMs: options.unloadDelayMs ?? 0 },
    changes,
  );
  const closing = new AbortController();
  const server: Server = createServer((req, res) => {
    void (async () => {
      const body = await readBody(req);
      const rec = recorder.begin(req, res, body);
      const gone = new AbortController();
      res.on('close', () => {
        if (!res.writableFinished) gone.abort();
      });
      const ctx: ResponderContext = {
        req,
        res,
        rec,
        knobs,
        clientGone: gone.signal,
        cut: closing.signal,
      };
      const url = new URL(req.url ?? '/', 'http://router');
      const open = url.pathname === '/health' || url.pathname === '/v1/health';
      if (options.apiKey && !open && req.headers.authorization !== `Bearer ${options.apiKey}`) {
        return llamaServerError(ctx, 401, 'Invalid API Key', 'authentication_error');
      }
      await routeRouterRequest({
        ctx,
        models,
        autoload: options.autoload ?? true,
        path: url.pathname,
        query: url.searchParams,
        body,
      });
    })().catch(() => {
      if (!res.headersSent) res.writeHead(500).end();
      else res.destroy();
    });
  });
  await new Promise<void>((resolve) => server.listen(options.port ?? 0, options.host ?? '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://${options.host ?? '127.0.0.1'}:${port}`,
    received: recorder.received,
    knobs,
    model(id) {
      const found = models.find(id);
      if (!found) throw new Error(`router simulator: no model ${id}`);
      return found;
    },
    waitFor: (check, timeoutMs, what) => changes.waitFor(check, timeoutMs, what),
    async close() {
      closing.abort();
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

function readBody(req: IncomingMessage): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => resolve(Buffer.concat(chunks)));
    req.on('error', reject);
  });
}
