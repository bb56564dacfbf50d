/**
 * Shapes of llama-swap's own API (docs/llama-swap.md), as the gateway reads them. Fields llama-swap
 * omits when empty are optional; unknown extra fields are tolerated by every consumer.
 */

/** Process states of `/running`; `shutdown` only appears in older versions. */
export type ProcessState = 'stopped' | 'starting' | 'ready' | 'stopping' | 'shutdown';

/** One entry of `GET /running`. `cmd` is macro-expanded and may contain secrets: never log it. */
export interface RunningModel {
  model: string;
  state: ProcessState;
  cmd: string;
  proxy: string;
  ttl: number;
  name: string;
  description: string;
}

/** `meta.llamaswap.type` of a `/v1/models` entry. */
export type ModelEntryType = 'model' | 'alias' | 'peer' | 'selector' | 'profile';

/** `meta.llamaswap`: user `metadata` merged with llama-swap's internal keys (internal keys win). */
export interface LlamaSwapModelMeta {
  type?: ModelEntryType;
  /** `type: "model"` with aliases. */
  aliases?: string[];
  /** `type: "alias"`: the real model ID. */
  modelID?: string;
  /** `type: "peer"`. */
  peerID?: string;
  /** `type: "selector"`. */
  strategy?: string;
  targets?: string[];
  spillover?: unknown;
  [key: string]: unknown;
}

export interface ModelArchitecture {
  input_modalities?: string[];
  output_modalities?: string[];
  modality?: string;
}

export interface ModelCapabilityFlags {
  vision?: boolean;
  audio_transcriptions?: boolean;
  audio_speech?: boolean;
  image_generation?: boolean;
  image_to_image?: boolean;
  function_calling?: boolean;
  reranker?: boolean;
  [key: string]: boolean | undefined;
}

/** One entry of `GET /v1/models`. `created` is "now" on every call: do not diff on it. */
export interface ModelEntry {
  id: string;
  object: 'model';
  created: number;
  owned_by: string;
  name?: string;
  description?: string;
  architecture?: ModelArchitecture;
  capabilities?: ModelCapabilityFlags;
  supported_parameters?: string[];
  context_length?: number;
  meta?: { llamaswap?: LlamaSwapModelMeta; n_ctx?: number; [key: string]: unknown };
  /** `loaded` while starting, ready or stopping; peers are always `unloaded`. Absent before v250. */
  status?: { value: 'loaded' | 'unloaded' | (string & {}) };
  /** Fields newer llama-swap versions add. */
  [field: string]: unknown;
}

/** `GET /api/version`. */
export interface VersionInfo {
  version: string;
  commit: string;
  build_date: string;
}

export type UnloadResult =
  | { unloaded: true; via: 'api' | 'legacy-unload' }
  /** Old llama-swap without `POST /api/models/unload/{model}`: only "unload all" exists. */
  | { unloaded: false; unsupported: true; message: string };

/** Which log `/logs/stream` serves: `combined` is the default mux log (proxy lines by default). */
export type LogSource = 'proxy' | 'upstream' | 'combined' | { model: string };

/** `modelStatus` entries: local models sorted by ID, then peers with `state: ""`. */
export interface ModelStatusEntry {
  id: string;
  name: string;
  description: string;
  state: ProcessState | '';
  unlisted: boolean;
  peerID: string;
  aliases?: string[];
  capabilities?: Record<string, unknown>;
  context_length?: number;
}

export interface InflightRequestEntry {
  id: string;
  timestamp: string;
  model: string;
  req_path: string;
  method: string;
  req_headers: Record<string, string>;
  remote_ip: string;
  resp_headers: Record<string, string>;
  resp_bytes: number;
  elapsed_ms: number;
  metadata?: Record<string, string>;
}

export type InflightEvent =
  | { operation: 'snapshot'; requests: InflightRequestEntry[] }
  | { operation: 'upsert'; request: InflightRequestEntry }
  | { operation: 'remove'; id: string };

/** One `/api/events` message with its `data` already decoded twice. */
export type LlamaSwapEvent =
  | { type: 'modelStatus'; data: ModelStatusEntry[] }
  | { type: 'logData'; data: { source: 'proxy' | 'upstream'; data: string } }
  | { type: 'activity'; data: { id: number } }
  | { type: 'inflight'; data: InflightEvent }
  | { type: 'uiConfig'; data: Record<string, unknown> }
  | { type: 'profileChanged'; data: { active: string | null } }
  /** A type this client does not know yet (newer llama-swap). */
  | { type: 'unknown'; rawType: string; data: unknown };

export type HealthResult = { ok: boolean; status?: number; error?: string };

/** A long-lived stream: iterate it, or `close()` it (also ends the iteration). */
export interface ClosableStream<T> extends AsyncIterable<T> {
  close(): void;
}
