/**
 * One shared view of llama-swap's state (reachability, version, models, proxy and upstream logs)
 * for every open dashboard, fed by one subscription: llama-swap's `/api/events`, or on a version
 * without it (404) slow polling plus its two log streams. Dashboards read it and watch its
 * changes, so opening more of them adds no request to llama-swap (whose log would show each).
 * README.md in this folder has the design.
 */
import type { Logger } from 'pino';
import type { LiveEventMap, LiveGapKind, LiveUpstream, ModelList, UpstreamLinkState } from '../admin-api/types.js';
import { UpstreamError } from '../management-client/errors.js';
import type { Upstream } from '../management-client/upstream.js';
import type { LlamaSwapEvent } from '../management-client/types.js';
import { abortableWait } from './abortable-wait.js';
import { ModelTracker } from './model-tracker.js';
import { TextHistory } from './text-history.js';
import { redactSecrets } from '../core/redact-secrets.js';
import { describeUpstreamError } from './upstream-reason.js';

export type UpstreamLogSource = 'proxy' | 'upstream';

/** What a watcher hears: the `/api/live` events that concern llama-swap. */
export type ViewEvent =
  | { name: 'upstream'; data: LiveEventMap['upstream'] }
  | { name: 'models'; data: LiveEventMap['models'] }
  | { name: 'history'; data: { source: UpstreamLogSource; text: string } }
  | { name: 'log'; data: { source: UpstreamLogSource; text: string } }
  | { name: 'gap'; data: { source: UpstreamLogSource | null; kind: LiveGapKind; reason: string } };

export interface ViewSnapshot {
  upstream: LiveUpstream;
  /** Null until llama-swap was first asked. */
  models: ModelList | null;
  logs: Record<UpstreamLogSource, string>;
}

export interface UpstreamViewOptions {
  client: Upstream;
  logger?: Logger;
  /** How often the model list is read when llama-swap has no `/api/events` (default 10 s). */
  pollMs?: number;
  /** Reconnect backoff (default 250 ms doubling to 5 s). */
  retryMinMs?: number;
  retryMaxMs?: number;
  /** Failed attempts in a row after which `reconnecting` becomes `unavailable` (default 3). */
  failuresBeforeUnavailable?: number;
  /** How long llama-swap is still followed after the last watcher left (default 5 min). */
  lingerMs?: number;
  /** Deadline for a stream's response headers (default 10 s). */
  connectTimeoutMs?: number;
  /** Characters kept per log (default 256 KiB). */
  historyChars?: number;
}

/** Longest pause between attempts that llama-swap answered with an error. */
const ANSWERED_RETRY_MAX_MS = 60_000;
const RESTART_REASON = 'llama-swap restarted its event stream (a config reload does this).';
const BACK_REASON = 'llama-swap is reachable again.';

export class UpstreamView {
  readonly #client: Upstream;
  readonly #logger: Logger | undefined;
  readonly #opts: Required<Omit<UpstreamViewOptions, 'client' | 'logger'>>;
  readonly #listeners = new Set<(event: ViewEvent) => void>();
  readonly #logs: Record<UpstreamLogSource, TextHistory>;
  readonly #wait = abortableWait();
  #upstream: LiveUpstream;
  readonly #models: ModelTracker;
  #watchers = 0;
  #run: AbortController | undefined;
  #linger: NodeJS.Timeout | undefined;
  #settled!: Promise<void>;
  #settle!: () => void;
  /** What the current connection still waits for before the view counts as read. */
  readonly #awaiting = new Set<'list' | UpstreamLogSource>();

  constructor(options: UpstreamViewOptions) {
    this.#client = options.client;
    this.#logger = options.logger;
    this.#opts = {
      pollMs: options.pollMs ?? 10_000,
      retryMinMs: options.retryMinMs ?? 250,
      retryMaxMs: options.retryMaxMs ?? 5_000,
      failuresBeforeUnavailable: options.failuresBeforeUnavailable ?? 3,
      lingerMs: options.lingerMs ?? 5 * 60_000,
      connectTimeoutMs: options.connectTimeoutMs ?? 10_000,
      historyChars: options.historyChars ?? 256 * 1024,
    };
    this.#models = new ModelTracker(options.client, (models) => this.#emit({ name: 'models', data: models }));
    this.#logs = {
      proxy: new TextHistory(this.#opts.historyChars),
      upstream: new TextHistory(this.#opts.historyChars),
    };
    this.#upstream = {
      state: 'connecting',
      mode: null,
      reachable: false,
      url: options.client.baseUrl.origin,
      kind: options.client.kind,
      version: null,
      error: null,
      logsUnavailable: null,
    };
    this.#resetSettled();
  }

  /** Watchers now following llama-swap through this view (open dashboard streams). */
  get watchers(): number {
    return this.#watchers;
  }

  snapshot(): ViewSnapshot {
    return {
      upstream: this.#upstream,
      models: this.#models.list,
      logs: { proxy: this.#logs.proxy.text(), upstream: this.#logs.upstream.text() },
    };
  }

  /** Follows llama-swap while at least one watcher is subscribed; returns the unsubscribe. */
  watch(listener: (event: ViewEvent) => void): () => void {
    this.#listeners.add(listener);
    this.#watchers++;
    clearTimeout(this.#linger);
    this.#start();
    let done = false;
    return () => {
      if (done) return;
      done = true;
      this.#listeners.delete(listener);
      this.#watchers--;
      if (this.#watchers === 0) this.#lingerThenStop();
    };
  }

  /** The current state, once llama-swap has been asked at least once since following began. */
  async current(timeoutMs = 15_000): Promise<ViewSnapshot> {
    this.#start();
    if (this.#watchers === 0) this.#lingerThenStop();
    await bounded(this.#settled, timeoutMs);
    return this.snapshot();
  }

  /** Reads the model list again now (after a load, an unload, a config save). */
  async refresh(): Promise<void> {
    if (!this.#run) {
      await this.current();
      return;
    }
    if (this.#upstream.mode === 'polling') this.#wait.wake();
    await this.#sync(false).catch(() => undefined);
  }

  close(): void {
    clearTimeout(this.#linger);
    this.#run?.abort();
    this.#run = undefined;
  }

  // ---- following ----------------------------------------------------------------------------

  #start(): void {
    if (this.#run) return;
    const run = new AbortController();
    this.#run = run;
    void this.#follow(run.signal).catch((error: unknown) => {
      this.#logger?.error({ err: error }, 'following llama-swap failed');
    });
  }

  #lingerThenStop(): void {
    clearTimeout(this.#linger);
    this.#linger = setTimeout(() => {
      if (this.#watchers > 0) return;
      this.close();
      this.#resetSettled();
    }, this.#opts.lingerMs);
    this.#linger.unref();
  }

  #resetSettled(): void {
    this.#settled = new Promise((resolve) => (this.#settle = resolve));
  }

  async #follow(signal: AbortSignal): Promise<void> {
    let failures = 0;
    let delay = this.#opts.retryMinMs;
    let everLive = false;
    while (!signal.aborted) {
      let stream;
      try {
        stream = await this.#client.events({ signal, timeoutMs: this.#opts.connectTimeoutMs });
      } catch (error) {
        if (signal.aborted) return;
        // An older llama-swap (no route) or llama-server (no event stream at all): read by polling.
        if (
          error instanceof UpstreamError &&
          (error.kind === 'unsupported' || (error.kind === 'http' && error.routeMissing))
        ) {
          await this.#pollInstead(signal);
          return;
        }
        failures++;
        this.#failed(error, failures, everLive);
        await this.#wait(delay, signal);
        // A refusal (401, 500) is a line in llama-swap's log each time: those retries slow down further.
        const answered = error instanceof UpstreamError && error.kind === 'http';
        delay = Math.min(delay * 2, answered ? ANSWERED_RETRY_MAX_MS : this.#opts.retryMaxMs);
        continue;
      }
      const wasLost = this.#upstream.state === 'reconnecting' || this.#upstream.state === 'unavailable';
      if (everLive) this.#gap(null, wasLost ? 'back' : 'restart', wasLost ? BACK_REASON : RESTART_REASON);
      failures = 0;
      everLive = true;
      this.#setUpstream({ state: 'live', mode: 'events', kind: this.#client.kind, reachable: true, error: null });
      // llama-swap sends each log's whole history first: it is joined to what is held.
      const fresh = new Set<UpstreamLogSource>(['proxy', 'upstream']);
      this.#expect('list', 'proxy', 'upstream');
      void this.#sync(true).catch(() => undefined);
      const openedAt = Date.now();
      try {
        for await (const event of stream) this.#onEvent(event, fresh);
      } catch {
        // A broken stream is a lost one: the reconnect below says whether llama-swap is still there.
      }
      // A reload ends a long-lived stream and is followed at once; one that keeps ending backs off.
      if (Date.now() - openedAt < 1000) {
        await this.#wait(delay, signal);
        delay = Math.min(delay * 2, this.#opts.retryMaxMs);
      } else {
        delay = this.#opts.retryMinMs;
      }
    }
  }

  /**
   * Older llama-swap (no `/api/events`): the model list every `pollMs`, the logs as text streams.
   * llama-server: the model list only.
   */
  async #pollInstead(signal: AbortSignal): Promise<void> {
    this.#setUpstream({ mode: 'polling', kind: this.#client.kind });
    this.#expect('list');
    void this.#followLog('proxy', signal);
    void this.#followLog('upstream', signal);
    let failures = 0;
    let withVersion = true;
    let everLive = false;
    while (!signal.aborted) {
      try {
        await this.#sync(withVersion, true);
        withVersion = false;
        failures = 0;
        everLive = true;
      } catch (error) {
        failures++;
        withVersion = true;
        this.#failed(error, failures, everLive);
      }
      await this.#wait(failures > 0 ? Math.min(this.#opts.retryMaxMs, this.#opts.pollMs) : this.#opts.pollMs, signal);
    }
  }

  async #followLog(source: UpstreamLogSource, signal: AbortSignal): Promise<void> {
    let first = true;
    while (!signal.aborted) {
      try {
        const stream = await this.#client.logStream(source, {
          noHistory: !first,
          signal,
          timeoutMs: this.#opts.connectTimeoutMs,
        });
        if (!first)
          this.#gap(source, 'restart', 'llama-swap restarted its log stream; lines written meanwhile are missing.');
        let history = first;
        for await (const text of stream) {
          if (history) this.#history(source, text);
          else this.#appendLog(source, text);
          history = false;
        }
        first = false;
      } catch (error) {
        if (error instanceof UpstreamError && error.kind === 'unsupported') {
          this.#setUpstream({ logsUnavailable: error.message });
          this.#arrived(source);
          return;
        }
        // The model poll reports llama-swap's state; the log stream just tries again.
      }
      await this.#wait(this.#opts.retryMaxMs, signal);
    }
  }

  #onEvent(event: LlamaSwapEvent, fresh: Set<UpstreamLogSource>): void {
    if (event.type === 'modelStatus') return this.#models.status(event.data);
    if (event.type !== 'logData') return;
    const { source, data } = event.data;
    if (source !== 'proxy' && source !== 'upstream') return;
    if (fresh.delete(source)) {
      this.#history(source, data);
      this.#arrived(source);
    } else {
      this.#appendLog(source, data);
    }
  }

  #expect(...parts: Array<'list' | UpstreamLogSource>): void {
    this.#awaiting.clear();
    for (const part of parts) this.#awaiting.add(part);
  }

  #arrived(part: 'list' | UpstreamLogSource): void {
    this.#awaiting.delete(part);
    if (this.#awaiting.size === 0) this.#settle();
  }

  #history(source: UpstreamLogSource, raw: string): void {
    // llama-swap logs the paths it gets: a key pasted into one must not reach a viewer.
    const joined = this.#logs[source].rejoin(redactSecrets(raw));
    if (!joined.joined) this.#emit({ name: 'history', data: { source, text: this.#logs[source].text() } });
    else if (joined.added !== '') this.#emit({ name: 'log', data: { source, text: joined.added } });
  }

  #appendLog(source: UpstreamLogSource, raw: string): void {
    const text = redactSecrets(raw);
    this.#logs[source].append(text);
    this.#emit({ name: 'log', data: { source, text } });
  }

  // ---- the model list -----------------------------------------------------------------------

  /** Reads the model list (and the version once per connection); settles the first read. */
  async #sync(withVersion: boolean, rethrow = false): Promise<void> {
    try {
      const version = await this.#models.read(withVersion);
      this.#setUpstream({
        ...(version === undefined ? {} : { version }),
        reachable: true,
        error: null,
        state: 'live',
      });
    } catch (error) {
      // While the event stream is up it is the truth: a failed extra read keeps the list it has.
      const following = this.#upstream.mode === 'events' && this.#upstream.state === 'live';
      if (!following || !this.#models.list?.reachable) this.#models.unreachable(describeUpstreamError(error));
      if (rethrow) throw error;
    } finally {
      this.#arrived('list');
    }
  }

  // ---- state and events ---------------------------------------------------------------------

  #failed(error: unknown, failures: number, everLive: boolean): void {
    const reason = describeUpstreamError(error);
    const answered = error instanceof UpstreamError && error.kind === 'http';
    const wasLive = this.#upstream.state === 'live';
    const state: UpstreamLinkState =
      !everLive || failures >= this.#opts.failuresBeforeUnavailable ? 'unavailable' : 'reconnecting';
    if (wasLive) {
      this.#logger?.warn({ err: reason }, 'lost llama-swap');
      this.#gap(null, 'lost', reason);
    }
    this.#setUpstream({ state, reachable: answered, error: reason });
    this.#models.unreachable(reason);
    this.#settle();
  }

  #gap(source: UpstreamLogSource | null, kind: LiveGapKind, reason: string): void {
    this.#emit({ name: 'gap', data: { source, kind, reason } });
  }

  #setUpstream(change: Partial<LiveUpstream>): void {
    const next = { ...this.#upstream, ...change };
    if (JSON.stringify(next) === JSON.stringify(this.#upstream)) return;
    if (next.state === 'live' && this.#upstream.state !== 'live')
      this.#logger?.info({ mode: next.mode }, 'following llama-swap');
    this.#upstream = next;
    this.#emit({ name: 'upstream', data: next });
  }

  #emit(event: ViewEvent): void {
    for (const listener of this.#listeners) {
      try {
        listener(event);
      } catch (error) {
        this.#logger?.error({ err: error }, 'a live view watcher failed');
      }
    }
  }
}

function bounded(promise: Promise<void>, ms: number): Promise<void> {
  return new Promise((resolve) => {
    const timer = setTimeout(resolve, ms);
    void promise.then(() => {
      clearTimeout(timer);
      resolve();
    });
  });
}
