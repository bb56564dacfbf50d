/**
 * Public types of the llama-swap simulator. Everything a test or the demo touches is declared
 * here; the implementation files import from this one.
 */

/** Process states; `stopped` never appears in `/running`. */
export type ModelState = 'stopped' | 'starting' | 'ready' | 'stopping';

/** Runtime behaviour switches. Mutate `sim.knobs` between requests; every request reads them anew. */
export interface Knobs {
  /** Time a model spends in `starting` before it becomes `ready`. */
  loadDelayMs: number;
  /** Time a model spends in `stopping` before it becomes `stopped`. */
  unloadDelayMs: number;
  /** Delay between sending response headers and the first SSE frame (or the non-stream body). */
  firstTokenDelayMs: number;
  /** Pace of SSE frames; 0 sends them back to back. */
  tokensPerSecond: number;
  /** Completion tokens generated per request (lowered by `max_tokens` & co. when smaller). */
  tokens: number;
  /** Cut the stream after this many SSE frames (no `[DONE]`); `null` = never. */
  failAfterChunks: number | null;
  /**
   * How a stream is cut (by `failAfterChunks`, an unload or a reload): `end` (the default)
   * finishes the chunked body cleanly without `[DONE]`, which is what llama-swap does when its
   * model server crashes (it recovers the ReverseProxy panic); `destroy` drops the socket, as a
   * gateway sees a crashed llama-swap itself.
   */
  failMode: 'destroy' | 'end';
  /** Delay before response headers on inference routes (after the model is ready). */
  headersDelayMs: number;
  /** Pause for `stallMs` after this many SSE frames; `null` = never. */
  stallAfterChunks: number | null;
  stallMs: number;
  /** `envelope` = current main (`{"error":{...}}`), `legacy` = v250 and older (`{"error":"..."}`). */
  errorShape: 'envelope' | 'legacy';
  /** Inference routes answer 502 with an empty body, like Go's ReverseProxy when llama-server died. */
  emptyBody502: boolean;
  /** API keys. `null` = use the config's `apiKeys`; `[]` = no auth at all. */
  apiKeys: string[] | null;
  /** Play an old llama-swap: no `/api/models/unload*`, no `/api/version` (plain-text mux 404). */
  legacyRoutes: boolean;
  /** `false` plays a llama-swap without `/api/events` (plain-text mux 404). */
  eventsRoute: boolean;
  /** When set, model starts fail after `loadDelayMs` with 500 `unspecific error: <loadError>`. */
  loadError: string | null;
  /** Requests routed to a peer get 502 `peer proxy error: ...`. */
  peerUnreachable: boolean;
  /** Body of `/api/version`. */
  version: { version: string; commit: string; build_date: string };
}

export interface SimulatorOptions {
  host?: string;
  port?: number;
  /** Inline config (same shape as llama-swap's config.yaml, already parsed). */
  config?: Record<string, unknown>;
  /** Path to a config.yaml; takes precedence over `config`. */
  configFile?: string;
  /** Poll `configFile` for changes. */
  watchConfig?: boolean;
  /** Poll period; llama-swap uses 2000. */
  watchIntervalMs?: number;
  knobs?: Partial<Knobs>;
  /** Delay of the `modelStatus` refresh after a successful reload (llama-swap: 3000). */
  reloadStatusDelayMs?: number;
  /** Keep at most this many `received` records, dropping the oldest (default 10 000). */
  recordLimit?: number;
}

/** One HTTP request the simulator received, updated in place while it is being answered. */
export interface RecordedRequest {
  /** 1-based arrival order. */
  seq: number;
  method: string;
  /** Path including the query string, exactly as sent. */
  path: string;
  /** Lower-cased header names; repeated headers joined with `, `. */
  headers: Record<string, string>;
  bodyBytes: number;
  /** Hex sha256 of the request body. */
  bodySha256: string;
  /** Model extracted as llama-swap does (or from the `/upstream/<model>` path); undefined if none. */
  model: string | undefined;
  /** Response status once headers were sent. */
  status: number | undefined;
  /** True when the client went away before the response finished. */
  aborted: boolean;
  /** True when the simulator itself cut the response (failAfterChunks, unload, reload, close). */
  cutByServer: boolean;
  /** performance.now() at arrival. */
  receivedAt: number;
  /** performance.now() when the connection/response closed (both normal and aborted). */
  closedAt: number | undefined;
  /** performance.now() when the response was completely handed to the OS. */
  finishedAt: number | undefined;
  /** Exact response body bytes written so far (capped at 8 MiB). */
  readonly sentBytes: Buffer;
}

/** One row of llama-swap's activity log (`GET /api/metrics/activity`). */
export interface ActivityEntry {
  id: number;
  timestamp: string;
  model: string;
  req_path: string;
  resp_content_type: string;
  resp_status_code: number;
  tokens: {
    cache_tokens: number;
    draft_tokens: number;
    draft_acc_tokens: number;
    input_tokens: number;
    output_tokens: number;
    prompt_per_second: number;
    tokens_per_second: number;
  };
  duration_ms: number;
  has_capture: boolean;
}

export interface RunningEntry {
  model: string;
  state: ModelState;
  cmd: string;
  proxy: string;
  ttl: number;
  name: string;
  description: string;
}

export type LogSourceId = 'proxy' | 'upstream' | (string & {});

export interface ReloadResult {
  ok: boolean;
  /** The loader error when `ok` is false. */
  error?: string;
  /** True when a reload was already running and this trigger was dropped. */
  skipped?: boolean;
}

export interface Simulator {
  readonly url: string;
  readonly port: number;
  readonly knobs: Knobs;
  /** Live list; cleared in place by `clearReceived()`. */
  readonly received: RecordedRequest[];
  /** State of a local model by ID or alias; undefined for unknown names. */
  state(model: string): ModelState | undefined;
  /** Same content as `GET /running`. */
  running(): RunningEntry[];
  /** llama-swap's activity log, oldest first (499 = the client left before any status). */
  activity(): readonly ActivityEntry[];
  /** Model loads since start; with one model at a time, every load after the first is a swap. */
  readonly loads: number;
  /** Load a model the way a request would (queueing, swapping); resolves when it is ready. */
  load(model: string): Promise<void>;
  /** Unload one model (ID or alias) or all; resolves when stopped. */
  unload(model?: string): Promise<void>;
  /** Reload now (re-reading `configFile`, or applying `config` / the inline config). */
  reload(config?: Record<string, unknown>): Promise<ReloadResult>;
  /** Append a line to a log: `proxy`, `upstream` or a model ID (which also feeds `upstream`). */
  log(source: LogSourceId, line: string): void;
  /** Append `text` as it is, without ending the line: a line may reach the log stream in pieces. */
  logChunk(source: 'proxy' | 'upstream', text: string): void;
  /** Current history text of a log (`combined` is the `/logs` mux log). */
  logHistory(source: LogSourceId | 'combined'): string;
  clearReceived(): void;
  /** Resolve with the predicate's truthy result, re-checking on every simulator change. */
  waitFor<T>(check: () => T | undefined | null | false, timeoutMs?: number): Promise<T>;
  waitForRequest(pred?: (r: RecordedRequest) => boolean, timeoutMs?: number): Promise<RecordedRequest>;
  waitForAbort(pred?: (r: RecordedRequest) => boolean, timeoutMs?: number): Promise<RecordedRequest>;
  /** Wait until a request matching `pred` has closed (finished, aborted or cut). */
  waitForClosed(pred?: (r: RecordedRequest) => boolean, timeoutMs?: number): Promise<RecordedRequest>;
  waitForState(model: string, state: ModelState, timeoutMs?: number): Promise<void>;
  waitForLog(source: LogSourceId | 'combined', match: string | RegExp, timeoutMs?: number): Promise<string>;
  /** Close the listener and every socket immediately. */
  close(): Promise<void>;
}
