/**
 * Per-request state of one proxied call, created by the route table and handed down the
 * middleware chain. Typed and owned by the request: never a module global.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { WireFormat } from './wire-format.js';
import type { BodyHead } from '../proxy/request-body.js';
import type { JsonMember } from '../proxy/request-json.js';
import type { ModelReading } from '../proxy/request-model.js';

export interface CallerIdentity {
  /** `undefined` in open mode (no keys exist). */
  keyId: string | undefined;
  keyName: string | undefined;
  allowedModels: readonly string[];
  limits?: { rpm: number | null; tpm: number | null; concurrent: number | null } | undefined;
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

export interface ProxyContext {
  readonly req: IncomingMessage;
  readonly res: ServerResponse;
  readonly requestId: string;
  readonly format: WireFormat;
  readonly method: string;
  /** Path without the query string (what is logged). */
  readonly path: string;
  /** Path and query as received (what is forwarded). */
  readonly url: string;
  /** `performance.now()` at arrival. */
  readonly startedAt: number;
  readonly clientAddress: string;
  /** The scheme the client used: TLS, or `X-Forwarded-Proto` from a trusted proxy (`http/proxy-trust.ts`). */
  readonly proto: 'http' | 'https';
  /** A trusted proxy's `X-Forwarded-For` chain, extended (not replaced) towards llama-swap. */
  readonly priorForwardedFor: string | undefined;
  caller: CallerIdentity | undefined;
  body: BodyHead | undefined;
  /** The model as llama-swap will read it, with how certain that is (set by `readModel`). */
  modelReading: ModelReading | undefined;
  /** The model the call is attributed to in usage and logs (llama-swap's reading, or its best guess). */
  model: string | undefined;
  /** Top-level members of a JSON body read by `readModel` (`max_tokens`, `stream`...). */
  requestJson: ReadonlyMap<string, JsonMember> | undefined;
  status: number;
  bytesOut: number;
  /** When the first response byte reached the client, relative to `startedAt`. */
  firstByteMs: number | undefined;
  streamed: boolean;
  clientAborted: boolean;
  /** A short class of what went wrong (`upstream_timeout`, `client_abort`...), for logs and usage. */
  errorClass: string | undefined;
  /** Set by the usage tap when it watches the response (usage accounting on). */
  usage: UsageProbe | undefined;
  /** The start of the request body, when body capture is on. */
  requestBody: (() => string | undefined) | undefined;
  /** Set by `forward` while the upstream request runs: aborts it when the client's connection closes. */
  onClientGone: (() => void) | undefined;
  /** Called exactly once when the exchange is over, whichever way it ended. */
  readonly onDone: Array<(ctx: ProxyContext) => void>;
}
