/**
 * Did llama-swap take the saved config? llama-swap has no API for that: a reload shows up only
 * in its proxy log (docs/llama-swap.md, "Reload"): `reloading configuration`, then `configuration reloaded` or
 * `failed to reload config: <err>` / `failed to build new server during reload`.
 *
 * A watcher subscribes to `/logs/stream/proxy` (without history) *before* the file is written,
 * so no line can slip between the write and the subscription. A successful reload shuts the
 * old server down, which closes every log stream *before* `configuration reloaded` is
 * written; the watcher then reconnects with history and finds its place again by the last text
 * it had seen (falling back to the last `reloading configuration` line in the history).
 */
import type { ReloadState, ReloadStatus } from '../admin-api/types.js';
import { describeError } from './config-file.js';

export type { ReloadState, ReloadStatus };

export interface ProxyLogStream extends AsyncIterable<string> {
  close(): void;
}

/** The one thing needed from the llama-swap client (`LlamaSwapClient.logStream`). */
export interface ProxyLogSource {
  logStream(
    source: 'proxy',
    options: { noHistory?: boolean; signal?: AbortSignal; timeoutMs?: number },
  ): Promise<ProxyLogStream>;
}

export interface ReloadWatcherOptions {
  source: ProxyLogSource;
  /** No `reloading configuration` this long after the save: `unknown` (llama-swap polls every 2 s). */
  startTimeoutMs?: number;
  /** A started reload with no outcome this long after it started: `unknown` (stopping models may take 30 s). */
  finishTimeoutMs?: number;
  /** Deadline for llama-swap to answer the log subscription. */
  connectTimeoutMs?: number;
  now?: () => number;
}

const START = /reloading configuration\s*$/;
const RELOADED = /configuration reloaded\s*$/;
const FAILED_LOAD = /failed to reload config:\s*(.*)$/;
const FAILED_BUILD = /failed to build new server during reload:?\s*(.*)$/;
const ANCHOR_CHARS = 2048;
/** llama-swap sends its history in one write; what arrives after this long is live. */
const HISTORY_SETTLE_MS = 400;

export class ReloadWatcher {
  private readonly abort = new AbortController();
  private readonly now: () => number;
  private readonly startTimeoutMs: number;
  private readonly finishTimeoutMs: number;
  private readonly connectTimeoutMs: number;
  private current: ReloadStatus;
  private begun = false;
  private reloading = false;
  private partial = '';
  /** The last text seen, to find our place in the history after a reconnect. */
  private seen = '';
  private timer: NodeJS.Timeout | undefined;
  private settle!: () => void;
  private readonly settledPromise = new Promise<void>((resolve) => (this.settle = resolve));

  private constructor(
    private readonly source: ProxyLogSource,
    options: ReloadWatcherOptions,
  ) {
    this.now = options.now ?? Date.now;
    this.startTimeoutMs = options.startTimeoutMs ?? 15_000;
    this.finishTimeoutMs = options.finishTimeoutMs ?? 75_000;
    this.connectTimeoutMs = options.connectTimeoutMs ?? 3_000;
    this.current = {
      state: 'pending',
      message: 'Waiting for llama-swap to notice the change (it checks the file every 2 s).',
      savedAt: null,
      settledAt: null,
    };
  }

  /**
   * Subscribes to the proxy log before the write. Never throws: without a subscription the
   * watcher reports `unknown` once the save happened.
   */
  static async arm(options: ReloadWatcherOptions): Promise<ReloadWatcher> {
    const watcher = new ReloadWatcher(options.source, options);
    try {
      const stream = await options.source.logStream('proxy', {
        noHistory: true,
        signal: watcher.abort.signal,
        timeoutMs: watcher.connectTimeoutMs,
      });
      void watcher.run(stream);
    } catch (error) {
      watcher.finish(
        'unknown',
        `Could not watch llama-swap's proxy log (${describeError(error)}), so the outcome of the reload is ` +
          `unknown; look for "configuration reloaded" in llama-swap's log.`,
      );
    }
    return watcher;
  }

  /** An `unknown` status for when there is no way to watch (no llama-swap client). */
  static unwatched(savedAt: Date, message: string): ReloadStatus {
    return { state: 'unknown', message, savedAt: savedAt.toISOString(), settledAt: savedAt.toISOString() };
  }

  /**
   * The write is about to start: lines from now on are about this save. Not at `begin`: the
   * new file is visible from its rename, and llama-swap may poll, reload and log its outcome
   * while the write still syncs the directory (seen on a loaded CI machine).
   */
  writing(): void {
    this.begun = true;
  }

  /** The file was written at `savedAt`; the start timeout runs from here. */
  begin(savedAt: Date): void {
    this.begun = true;
    this.current = { ...this.current, savedAt: savedAt.toISOString() };
    if (this.current.state === 'pending') this.arm(this.startTimeoutMs, () => this.startTimedOut());
  }

  /** The save did not happen. */
  cancel(): void {
    this.close();
  }

  status(): ReloadStatus {
    return { ...this.current };
  }

  /** Resolves when the state is no longer `pending`, or after `ms`. */
  async waitSettled(ms: number): Promise<ReloadStatus> {
    if (this.current.state !== 'pending' || ms <= 0) return this.status();
    let timer: NodeJS.Timeout | undefined;
    await Promise.race([this.settledPromise, new Promise<void>((resolve) => (timer = setTimeout(resolve, ms)))]);
    clearTimeout(timer);
    return this.status();
  }

  close(): void {
    clearTimeout(this.timer);
    this.abort.abort();
    if (this.current.state === 'pending')
      this.finish('unknown', 'A newer save replaced this one before llama-swap reported on it.');
  }

  // ---- internals --------------------------------------------------------------------------

  private async run(first: ProxyLogStream): Promise<void> {
    let stream: ProxyLogStream | undefined = first;
    let retryMs = 250;
    let replaying = false;
    while (!this.abort.signal.aborted && this.current.state === 'pending') {
      try {
        if (!stream) {
          stream = await this.source.logStream('proxy', {
            signal: this.abort.signal,
            timeoutMs: this.connectTimeoutMs,
          });
          replaying = true;
        }
        retryMs = 250;
        await this.consume(stream, replaying);
      } catch {
        // llama-swap unreachable for a moment (restarting?): retry until a timeout decides.
      }
      stream?.close();
      stream = undefined;
      if (this.abort.signal.aborted || this.current.state !== 'pending') break;
      await sleep(retryMs, this.abort.signal);
      retryMs = Math.min(retryMs * 2, 2_000);
    }
  }

  /** Reads one stream to its end. With `replay`, the first burst is history to be aligned first. */
  private async consume(stream: ProxyLogStream, replay: boolean): Promise<void> {
    let history = replay ? '' : undefined;
    let historyTimer: NodeJS.Timeout | undefined;
    const flushHistory = () => {
      if (history === undefined) return;
      const text = history;
      history = undefined;
      const { offset, aligned } = this.resumeOffset(text);
      // Aligned on the last text seen: a line cut by the disconnect continues in the history.
      if (!aligned) this.partial = '';
      this.feed(text.slice(offset));
    };
    try {
      for await (const chunk of stream) {
        if (history === undefined) {
          this.feed(chunk);
        } else {
          history += chunk;
          historyTimer ??= setTimeout(() => {
            flushHistory();
          }, HISTORY_SETTLE_MS);
        }
        if (this.current.state !== 'pending') return;
      }
    } finally {
      clearTimeout(historyTimer);
      flushHistory();
    }
  }

  /** Where new text starts in a history: after the last text we saw, else at our reload's start line. */
  private resumeOffset(history: string): { offset: number; aligned: boolean } {
    if (this.seen !== '') {
      const at = history.lastIndexOf(this.seen);
      if (at >= 0) return { offset: at + this.seen.length, aligned: true };
    }
    const lines = history.split('\n');
    let offset = history.length;
    let position = 0;
    for (const line of lines) {
      if (START.test(line.replace(/\r$/, ''))) offset = position;
      position += line.length + 1;
    }
    // No start line at all: nothing in this history is known to be about our save.
    return { offset, aligned: false };
  }

  private feed(text: string): void {
    if (text === '') return;
    this.seen = (this.seen + text).slice(-ANCHOR_CHARS);
    const lines = (this.partial + text).split('\n');
    this.partial = lines.pop() ?? '';
    for (const line of lines) this.onLine(line.replace(/\r$/, ''));
  }

  private onLine(line: string): void {
    if (!this.begun || this.current.state !== 'pending') return;
    let match: RegExpExecArray | null;
    if (START.test(line)) {
      this.reloading = true;
      this.current = {
        ...this.current,
        message: 'llama-swap is reloading the config: it stops every running model first.',
      };
      this.arm(this.finishTimeoutMs, () =>
        this.finish(
          'unknown',
          `llama-swap started reloading but reported no outcome within ` +
            `${Math.round(this.finishTimeoutMs / 1000)} s; check its log.`,
        ),
      );
    } else if (RELOADED.test(line)) {
      this.finish(
        'reloaded',
        'llama-swap reloaded the config. Every model was stopped and loads again on its next request.',
      );
    } else if ((match = FAILED_LOAD.exec(line))) {
      this.finish('failed', `llama-swap refused the saved config and keeps running the previous one: ${match[1]}`);
    } else if ((match = FAILED_BUILD.exec(line))) {
      const why = match[1] ? `: ${match[1]}` : '';
      this.finish(
        'failed',
        `llama-swap could not build a server from the saved config and keeps running the previous one${why}.`,
      );
    }
  }

  private startTimedOut(): void {
    if (this.reloading) return;
    this.finish(
      'unknown',
      `llama-swap did not start a reload within ${Math.round(this.startTimeoutMs / 1000)} s. It reloads ` +
        `the file only when started with -watch-config (or on SIGHUP); restart it or send SIGHUP to apply ` +
        `the saved config.`,
    );
  }

  private arm(ms: number, onTimeout: () => void): void {
    clearTimeout(this.timer);
    this.timer = setTimeout(onTimeout, ms);
    this.timer.unref();
  }

  private finish(state: Exclude<ReloadState, 'pending'>, message: string): void {
    if (this.current.state !== 'pending') return;
    clearTimeout(this.timer);
    this.current = { ...this.current, state, message, settledAt: new Date(this.now()).toISOString() };
    this.abort.abort();
    this.settle();
  }
}

function sleep(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    const timer = setTimeout(done, ms);
    function done() {
      clearTimeout(timer);
      signal.removeEventListener('abort', done);
      resolve();
    }
    signal.addEventListener('abort', done, { once: true });
  });
}
