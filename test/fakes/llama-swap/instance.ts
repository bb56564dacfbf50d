/**
 * One "server instance" of llama-swap: everything a successful config reload throws away —
 * processes, per-model logs, `/api/events` and `/logs/stream` connections, in-flight tracking.
 * The proxy and upstream logs outlive it and belong to the simulator.
 */
import { setMaxListeners } from 'node:events';
import type { IncomingMessage } from 'node:http';
import { realModelName, type SimConfig } from './config.js';
import { LogMonitor } from './logs.js';
import { ProcessManager } from './processes.js';
import type { Knobs, ModelState } from './types.js';

export interface InstanceHooks {
  knobs(): Knobs;
  proxyLog(level: 'INFO' | 'WARN', message: string): void;
  upstreamLog: LogMonitor;
  notify(): void;
  onLoad(model: string): void;
}

export type EventListener = (type: string, data: unknown) => void;

export interface ModelStatusEntry {
  id: string;
  name: string;
  description: string;
  state: ModelState | '';
  unlisted: boolean;
  peerID: string;
  aliases?: string[];
}

export interface InflightHandle {
  readonly id: string;
  readonly cancelled: AbortSignal;
  done(): void;
}

interface InflightEntry {
  entry: Record<string, unknown>;
  startedAt: number;
  cancel: AbortController;
}

const REDACTED_HEADERS = new Set(['authorization', 'proxy-authorization', 'cookie', 'set-cookie', 'x-api-key']);

export class Instance {
  readonly processes: ProcessManager;
  readonly modelLogs = new Map<string, LogMonitor>();
  /** Aborted on shutdown: every long-lived stream of this instance ends. */
  private readonly shutdownController = new AbortController();
  readonly shutdownSignal = this.shutdownController.signal;
  private readonly listeners = new Set<EventListener>();
  private readonly inflight = new Map<string, InflightEntry>();
  private inflightSeq = 0;
  /** The active profile; a reload starts over from `hooks.on_startup.profile`. */
  activeProfile: string | null;

  constructor(
    readonly cfg: SimConfig,
    private readonly hooks: InstanceHooks,
  ) {
    // Every open log/event stream listens for the shutdown.
    setMaxListeners(0, this.shutdownSignal);
    this.activeProfile = cfg.startupProfile ?? null;
    for (const id of cfg.models.keys()) this.modelLogs.set(id, new LogMonitor());
    this.processes = new ProcessManager(cfg, {
      knobs: hooks.knobs,
      proxyLog: hooks.proxyLog,
      modelLog: (id, text) => this.modelLog(id, text),
      onStateChange: () => {
        this.emitModelStatus();
        hooks.notify();
      },
      onLoad: (model) => hooks.onLoad(model),
    });
  }

  /** Process output goes to the model's own monitor and to `upstream`. */
  modelLog(id: string, text: string): void {
    this.modelLogs.get(id)?.write(text);
    this.hooks.upstreamLog.write(text);
    this.hooks.notify();
  }

  state(name: string): ModelState | undefined {
    const id = realModelName(this.cfg, name);
    return id === undefined ? undefined : this.processes.state(id);
  }

  /** The `modelStatus` payload: local models sorted by ID, then peer models. */
  modelStatus(): ModelStatusEntry[] {
    const local = [...this.cfg.models.values()]
      .sort((a, b) => (a.id < b.id ? -1 : 1))
      .map((m) => {
        const entry: ModelStatusEntry = {
          id: m.id,
          name: m.name,
          description: m.description,
          state: this.processes.state(m.id) ?? 'stopped',
          unlisted: m.unlisted,
          peerID: '',
        };
        if (m.aliases.length > 0) entry.aliases = m.aliases;
        return entry;
      });
    const peers: ModelStatusEntry[] = [];
    for (const peer of this.cfg.peers.values()) {
      for (const modelId of peer.models) {
        peers.push({
          id: `${peer.id}/${modelId}`,
          name: '',
          description: '',
          state: '',
          unlisted: false,
          peerID: peer.id,
        });
      }
    }
    return [...local, ...peers];
  }

  onEvent(listener: EventListener): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  emit(type: string, data: unknown): void {
    for (const l of [...this.listeners]) l(type, data);
  }

  emitModelStatus(): void {
    this.emit('modelStatus', this.modelStatus());
  }

  inflightSnapshot(): Record<string, unknown>[] {
    const now = Date.now();
    return [...this.inflight.values()].map((i) => ({ ...i.entry, elapsed_ms: now - i.startedAt }));
  }

  /** Track a model-route request for the `inflight` events and `POST /api/inflight/{id}/cancel`. */
  trackInflight(req: IncomingMessage, model: string, path: string, remoteIp: string): InflightHandle {
    const id = String(++this.inflightSeq);
    const reqHeaders: Record<string, string> = {};
    for (const [k, v] of Object.entries(req.headers)) {
      if (v === undefined) continue;
      reqHeaders[k] = REDACTED_HEADERS.has(k) ? '[REDACTED]' : Array.isArray(v) ? v.join(', ') : v;
    }
    const startedAt = Date.now();
    const entry = {
      id,
      timestamp: new Date(startedAt).toISOString(),
      model,
      req_path: path,
      method: req.method ?? 'POST',
      req_headers: reqHeaders,
      remote_ip: remoteIp,
      resp_headers: {},
      resp_bytes: 0,
      elapsed_ms: 0,
    };
    const cancel = new AbortController();
    this.inflight.set(id, { entry, startedAt, cancel });
    this.emit('inflight', { operation: 'upsert', request: entry });
    return {
      id,
      cancelled: cancel.signal,
      done: () => {
        if (this.inflight.delete(id)) this.emit('inflight', { operation: 'remove', id });
      },
    };
  }

  setActiveProfile(name: string | null): void {
    this.activeProfile = name;
    this.emit('profileChanged', { active: name });
  }

  cancelInflight(id: string): boolean {
    const entry = this.inflight.get(id);
    if (!entry) return false;
    entry.cancel.abort();
    return true;
  }

  /** llama-swap's `Shutdown`: close streams, fail waiters, stop every model. */
  async close(): Promise<void> {
    this.shutdownController.abort();
    this.listeners.clear();
    await this.processes.shutdown();
  }
}
