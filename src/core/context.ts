/**
 * The context of one `/v1` call, created by the route and handed down the chain in three parts
 * with one writer each: the request's facts, the steps' decisions, the outcome.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Readable } from 'node:stream';
import type { UpstreamTranslation } from './translation.js';
import type { WireFormat } from './wire-format.js';

/** A request body received whole before anything is forwarded (`proxy/request-body.ts`). */
export interface BodyHead {
  bytes: number;
  /** The whole body when it is held in memory; `undefined` when it was spooled to disk. */
  complete: Buffer[] | undefined;
  /** The first bytes of the body (all of it when in memory), for body capture. */
  start: Buffer[];
  /** What is forwarded: the chunks, a read stream of the spool file, or nothing. */
  body: Buffer | Buffer[] | Readable | null;
  /** Bytes received. */
  readonly received: () => number;
  /** Removes the spool file, if any (called when the call ends). */
  dispose(): void;
}

/** The model a call asks for, as llama-swap will read it (`proxy/request-model.ts`). */
export type ModelReading =
  | { status: 'found'; model: string }
  | { status: 'absent' }
  /** `guess`: what llama-swap most likely reads, for usage attribution only. */
  | { status: 'uncertain'; reason: string; guess?: string | undefined };

export type JsonKind = 'string' | 'number' | 'true' | 'false' | 'null' | 'object' | 'array';

/** One top-level member of a JSON body, as the request JSON reader saw it (`proxy/request-json.ts`). */
export interface JsonMember {
  kind: JsonKind;
  /**
   * gjson's `.String()` of the first occurrence: the unescaped text of a string, the literal of
   * a number or boolean, `''` for null; `undefined` for objects and arrays (not kept) and for a
   * string too long to keep or not valid UTF-8.
   */
  text: string | undefined;
  /** How many top-level members had this name (a valid object may repeat a key). */
  occurrences: number;
  /** A later occurrence had a different kind or text than the first. */
  conflicting: boolean;
}

/**
 * The models a caller may use: those on the key's own list and inside its owner's current
 * allowance, both checked at call time; an empty list allows every model.
 */
export interface ModelAllowance {
  key: readonly string[];
  /** The owning member's allowance as it is now; `[]` for keys of admins, the admin token or the CLI. */
  owner: readonly string[];
}

export interface CallerIdentity {
  /** `undefined` in open mode (no keys exist). */
  keyId: string | undefined;
  keyName: string | undefined;
  /** The person who owns the key; undefined for keys of nobody (CLI, admin token) and in open mode. */
  ownerId?: string | undefined;
  models: ModelAllowance;
  limits?: { rpm: number | null; tpm: number | null; concurrent: number | null } | undefined;
  /** The key may load and unload models (the `manage` scope); open mode counts as allowed. */
  manage?: boolean | undefined;
  /** The key's place in the admission queue (higher first); 0 without a key. */
  priority?: number | undefined;
  /** The key's budget per calendar period; undefined when it has none (store's `KeyBudget`). */
  budget?:
    | { tokens: number | null; requests: number | null; gpuSeconds: number | null; period: 'day' | 'week' | 'month' }
    | undefined;
}

/** Token counts a response carried, normalised (see `usage/token-fields.ts`). */
export interface ObservedTokens {
  /** Every prompt token, cached ones included; `null` when the response did not say. */
  input: number | null;
  output: number | null;
  /** The part of `input` served from a cache. */
  cached: number | null;
  /** `usage` object, llama.cpp `timings`, or generated frames counted (output only). */
  source: 'usage' | 'timings' | 'estimate';
  /** llama.cpp's `timings` prompt_ms + predicted_ms, when the response carried them. */
  gpuMs?: number;
}

/**
 * What the usage tap learned while a response streamed through. Read once the call is over;
 * the tap defers its parsing to these calls, so they cost nothing for calls nobody records.
 */
export interface UsageProbe {
  tokens(): ObservedTokens | undefined;
  /** First generated token (streams) or first body byte, ms after `startedAt`. */
  firstTokenMs(): number | undefined;
  /** The start of the response body, when body capture is on. */
  responseBody(): string | undefined;
}

/** What the request said: read once as it arrives, never written after. */
export interface CallRequest {
  readonly requestId: string;
  readonly format: WireFormat;
  readonly method: string;
  /** Path without the query string, API keys and `Bearer` values redacted: what is logged and stored. */
  readonly path: string;
  /** Path and query as received: what is forwarded, and what decisions about the path read. */
  readonly url: string;
  /** `performance.now()` at arrival. */
  readonly startedAt: number;
  readonly clientAddress: string;
  /** The scheme the client used: TLS, or `X-Forwarded-Proto` from a trusted proxy (`auth/proxy-trust.ts`). */
  readonly proto: 'http' | 'https';
  /** A trusted proxy's `X-Forwarded-For` chain, extended (not replaced) towards llama-swap. */
  readonly priorForwardedFor: string | undefined;
}

/**
 * A call's place in the admission queue, as the forwarder uses it. An object rather than
 * closures kept on the call: a closure over the queue step's scope held every call's objects
 * long enough to be promoted to the old generation (docs/decisions/0002).
 */
export interface QueuePlace {
  /**
   * Puts the call back in line after llama-swap answered 429, for at most the time it has left.
   * Resolves true once it may be sent again, false when its time is up.
   */
  requeue(retryAfterMs: number | undefined): Promise<boolean>;
  /** Ends a streaming call's keep-alive comments (`GATEHOUSE_SSE_KEEPALIVE`) once its answer starts. */
  stopKeepAlive(): void;
}

/** What the steps decided about the call; each fact is written by the one step that decides it. */
export interface CallDecisions {
  /** Set by `clientAuth`; `undefined` in open mode. */
  caller: CallerIdentity | undefined;
  /** The body, received whole by `readModel`. */
  body: BodyHead | undefined;
  /** The model as llama-swap will read it, with how certain that is (set by `readModel`). */
  modelReading: ModelReading | undefined;
  /** The model the call is attributed to in usage and logs (llama-swap's reading, or its best guess). */
  model: string | undefined;
  /** Top-level members of a JSON body read by `readModel` (`max_tokens`, `stream`...). */
  requestJson: ReadonlyMap<string, JsonMember> | undefined;
  /** The start of the request body, when body capture is on (`captureRequestBody`). */
  requestBody: (() => string | undefined) | undefined;
  /** Time the call waited in the admission queue, ms; undefined until it passed the queue. */
  queueMs: number | undefined;
  /** Set by the admission queue once the call has its turn. */
  queue: QueuePlace | undefined;
  /**
   * Set by the budget step: the key's use of its budget in the current period [start, end),
   * this call's reservation included (GPU time in ms). Read by the rate-limit headers.
   */
  budgetUse: { start: number; end: number; tokens: number; requests: number; gpuMs: number } | undefined;
  /** Set by a door that speaks another API (Ollama): llama-swap's path and the answer's translation. */
  translation: UpstreamTranslation | undefined;
}

/** Sent with every `/v1` answer whose headers Gatehouse writes: how long the call waited its turn, ms. */
export const QUEUE_MS_HEADER = 'x-gatehouse-queue-ms';

/**
 * How the call ended, written by whoever answers it (the forwarder, the route's error answer,
 * a step that answers itself) and read by the access log, usage and metrics. The rules of
 * what a call's status and error class are live here and nowhere else.
 */
export class CallOutcome {
  #status = 0;
  #bytesOut = 0;
  #firstByteMs: number | undefined;
  #streamed = false;
  #clientAborted = false;
  #errorClass: string | undefined;
  #upstreamStartedAt: number | undefined;
  /** Set by the usage tap when it watches the response (usage accounting on). */
  usage: UsageProbe | undefined;

  constructor(private readonly startedAt: number) {}

  /** The status the client got; 499 when it left before any status was sent. */
  get status(): number {
    return this.#status === 0 && this.#clientAborted ? 499 : this.#status;
  }
  /** Response body bytes written to the client. */
  get bytesOut(): number {
    return this.#bytesOut;
  }
  /** When the response's first byte went to the client, relative to the call's start. */
  get firstByteMs(): number | undefined {
    return this.#firstByteMs;
  }
  /** The response was an event stream. */
  get streamed(): boolean {
    return this.#streamed;
  }
  /** The client's connection closed before the response was complete. */
  get clientAborted(): boolean {
    return this.#clientAborted;
  }
  /** A short class of what went wrong first (`upstream_timeout`, `client_abort`...), for logs and usage. */
  get errorClass(): string | undefined {
    return this.#errorClass;
  }

  /** `performance.now()` when the call was first sent to llama-swap; undefined: it never was. */
  get upstreamStartedAt(): number | undefined {
    return this.#upstreamStartedAt;
  }

  /** The call is being sent to llama-swap now (a resend keeps the first time). */
  forwarded(): void {
    this.#upstreamStartedAt ??= performance.now();
  }

  /** The answer's status; a rendered error may still replace it while no byte has been sent. */
  answer(status: number): void {
    this.#status = status;
  }

  /** The response's head is going out now; `streamed` for an event stream. */
  headersSent(streamed = false): void {
    this.#firstByteMs = performance.now() - this.startedAt;
    this.#streamed = streamed;
  }

  /** Body bytes written to the client. */
  sent(bytes: number): void {
    this.#bytesOut += bytes;
  }

  /** Records what went wrong; the first class stays, later failures are consequences. */
  fail(errorClass: string): void {
    this.#errorClass ??= errorClass;
  }

  /** The response closed: unfinished, the client left. */
  closed(finished: boolean): void {
    if (finished || this.#clientAborted) return;
    this.#clientAborted = true;
    this.fail('client_abort');
  }
}

/**
 * One `/v1` call as it goes down the chain: Node's request and response, the request's facts,
 * what the steps decided, and how it ended. Typed and owned by the request: never a module global.
 */
export interface ProxyContext {
  readonly req: IncomingMessage;
  readonly res: ServerResponse;
  readonly request: CallRequest;
  readonly decided: CallDecisions;
  readonly outcome: CallOutcome;
  /** Set by `forward` while the upstream request runs: aborts it when the client's connection closes. */
  onClientGone: (() => void) | undefined;
  /** Called exactly once when the exchange is over, whichever way it ended. */
  readonly onDone: Array<(ctx: ProxyContext) => void>;
}

/** A fresh context for a call whose facts were just read: nothing decided yet, no outcome yet. */
export function newCallContext(req: IncomingMessage, res: ServerResponse, request: CallRequest): ProxyContext {
  return {
    req,
    res,
    request,
    decided: {
      caller: undefined,
      body: undefined,
      modelReading: undefined,
      model: undefined,
      requestJson: undefined,
      requestBody: undefined,
      queueMs: undefined,
      queue: undefined,
      budgetUse: undefined,
      translation: undefined,
    },
    outcome: new CallOutcome(request.startedAt),
    onClientGone: undefined,
    onDone: [],
  };
}

/**
 * Whom a key's share of a common resource (queue places, spool bytes) counts against: its owner,
 * so a person's keys share one share, else the key itself.
 */
export function shareHolder(keyId: string, ownerId: string | undefined): string {
  return ownerId === undefined ? `key:${keyId}` : `user:${ownerId}`;
}

/**
 * Top-level JSON members that bound a call's output: OpenAI's and Anthropic's, and llama.cpp's own
 * `n_predict`, which llama-server prefers to `max_tokens`. Read by the proxy, weighed by usage.
 */
export const OUTPUT_LIMIT_FIELDS = ['max_tokens', 'max_completion_tokens', 'max_output_tokens', 'n_predict'] as const;
