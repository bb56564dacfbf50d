/**
 * The upstream for `GATEHOUSE_UPSTREAM_KIND`: a llama-swap or a llama-server client when the
 * kind is set, or, for `auto`, an upstream that finds out first (`detect.ts`). It asks at start
 * and again with backoff until it knows (the upstream may start after Gatehouse); until then
 * every call asks once more and fails with the reason, so nothing is guessed.
 */
import { UpstreamError } from './errors.js';
import { detectUpstreamKind, type Detection } from './detect.js';
import { createLlamaServerClient } from './llama-server-client.js';
import { createLlamaSwapClient } from './llama-swap-client.js';
import type { Upstream, UpstreamKind } from './upstream.js';

export type UpstreamKindSetting = UpstreamKind | 'auto';

export type DetectionReport = { detected: Detection } | { failed: UpstreamError; attempt: number; retryInMs: number };

export interface OpenUpstreamOptions {
  kind: UpstreamKindSetting;
  baseUrl: URL;
  apiKey?: string;
  timeoutMs?: number;
  /** Told each detection attempt's result (`auto` only). */
  onDetection?: (report: DetectionReport) => void;
  /** Backoff between detection attempts (default 1 s doubling to 30 s). */
  retryMinMs?: number;
  retryMaxMs?: number;
}

export function openUpstream(options: OpenUpstreamOptions): Upstream {
  if (options.kind === 'auto') return new DetectingUpstream(options);
  return clientFor(options.kind, options);
}

function clientFor(kind: UpstreamKind, options: OpenUpstreamOptions): Upstream {
  const common = { baseUrl: options.baseUrl, apiKey: options.apiKey, timeoutMs: options.timeoutMs };
  return kind === 'llama-swap' ? createLlamaSwapClient(common) : createLlamaServerClient(common);
}

class DetectingUpstream implements Upstream {
  readonly baseUrl: URL;
  readonly #options: OpenUpstreamOptions;
  #client: Upstream | undefined;
  #asking: Promise<Upstream> | undefined;
  #timer: NodeJS.Timeout | undefined;
  #closed = false;
  #attempts = 0;

  constructor(options: OpenUpstreamOptions) {
    this.baseUrl = options.baseUrl;
    this.#options = options;
    this.#keepAsking(options.retryMinMs ?? 1000);
  }

  get kind(): UpstreamKind | null {
    return this.#client?.kind ?? null;
  }

  /** The client, once the kind is known; asks once more when it is not. */
  #resolve(): Promise<Upstream> {
    if (this.#client) return Promise.resolve(this.#client);
    this.#asking ??= detectUpstreamKind(this.#options, { timeoutMs: this.#options.timeoutMs })
      .then(
        (detection) => {
          if (!this.#client) {
            this.#client = clientFor(detection.kind, this.#options);
            this.#options.onDetection?.({ detected: detection });
          }
          return this.#client;
        },
        (error: unknown) => {
          throw asUpstreamError(error);
        },
      )
      .finally(() => (this.#asking = undefined));
    return this.#asking;
  }

  /** Background attempts until the kind is known, so the first dashboard need not wait for it. */
  #keepAsking(delayMs: number): void {
    const max = this.#options.retryMaxMs ?? 30_000;
    this.#resolve().then(
      () => undefined,
      (error: UpstreamError) => {
        if (this.#closed || this.#client) return;
        this.#attempts++;
        this.#options.onDetection?.({ failed: error, attempt: this.#attempts, retryInMs: delayMs });
        this.#timer = setTimeout(() => this.#keepAsking(Math.min(delayMs * 2, max)), delayMs);
        this.#timer.unref();
      },
    );
  }

  async health(opts?: Parameters<Upstream['health']>[0]) {
    try {
      return await (await this.#resolve()).health(opts);
    } catch (error) {
      return { ok: false, error: `cannot tell which upstream this is: ${asUpstreamError(error).message}` };
    }
  }

  version: Upstream['version'] = async (opts) => (await this.#resolve()).version(opts);
  models: Upstream['models'] = async (opts) => (await this.#resolve()).models(opts);
  running: Upstream['running'] = async (opts) => (await this.#resolve()).running(opts);
  activeProfilePins: Upstream['activeProfilePins'] = async (opts) => (await this.#resolve()).activeProfilePins(opts);
  unload: Upstream['unload'] = async (id, opts) => (await this.#resolve()).unload(id, opts);
  unloadAll: Upstream['unloadAll'] = async (opts) => (await this.#resolve()).unloadAll(opts);
  load: Upstream['load'] = async (id, opts) => (await this.#resolve()).load(id, opts);
  logStream: Upstream['logStream'] = async (source, opts) => (await this.#resolve()).logStream(source, opts);
  events: Upstream['events'] = async (opts) => (await this.#resolve()).events(opts);

  async close(): Promise<void> {
    this.#closed = true;
    clearTimeout(this.#timer);
    await this.#client?.close();
  }
}

function asUpstreamError(error: unknown): UpstreamError {
  if (error instanceof UpstreamError) return error;
  return new UpstreamError('unreachable', error instanceof Error ? error.message : String(error), { cause: error });
}
