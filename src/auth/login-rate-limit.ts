/**
 * `loginRateLimit`: at most `maxFailures` wrong passwords per client address in any
 * `windowMs` (5 per 15 minutes in the route table); the next attempt gets
 * `429 rate_limited` with `Retry-After` (seconds until the oldest failure leaves the window).
 * A successful sign-in clears the address's failures. A second instance guards first-run
 * setup, where a wrong token is a `403` (`failureStatus`).
 *
 * Counting happens around the handler, which never knows about it: `check` (onRequest) counts
 * the attempt as a failure before the password is even read, so parallel guesses cannot slip
 * through together; `settle` (onResponse) keeps it on `failureStatus`, clears the address on `2xx`, and
 * withdraws it for any other answer (a malformed request guessed nothing). A request the client
 * abandons stays counted.
 *
 * Client address: `ProxyTrust.clientAddress` (the socket peer, or the first untrusted
 * `X-Forwarded-For` hop behind a trusted proxy). IPv6 addresses count per /64, the block one
 * host usually owns; otherwise every guess could come from a fresh address. State is in memory
 * and per process: a restart forgets it, and replicas count separately.
 */
import { isIP } from 'node:net';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { GatewayError } from '../core/errors.js';

export interface LoginRateLimitOptions {
  maxFailures: number;
  windowMs: number;
  clientAddress: (request: FastifyRequest) => string;
  now?: () => number;
  /** Addresses remembered at once; the oldest is forgotten beyond this (memory bound). */
  maxTrackedAddresses?: number;
  /** The answer that means "wrong guess" and stays counted. Default 401. */
  failureStatus?: number;
  /** What is being attempted, for the 429 message. Default "sign-in". */
  attemptName?: string;
}

interface Attempt {
  at: number;
}

export interface LoginRateLimit {
  check(request: FastifyRequest, reply: FastifyReply): Promise<void>;
  settle(request: FastifyRequest, reply: FastifyReply): Promise<void>;
}

export function loginRateLimit(options: LoginRateLimitOptions): LoginRateLimit {
  const { maxFailures, windowMs, clientAddress } = options;
  if (!Number.isInteger(maxFailures) || maxFailures < 1)
    throw new RangeError('loginRateLimit: maxFailures must be a whole number >= 1');
  if (!(windowMs > 0)) throw new RangeError('loginRateLimit: windowMs must be > 0');
  if (typeof clientAddress !== 'function') throw new TypeError('loginRateLimit: clientAddress is required');
  const now = options.now ?? Date.now;
  const maxTracked = options.maxTrackedAddresses ?? 10_000;
  const failureStatus = options.failureStatus ?? 401;
  const attemptName = options.attemptName ?? 'sign-in';

  const failures = new Map<string, Attempt[]>();
  const pending = new WeakMap<FastifyRequest, { key: string; attempt: Attempt }>();

  const recent = (key: string, at: number): Attempt[] => {
    const list = (failures.get(key) ?? []).filter((a) => at - a.at < windowMs);
    if (list.length === 0) failures.delete(key);
    else failures.set(key, list);
    return list;
  };

  return {
    async check(request) {
      const key = rateLimitKey(clientAddress(request));
      const at = now();
      const list = recent(key, at);
      if (list.length >= maxFailures) {
        const oldest = list[list.length - maxFailures]!.at;
        const retryAfter = Math.max(1, Math.ceil((oldest + windowMs - at) / 1000));
        throw new GatewayError('rate_limited', {
          message: `Too many failed ${attemptName} attempts from this address. Try again in ${formatWait(retryAfter)}.`,
          headers: { 'retry-after': String(retryAfter) },
        });
      }
      const attempt = { at };
      list.push(attempt);
      failures.delete(key); // re-insert: Map order is then "least recently attempted first"
      failures.set(key, list);
      if (failures.size > maxTracked) {
        const first = failures.keys().next();
        if (!first.done) failures.delete(first.value);
      }
      pending.set(request, { key, attempt });
    },

    async settle(request, reply) {
      const entry = pending.get(request);
      if (!entry) return;
      pending.delete(request);
      const status = reply.statusCode;
      if (status === failureStatus) return;
      if (status >= 200 && status < 300) {
        failures.delete(entry.key);
        return;
      }
      const list = failures.get(entry.key);
      if (!list) return;
      const i = list.indexOf(entry.attempt);
      if (i >= 0) list.splice(i, 1);
      if (list.length === 0) failures.delete(entry.key);
    },
  };
}

/** The unit an attacker pays per address: one IPv4 address, or one IPv6 /64. */
export function rateLimitKey(address: string): string {
  if (isIP(address) !== 6) return address;
  const groups = expandIPv6(address);
  return groups ? `${groups.slice(0, 4).join(':')}::/64` : address;
}

function expandIPv6(address: string): string[] | undefined {
  let text = address.toLowerCase().split('%')[0] ?? '';
  // An embedded IPv4 tail (::ffff:1.2.3.4, 64:ff9b::1.2.3.4) becomes two groups.
  const v4 = /(\d+)\.(\d+)\.(\d+)\.(\d+)$/.exec(text);
  if (v4) {
    const [a, b, c, d] = v4.slice(1).map(Number) as [number, number, number, number];
    text = `${text.slice(0, v4.index)}${((a << 8) | b).toString(16)}:${((c << 8) | d).toString(16)}`;
  }
  const [head = '', tail] = text.split('::');
  const left = head ? head.split(':') : [];
  const right = tail ? tail.split(':') : [];
  const missing = 8 - left.length - right.length;
  if (tail === undefined ? missing !== 0 : missing < 0) return undefined;
  return [...left, ...Array<string>(missing).fill('0'), ...right].map((g) => g.padStart(4, '0'));
}

function formatWait(seconds: number): string {
  if (seconds < 60) return `${seconds} s`;
  return `${Math.ceil(seconds / 60)} min`;
}
