/**
 * What Gatehouse asks of the server behind it, whichever kind it is: llama-swap
 * (`llama-swap-client.ts`) or llama.cpp's `llama-server` in router mode (`llama-server-client.ts`).
 * Both answer the same questions in llama-swap's shapes (`types.ts`); what a kind cannot do at all
 * (llama-server has no log or event stream) fails with `UpstreamError` kind `unsupported`.
 * `/v1` traffic does not go through here; `proxy/` forwards it to either unchanged.
 */
import type { CallOptions, StreamOptions } from './transport.js';
import type {
  ClosableStream,
  HealthResult,
  LlamaSwapEvent,
  LogSource,
  ModelEntry,
  RunningModel,
  UnloadResult,
  VersionInfo,
} from './types.js';

export type { CallOptions } from './transport.js';

export type UpstreamKind = 'llama-swap' | 'llama-server';

export interface LogStreamOptions extends StreamOptions {
  /** Skip the history burst (`?no-history`; any value counts). */
  noHistory?: boolean;
}

export interface Upstream {
  readonly baseUrl: URL;
  /** Which upstream this is; null while a detecting upstream has not found out yet. */
  readonly kind: UpstreamKind | null;
  /** `GET /health`; never throws. */
  health(opts?: CallOptions): Promise<HealthResult>;
  /** The upstream's version; `null` when it does not say. */
  version(opts?: CallOptions): Promise<VersionInfo | null>;
  /** The model catalogue (`/v1/models` entries; llama-server's carry `status` and `aliases`). */
  models(opts?: CallOptions): Promise<ModelEntry[]>;
  /** The models loaded or loading now. */
  running(opts?: CallOptions): Promise<RunningModel[]>;
  /** The pins of llama-swap's active profile; `{}` when none is active or the upstream has no profiles. */
  activeProfilePins(opts?: CallOptions): Promise<Readonly<Record<string, string>>>;
  /** Blocks until stopped. Old llama-swap: `{ unloaded: false, unsupported: true }`. Unknown model: throws 404. */
  unload(modelId: string, opts?: CallOptions): Promise<UnloadResult>;
  unloadAll(opts?: CallOptions): Promise<UnloadResult>;
  /** Resolves once the model is up (unknown model: throws 404). */
  load(modelId: string, opts?: CallOptions): Promise<{ status: number }>;
  logStream(source: LogSource, opts?: LogStreamOptions): Promise<ClosableStream<string>>;
  events(opts?: StreamOptions): Promise<ClosableStream<LlamaSwapEvent>>;
  close(): Promise<void>;
}
