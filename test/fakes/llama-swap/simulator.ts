/**
 * The simulator process: the HTTP listener with llama-swap's two global wrappers (access log,
 * CORS preflight), the mux, per-route auth, config (re)loading and the test-facing handle.
 */
import { setMaxListeners } from 'node:events';
import { readFile } from 'node:fs/promises';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { performance } from 'node:perf_hooks';
import { ActivityLog } from './activity.js';
import { isAuthorized, UNAUTHORIZED_MESSAGE, WWW_AUTHENTICATE } from './auth.js';
import { loadConfig, realModelName, type SimConfig } from './config.js';
import type { RequestContext, RouteHandler, SimServices } from './context.js';
import { goHttpError, goRedirect, type GoMux } from './go-mux.js';
import { Instance } from './instance.js';
import { createKnobs } from './knobs.js';
import { goDuration, LogMonitor, logLine } from './logs.js';
import { ChangeNotifier, Recorder } from './recorder.js';
import { sendLlamaSwapError, type SendErrorOptions } from './responses.js';
import { buildRoutes, isLegacyHidden } from './routes.js';
import type {
  ActivityEntry,
  Knobs,
  LogSourceId,
  ModelState,
  RecordedRequest,
  ReloadResult,
  RunningEntry,
  Simulator,
  SimulatorOptions,
} from './types.js';
import { ConfigWatcher } from './watcher.js';

/** Paths the access log skips (log.go:150). */
const ACCESS_LOG_SKIPS = ['/wol-health', '/api/performance', '/metrics'];

export class LlamaSwapSimulator implements Simulator, SimServices {
  readonly knobs: Knobs;
  readonly proxyLog = new LogMonitor();
  readonly upstreamLog = new LogMonitor();
  readonly muxLog = new LogMonitor();
  readonly activityLog = new ActivityLog(() => this.changes.notify());
  private readonly changes = new ChangeNotifier();
  private readonly recorder: Recorder;
  private readonly mux: GoMux<RouteHandler> = buildRoutes();
  private readonly server: Server;
  private readonly closing = new AbortController();
  private instance: Instance;
  private inlineConfig: Record<string, unknown>;
  private watcher: ConfigWatcher | undefined;
  private reloading = false;
  private readonly timers = new Set<NodeJS.Timeout>();
  private address: AddressInfo | undefined;
  #loads = 0;

  /** Model loads since start (reloads included); with one model at a time, every load after the first is a swap. */
  get loads(): number {
    return this.#loads;
  }

  private constructor(
    private readonly options: SimulatorOptions,
    cfg: SimConfig,
  ) {
    this.knobs = createKnobs(options.knobs);
    this.recorder = new Recorder(this.changes, options.recordLimit);
    this.inlineConfig = options.config ?? {};
    this.instance = this.createInstance(cfg);
    // What llama-swap prints to stdout, hence serves at /logs (logToStdout; fixed until restart).
    if (cfg.logToStdout === 'proxy' || cfg.logToStdout === 'both') this.proxyLog.onData((d) => this.muxLog.write(d));
    if (cfg.logToStdout === 'upstream' || cfg.logToStdout === 'both')
      this.upstreamLog.onData((d) => this.muxLog.write(d));
    this.server = createServer((req, res) => void this.onRequest(req, res));
    // Every open request listens for the simulator closing.
    setMaxListeners(0, this.closing.signal);
  }

  static async start(options: SimulatorOptions = {}): Promise<LlamaSwapSimulator> {
    const source = options.configFile ? await readFile(options.configFile, 'utf8') : (options.config ?? {});
    const sim = new LlamaSwapSimulator(options, loadConfig(source));
    await new Promise<void>((resolve, reject) => {
      sim.server.once('error', reject);
      sim.server.listen(options.port ?? 0, options.host ?? '127.0.0.1', () => {
        sim.server.off('error', reject);
        resolve();
      });
    });
    sim.address = sim.server.address() as AddressInfo;
    if (options.configFile && options.watchConfig) {
      sim.watcher = new ConfigWatcher(options.configFile, options.watchIntervalMs ?? 2000, () => void sim.reload());
      await sim.watcher.start();
    }
    return sim;
  }

  get port(): number {
    return this.address?.port ?? 0;
  }

  get url(): string {
    const host = this.options.host ?? '127.0.0.1';
    const shown = host === '0.0.0.0' || host === '::' ? '127.0.0.1' : host.includes(':') ? `[${host}]` : host;
    return `http://${shown}:${this.port}`;
  }

  get received(): RecordedRequest[] {
    return this.recorder.received;
  }

  logProxy(level: 'INFO' | 'WARN', message: string): void {
    this.proxyLog.write(logLine(level, message));
    this.changes.notify();
  }

  private createInstance(cfg: SimConfig): Instance {
    return new Instance(cfg, {
      knobs: () => this.knobs,
      proxyLog: (level, message) => this.logProxy(level, message),
      upstreamLog: this.upstreamLog,
      notify: () => this.changes.notify(),
      onLoad: () => this.#loads++,
    });
  }

  // ---- HTTP entry -------------------------------------------------------------------------

  private async onRequest(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const started = performance.now();
    const body = await readBody(req);
    const rec = this.recorder.begin(req, res, body);
    const gone = new AbortController();
    const onClosing = () => gone.abort();
    this.closing.signal.addEventListener('abort', onClosing, { once: true });
    let bytesOut = 0;
    const write = res.write.bind(res) as (...a: unknown[]) => boolean;
    res.write = ((...a: unknown[]) => {
      bytesOut += byteLength(a[0]);
      return write(...a);
    }) as typeof res.write;
    const end = res.end.bind(res) as (...a: unknown[]) => ServerResponse;
    res.end = ((...a: unknown[]) => {
      if (typeof a[0] !== 'function') bytesOut += byteLength(a[0]);
      return end(...a);
    }) as typeof res.end;

    const rawUrl = req.url ?? '/';
    const q = rawUrl.indexOf('?');
    const escapedPath = q >= 0 ? rawUrl.slice(0, q) : rawUrl;
    const rawQuery = q >= 0 ? rawUrl.slice(q + 1) : '';
    const path = safeDecode(escapedPath);
    const remoteIp = clientIp(req);

    res.on('close', () => {
      this.closing.signal.removeEventListener('abort', onClosing);
      if (!res.writableFinished) gone.abort();
      if (ACCESS_LOG_SKIPS.some((p) => path.startsWith(p))) return;
      const status = res.headersSent ? res.statusCode : 499;
      const ua = req.headers['user-agent'] ?? '';
      this.logProxy(
        'INFO',
        `Request ${remoteIp} "${req.method} ${path} HTTP/${req.httpVersion}" ${status} ${bytesOut} "${ua}" ` +
          `${goDuration(performance.now() - started)}`,
      );
    });

    const inst = this.instance;
    const ctx: RequestContext = {
      sim: this,
      inst,
      req,
      res,
      rec,
      body,
      escapedPath,
      path,
      query: new URLSearchParams(rawQuery),
      rawQuery,
      params: {},
      remoteIp,
      clientGone: gone.signal,
      sendError: (status: number, message: string, opts?: SendErrorOptions) =>
        sendLlamaSwapError(req, res, this.knobs.errorShape, status, message, opts),
    };
    try {
      await this.dispatch(ctx);
    } catch (err) {
      if (!res.headersSent) goHttpError(res, 500, `simulator error: ${(err as Error).message}`);
      else res.destroy();
    }
  }

  private async dispatch(ctx: RequestContext): Promise<void> {
    const { req, res } = ctx;
    const method = req.method ?? 'GET';
    if (method === 'OPTIONS') return corsPreflight(req, res);
    if (this.knobs.legacyRoutes && isLegacyHidden(ctx.path)) return goHttpError(res, 404, '404 page not found');
    if (!this.knobs.eventsRoute && ctx.path === '/api/events') return goHttpError(res, 404, '404 page not found');
    const m = this.mux.match(method, ctx.escapedPath, ctx.rawQuery);
    switch (m.kind) {
      case 'not-found':
        return goHttpError(res, 404, '404 page not found');
      case 'method-not-allowed':
        return goHttpError(res, 405, 'Method Not Allowed', { Allow: m.allow });
      case 'redirect':
        return goRedirect(res, method, m.location, m.status);
      case 'match': {
        ctx.params = m.params;
        const keys = this.knobs.apiKeys ?? ctx.inst.cfg.apiKeys;
        if (m.handler.auth && !isAuthorized(req, keys)) {
          return ctx.sendError(401, UNAUTHORIZED_MESSAGE, { headers: { 'WWW-Authenticate': WWW_AUTHENTICATE } });
        }
        return m.handler.run(ctx);
      }
    }
  }

  // ---- Simulator handle --------------------------------------------------------------------

  state(model: string): ModelState | undefined {
    return this.instance.state(model);
  }

  activity(): readonly ActivityEntry[] {
    return this.activityLog.all;
  }

  running(): RunningEntry[] {
    return this.instance.processes.running();
  }

  async load(model: string): Promise<void> {
    const id = this.resolveLocal(model);
    const lease = await this.instance.processes.acquire(id);
    lease.release();
  }

  async unload(model?: string): Promise<void> {
    await this.instance.processes.unload(model === undefined ? undefined : [this.resolveLocal(model)]);
  }

  private resolveLocal(model: string): string {
    const id = realModelName(this.instance.cfg, model);
    if (id === undefined) throw new Error(`simulator: unknown local model ${model}`);
    return id;
  }

  /** llama-swap's reload: WARN and keep the old config on error; else swap instances. */
  async reload(config?: Record<string, unknown>): Promise<ReloadResult> {
    if (this.reloading) return { ok: false, skipped: true };
    this.reloading = true;
    try {
      this.logProxy('INFO', 'reloading configuration');
      let cfg: SimConfig;
      try {
        const source =
          config ?? (this.options.configFile ? await readFile(this.options.configFile, 'utf8') : this.inlineConfig);
        cfg = loadConfig(source);
      } catch (err) {
        const message = (err as Error).message;
        this.logProxy('WARN', `failed to reload config: ${message}`);
        return { ok: false, error: message };
      }
      if (config) this.inlineConfig = config;
      const old = this.instance;
      const next = this.createInstance(cfg);
      this.instance = next;
      await old.close();
      this.logProxy('INFO', 'configuration reloaded');
      const timer = setTimeout(() => {
        this.timers.delete(timer);
        next.emitModelStatus();
      }, this.options.reloadStatusDelayMs ?? 3000);
      timer.unref();
      this.timers.add(timer);
      return { ok: true };
    } finally {
      this.reloading = false;
    }
  }

  log(source: LogSourceId, line: string): void {
    const text = line.endsWith('\n') ? line : `${line}\n`;
    if (source === 'proxy') this.proxyLog.write(text);
    else if (source === 'upstream') this.upstreamLog.write(text);
    else {
      const id = this.resolveLocal(source);
      this.instance.modelLog(id, text);
    }
    this.changes.notify();
  }

  logChunk(source: 'proxy' | 'upstream', text: string): void {
    (source === 'proxy' ? this.proxyLog : this.upstreamLog).write(text);
    this.changes.notify();
  }

  logHistory(source: LogSourceId | 'combined'): string {
    if (source === 'combined') return this.muxLog.history().toString('utf8');
    if (source === 'proxy') return this.proxyLog.history().toString('utf8');
    if (source === 'upstream') return this.upstreamLog.history().toString('utf8');
    return this.instance.modelLogs.get(this.resolveLocal(source))?.history().toString('utf8') ?? '';
  }

  clearReceived(): void {
    this.recorder.clear();
  }

  waitFor<T>(check: () => T | undefined | null | false, timeoutMs = 2000): Promise<T> {
    return this.changes.waitFor(check, timeoutMs);
  }

  waitForRequest(pred: (r: RecordedRequest) => boolean = () => true, timeoutMs = 2000): Promise<RecordedRequest> {
    return this.changes.waitFor(() => this.received.find(pred), timeoutMs, 'a matching request');
  }

  waitForAbort(pred: (r: RecordedRequest) => boolean = () => true, timeoutMs = 2000): Promise<RecordedRequest> {
    return this.changes.waitFor(() => this.received.find((r) => r.aborted && pred(r)), timeoutMs, 'an aborted request');
  }

  waitForClosed(pred: (r: RecordedRequest) => boolean = () => true, timeoutMs = 2000): Promise<RecordedRequest> {
    return this.changes.waitFor(
      () => this.received.find((r) => r.closedAt !== undefined && pred(r)),
      timeoutMs,
      'a closed request',
    );
  }

  async waitForState(model: string, state: ModelState, timeoutMs = 2000): Promise<void> {
    await this.changes.waitFor(() => this.state(model) === state, timeoutMs, `${model} to be ${state}`);
  }

  waitForLog(source: LogSourceId | 'combined', match: string | RegExp, timeoutMs = 2000): Promise<string> {
    return this.changes.waitFor(
      () => {
        const text = this.logHistory(source);
        if (typeof match === 'string') return text.includes(match) ? match : undefined;
        return match.exec(text)?.[0];
      },
      timeoutMs,
      `log ${String(match)} in ${source}`,
    );
  }

  async close(): Promise<void> {
    if (this.closing.signal.aborted) return;
    this.closing.abort();
    this.watcher?.stop();
    for (const t of this.timers) clearTimeout(t);
    for (const r of this.received) if (r.closedAt === undefined) r.cutByServer = true;
    const closed = new Promise<void>((resolve) => this.server.close(() => resolve()));
    this.server.closeAllConnections();
    await Promise.all([closed, this.instance.close()]);
  }
}

function readBody(req: IncomingMessage): Promise<Buffer> {
  return new Promise((resolve) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => resolve(Buffer.concat(chunks)));
    // A client that hangs up mid-body still gets recorded (with what arrived).
    req.on('error', () => resolve(Buffer.concat(chunks)));
    req.on('close', () => resolve(Buffer.concat(chunks)));
  });
}

/** Client IP as in log.go: first X-Forwarded-For entry, else X-Real-IP, else the socket. */
function clientIp(req: IncomingMessage): string {
  const xff = req.headers['x-forwarded-for'];
  const first = (Array.isArray(xff) ? xff[0] : xff)?.split(',')[0]?.trim();
  if (first) return first;
  const real = req.headers['x-real-ip'];
  if (typeof real === 'string' && real.trim()) return real.trim();
  return (req.socket.remoteAddress ?? '').replace(/^::ffff:/, '');
}

/** Preflights get 204 before auth and before the mux, on any path (auth.go:64-83). */
function corsPreflight(req: IncomingMessage, res: ServerResponse): void {
  const requested = req.headers['access-control-request-headers'];
  const allowHeaders =
    typeof requested === 'string' && requested.trim() !== ''
      ? requested.replace(/[^A-Za-z0-9\-_, ]/g, '')
      : 'Content-Type, Authorization, Accept, X-Requested-With';
  res.writeHead(204, {
    'Access-Control-Allow-Origin': '*',
    'Access-Control-Allow-Methods': 'GET, POST, PUT, PATCH, DELETE, OPTIONS',
    'Access-Control-Allow-Headers': allowHeaders,
    'Access-Control-Max-Age': '86400',
  });
  res.end();
}

function byteLength(chunk: unknown): number {
  if (chunk === undefined || chunk === null || typeof chunk === 'function') return 0;
  if (typeof chunk === 'string') return Buffer.byteLength(chunk);
  if (chunk instanceof Uint8Array) return chunk.length;
  return 0;
}

function safeDecode(s: string): string {
  try {
    return decodeURIComponent(s);
  } catch {
    return s;
  }
}
