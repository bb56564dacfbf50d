/**
 * Header hygiene in both directions. Client credentials never reach llama-swap (llama-swap
 * forwards them verbatim to llama-server, docs/llama-swap.md); hop-by-hop headers stop here.
 */
import type { IncomingHttpHeaders, OutgoingHttpHeaders } from 'node:http';

/** RFC 9110 §7.6.1 hop-by-hop headers, plus `host` (undici sets it for the upstream). */
const HOP_BY_HOP = new Set([
  'connection',
  'keep-alive',
  'proxy-authenticate',
  'proxy-authorization',
  'proxy-connection',
  'te',
  'trailer',
  'transfer-encoding',
  'upgrade',
  'host',
]);

/** Every header a client may carry a credential in (ours or someone else's). */
const CREDENTIALS = new Set(['authorization', 'x-api-key', 'api-key', 'cookie']);

/** Set by the gateway, never trusted from the client. */
const GATEWAY_SET = new Set([
  'x-forwarded-for',
  'x-forwarded-proto',
  'x-forwarded-host',
  'x-request-id',
  'accept-encoding',
  'content-length',
]);

export interface ForwardingFacts {
  requestId: string;
  clientAddress: string;
  proto: 'http' | 'https';
  /** The client's X-Forwarded-For, kept only when the client is a trusted proxy. */
  priorForwardedFor: string | undefined;
  upstreamApiKey: string | undefined;
  /** The exact number of body bytes when known, else the body is sent chunked. */
  contentLength: number | undefined;
}

export function upstreamRequestHeaders(
  incoming: IncomingHttpHeaders,
  facts: ForwardingFacts,
): Record<string, string | string[]> {
  const out: Record<string, string | string[]> = {};
  const connectionListed = listedInConnection(incoming.connection);
  for (const name in incoming) {
    if (HOP_BY_HOP.has(name) || CREDENTIALS.has(name) || GATEWAY_SET.has(name)) continue;
    if (connectionListed?.has(name)) continue;
    const value = incoming[name];
    if (value !== undefined) out[name] = value;
  }
  if (facts.contentLength !== undefined) out['content-length'] = String(facts.contentLength);
  // Loopback compression only costs CPU, and the usage tap must read plain bytes.
  out['accept-encoding'] = 'identity';
  out['x-request-id'] = facts.requestId;
  out['x-forwarded-for'] = facts.priorForwardedFor
    ? `${facts.priorForwardedFor}, ${facts.clientAddress}`
    : facts.clientAddress;
  out['x-forwarded-proto'] = facts.proto;
  if (incoming.host) out['x-forwarded-host'] = incoming.host;
  if (facts.upstreamApiKey) out.authorization = `Bearer ${facts.upstreamApiKey}`;
  return out;
}

/**
 * `access-control-*` is dropped too: the gateway's CORS policy (`http/cors.ts`) decides which
 * origins may read `/v1`, and llama-server echoes any request's Origin.
 */
export function clientResponseHeaders(upstream: Record<string, string | string[] | undefined>): OutgoingHttpHeaders {
  const out: OutgoingHttpHeaders = {};
  const connectionListed = listedInConnection(upstream.connection);
  for (const name in upstream) {
    if (HOP_BY_HOP.has(name) || connectionListed?.has(name) || name.startsWith('access-control-')) continue;
    const value = upstream[name];
    if (value !== undefined) out[name] = value;
  }
  return out;
}

function listedInConnection(value: string | string[] | undefined): Set<string> | undefined {
  if (value === undefined) return undefined;
  const text = Array.isArray(value) ? value.join(',') : value;
  if (!text.includes(',') && /^(keep-alive|close)$/i.test(text.trim())) return undefined;
  return new Set(
    text
      .split(',')
      .map((s) => s.trim().toLowerCase())
      .filter(Boolean),
  );
}

const SANE_REQUEST_ID = /^[A-Za-z0-9._:-]{1,128}$/;

/** The client's `x-request-id` when it is short and harmless (it ends up in logs). */
export function saneRequestId(value: string | string[] | undefined): string | undefined {
  return typeof value === 'string' && SANE_REQUEST_ID.test(value) ? value : undefined;
}
