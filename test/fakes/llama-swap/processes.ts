/**
 * Per-model process state machine and the FIFO scheduler in front of it:
 * `stopped → starting → ready → stopping → stopped`; a request for a model that is not loaded
 * waits until every conflicting model's in-flight requests finish (no pre-emption), then those
 * are stopped and the model started; requests for the same model share one load; at most
 * `concurrencyLimit` (default 10) requests per model counting queued ones, else 429; the same 429
 * past `globalConcurrencyLimit` (top level, 0 = off) requests over every model together.
 * Group rules: same group + `swap` → one member at a time; an `exclusive` group unloads every
 * non-`persistent` other group. Ungrouped models form `(default)` with swap + exclusive.
 */
import { type SimConfig, type ModelConfig, DEFAULT_GROUP } from './config.js';
import { SimHttpError } from './responses.js';
import { sleep } from './timing.js';
import type { Knobs, ModelState, RunningEntry } from './types.js';

export interface Lease {
  readonly model: string;
  /** Aborted when the process is stopped under the request (unload, reload, TTL). */
  readonly cut: AbortSignal;
  release(): void;
}

interface HeldLease extends Lease {
  abort(): void;
}

export interface ProcessHooks {
  knobs(): Knobs;
  onStateChange(model: string, state: ModelState): void;
  /** A model began to load (each one after the first, with one model at a time, is a swap). */
  onLoad?(model: string): void;
  proxyLog(level: 'INFO' | 'WARN', message: string): void;
  modelLog(model: string, text: string): void;
}

interface Proc {
  cfg: ModelConfig;
  state: ModelState;
  leases: Set<HeldLease>;
  loadAbort: AbortController | undefined;
  stopPromise: Promise<void> | undefined;
  ttlTimer: NodeJS.Timeout | undefined;
}

interface Waiter {
  model: string;
  resolve(lease: Lease): void;
  reject(err: SimHttpError): void;
  cleanup(): void;
}

export class ProcessManager {
  private readonly procs = new Map<string, Proc>();
  private queue: Waiter[] = [];
  private closed = false;

  constructor(
    private readonly cfg: SimConfig,
    private readonly hooks: ProcessHooks,
  ) {
    for (const [id, model] of cfg.models) {
      this.procs.set(id, {
        cfg: model,
        state: 'stopped',
        leases: new Set(),
        loadAbort: undefined,
        stopPromise: undefined,
        ttlTimer: undefined,
      });
    }
  }

  state(id: string): ModelState | undefined {
    return this.procs.get(id)?.state;
  }

  inflight(id: string): number {
    return this.procs.get(id)?.leases.size ?? 0;
  }

  running(): RunningEntry[] {
    return [...this.procs.values()]
      .filter((p) => p.state !== 'stopped')
      .map((p) => ({
        model: p.cfg.id,
        state: p.state,
        cmd: p.cfg.cmd,
        proxy: p.cfg.proxy,
        ttl: p.cfg.ttl,
        name: p.cfg.name,
        description: p.cfg.description,
      }))
      .sort((a, b) => (a.model < b.model ? -1 : a.model > b.model ? 1 : 0));
  }

  /** Wait for the model to be ready and hold it until `release()`. `signal` = the client left. */
  acquire(model: string, signal?: AbortSignal): Promise<Lease> {
    const proc = this.procs.get(model);
    if (!proc) return Promise.reject(new SimHttpError(404, 'no local server found for requested model'));
    if (this.closed) return Promise.reject(new SimHttpError(500, 'unspecific error: group is shutting down'));
    const queued = this.queue.filter((w) => w.model === model).length;
    const limit = this.cfg.globalConcurrencyLimit;
    const admittedEverywhere = this.queue.length + [...this.procs.values()].reduce((n, p) => n + p.leases.size, 0);
    if (proc.leases.size + queued >= proc.cfg.concurrencyLimit || (limit > 0 && admittedEverywhere >= limit)) {
      return Promise.reject(
        new SimHttpError(429, 'Too many requests', {
          headers: { 'Retry-After': '1' },
          alwaysJson: true,
          code: 'concurrency_limit',
        }),
      );
    }
    return new Promise<Lease>((resolve, reject) => {
      const onAbort = () => {
        // A client giving up leaves the queue; a load already under way is not cancelled.
        this.queue = this.queue.filter((w) => w !== waiter);
        reject(new SimHttpError(499, 'client closed request'));
        this.pump();
      };
      const waiter: Waiter = {
        model,
        resolve,
        reject,
        cleanup: () => signal?.removeEventListener('abort', onAbort),
      };
      signal?.addEventListener('abort', onAbort, { once: true });
      this.queue.push(waiter);
      this.pump();
    });
  }

  /** Stop the given models (all when omitted); resolves once they are stopped. */
  async unload(models?: string[]): Promise<void> {
    const targets = models
      ? models.map((m) => this.procs.get(m)).filter((p): p is Proc => p !== undefined)
      : [...this.procs.values()];
    const affected = new Set(targets.filter((p) => p.state !== 'stopped').map((p) => p.cfg.id));
    this.rejectWaiters((w) => affected.has(w.model), new SimHttpError(500, 'unspecific error: group: model unloaded'));
    await Promise.all(targets.map((p) => this.stop(p)));
  }

  /** Server-instance shutdown of a reload or close: fail waiters, stop everything. */
  async shutdown(): Promise<void> {
    this.closed = true;
    this.rejectWaiters(() => true, new SimHttpError(500, 'unspecific error: group is shutting down'));
    await Promise.all([...this.procs.values()].map((p) => this.stop(p)));
    for (const p of this.procs.values()) clearTimeout(p.ttlTimer);
  }

  private rejectWaiters(pred: (w: Waiter) => boolean, err: SimHttpError): void {
    const rejected = this.queue.filter(pred);
    this.queue = this.queue.filter((w) => !pred(w));
    for (const w of rejected) {
      w.cleanup();
      w.reject(err);
    }
  }

  /** Does loading `loading` require `other` to be stopped? */
  private evicts(loading: string, other: string): boolean {
    if (loading === other) return false;
    const a = this.procs.get(loading)!.cfg.groupId;
    const b = this.procs.get(other)!.cfg.groupId;
    const ga = this.cfg.groups.get(a) ?? this.cfg.groups.get(DEFAULT_GROUP)!;
    const gb = this.cfg.groups.get(b) ?? this.cfg.groups.get(DEFAULT_GROUP)!;
    if (a === b) return ga.swap;
    return ga.exclusive && !gb.persistent;
  }

  private pump(): void {
    if (this.closed) return;
    const pending: string[] = [];
    for (const w of [...this.queue]) {
      const proc = this.procs.get(w.model)!;
      const blocked = pending.some((m) => this.evicts(m, w.model));
      if (proc.state === 'ready' && !blocked) {
        this.queue = this.queue.filter((x) => x !== w);
        this.grant(proc, w);
        continue;
      }
      if (!blocked && proc.state === 'stopped' && !pending.includes(w.model)) this.progress(proc);
      pending.push(w.model);
    }
  }

  /** Move a stopped model towards `ready`: evict what conflicts once it is idle, then start. */
  private progress(proc: Proc): void {
    const conflicting = [...this.procs.values()].filter(
      (p) => p.state !== 'stopped' && this.evicts(proc.cfg.id, p.cfg.id),
    );
    if (conflicting.some((p) => p.state === 'starting' || p.state === 'stopping' || p.leases.size > 0)) return;
    if (conflicting.length > 0) {
      for (const p of conflicting) void this.stop(p);
      return;
    }
    void this.start(proc);
  }

  private grant(proc: Proc, w: Waiter): void {
    w.cleanup();
    clearTimeout(proc.ttlTimer);
    const cut = new AbortController();
    let released = false;
    const lease: HeldLease = {
      model: proc.cfg.id,
      cut: cut.signal,
      abort: () => cut.abort(),
      release: () => {
        if (released) return;
        released = true;
        proc.leases.delete(lease);
        if (proc.leases.size === 0) this.armTtl(proc);
        this.pump();
      },
    };
    proc.leases.add(lease);
    w.resolve(lease);
  }

  private armTtl(proc: Proc): void {
    clearTimeout(proc.ttlTimer);
    if (proc.cfg.ttl <= 0 || proc.state !== 'ready' || this.closed) return;
    proc.ttlTimer = setTimeout(() => {
      if (proc.state !== 'ready' || proc.leases.size > 0) return;
      this.hooks.proxyLog('INFO', `<${proc.cfg.id}> Unloading model, TTL of ${proc.cfg.ttl}s reached`);
      void this.stop(proc);
    }, proc.cfg.ttl * 1000);
    proc.ttlTimer.unref();
  }

  private setState(proc: Proc, state: ModelState): void {
    proc.state = state;
    this.hooks.onStateChange(proc.cfg.id, state);
  }

  private async start(proc: Proc): Promise<void> {
    const knobs = this.hooks.knobs();
    const id = proc.cfg.id;
    proc.loadAbort = new AbortController();
    this.setState(proc, 'starting');
    this.hooks.onLoad?.(id);
    this.hooks.proxyLog('INFO', `<${id}> Executing start command: ${proc.cfg.cmd}`);
    const port = new URL(proc.cfg.proxy).port || '80';
    const modelPath = /-m\s+(\S+)/.exec(proc.cfg.cmd)?.[1] ?? `/models/${id}.gguf`;
    this.hooks.modelLog(
      id,
      `build: 6000 (simulated) with cc (GCC) for x86_64-linux-gnu\nllama_model_loader: loaded meta data ` +
        `from ${modelPath}\n`,
    );
    const completed = await sleep(knobs.loadDelayMs, proc.loadAbort.signal);
    proc.loadAbort = undefined;
    if (!completed) return; // stop() took over
    const failure = proc.cfg.cmd === '' ? 'empty command' : this.hooks.knobs().loadError;
    if (failure) {
      this.hooks.modelLog(id, `error: ${failure}\n`);
      this.hooks.proxyLog('WARN', `<${id}> failed to start: ${failure}`);
      this.setState(proc, 'stopped');
      this.rejectWaiters((w) => w.model === id, new SimHttpError(500, `unspecific error: ${failure}`));
      this.pump();
      return;
    }
    this.hooks.modelLog(
      id,
      `main: server is listening on http://127.0.0.1:${port} - starting the main loop\nsrv  update_slots: all slots are idle\n`,
    );
    this.hooks.proxyLog('INFO', `<${id}> Health check passed on ${proc.cfg.proxy}/health`);
    this.setState(proc, 'ready');
    this.pump();
  }

  private stop(proc: Proc): Promise<void> {
    if (proc.stopPromise) return proc.stopPromise;
    if (proc.state === 'stopped') return Promise.resolve();
    proc.stopPromise = (async () => {
      clearTimeout(proc.ttlTimer);
      proc.loadAbort?.abort();
      this.hooks.proxyLog('INFO', `<${proc.cfg.id}> Stopping process, current state: ${proc.state}`);
      this.setState(proc, 'stopping');
      // In-flight requests are cut, not drained.
      for (const lease of proc.leases) lease.abort();
      await sleep(this.hooks.knobs().unloadDelayMs);
      this.hooks.modelLog(proc.cfg.id, 'srv    operator(): operator(): cleaning up before exit...\n');
      this.setState(proc, 'stopped');
      this.hooks.proxyLog('INFO', `<${proc.cfg.id}> Process stopped`);
      proc.stopPromise = undefined;
      this.pump();
    })();
    return proc.stopPromise;
  }
}
