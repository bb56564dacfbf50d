/**
 * `loginRateLimit`: at most `maxFailures` wrong passwords per client address, and (with
 * `account`) at most `maxAccountFailures` per account from all addresses together, in any
 * `windowMs` (5 per address and 10 per account in 15 minutes in the route table); the next
 * attempt gets `429 rate_limited` with `Retry-After` (seconds until the oldest counted failure
 * leaves the window). A successful sign-in clears only the failures that address made at that
 * account: guessing at someone else cannot be reset by signing in to one's own account. A second
 * instance guards first-run setup, where a wrong token is a `403` (`failureStatus`).
 *
 * The account is whatever `account` names for the attempt (the route table: the user's id, else
 * the typed name's comparison key), so an unknown name is counted and refused exactly like a
 * known one and the 429 tells nothing about which names exist. Once an account is over its
 * limit, its owner is refused too until the window passes: the price of stopping guesses spread
 * over many addresses.
 *
 * Counting happens around the handler, which never knows about it: `check` (a preHandler, as the
 * account comes from the body) counts the attempt as a failure before the password is verified,
 * so parallel guesses cannot slip through together; `settle` (onResponse) keeps it on
 * `failureStatus`, clears the address's failures at the account on `2xx`, and withdraws it for
 * any other answer (a malformed request guessed nothing). A request the client abandons stays
 * counted.
 *
 * Client address: `ProxyTrust.clientAddress` (the socket peer, or the first untrusted
 * `X-Forwarded-For` hop behind a trusted proxy). IPv6 addresses count per /64, the block one
 * host usually owns; otherwise every guess could come from a fresh address. State is in memory
 * and per process: a restart forgets it, and replicas count separately.
 */
import { isIP } from 'node:net';
import { GatewayError } from '../core/errors.js';

/**
 * `Request` is whatever stands for one attempt (the route table passes Fastify's request): it
 * is only handed back to `clientAddress` and `account`, and remembers the attempt until `settle`.
 */
export interface LoginRateLimitOptions<Request extends object> {
  maxFailures: number;
  windowMs: number;
  clientAddress: (request: Request) => string;
  /** The account an attempt is at; undefined (or absent) counts the address only. Must not throw. */
  account?: (request: Request) => Promise<string | undefined>;
  /** Failures allowed per account from all addresses. Default `2 * maxFailures`. */
  maxAccountFailures?: number;
  now?: () => number;
  /** Addresses (and accounts) remembered at once; the least recently tried is forgotten beyond this. */
  maxTrackedAddresses?: number;
  /** The answer that means "wrong guess" and stays counted. Default 401. */
  failureStatus?: number;
  /** What is being attempted, for the 429 message. Default "sign-in". */
  attemptName?: string;
}

interface Attempt {
  at: number;
  address: string;
  account: string | undefined;
}

export interface LoginRateLimit<Request extends object> {
  /** Counts the attempt, or throws `rate_limited` when its address or account is over the limit. */
  check(request: Request): Promise<void>;
  /** Settles the attempt by the status it was answered with (`reply.statusCode`). */
  settle(request: Request, reply: { readonly statusCode: number }): Promise<void>;
}

export function loginRateLimit<Request extends object>(
  options: LoginRateLimitOptions<Request>,
): LoginRateLimit<Request> {
  const { maxFailures, windowMs, clientAddress } = options;
  const maxAccountFailures = options.maxAccountFailures ?? 2 * maxFailures;
  for (const [name, value] of [
    ['maxFailures', maxFailures],
    ['maxAccountFailures', maxAccountFailures],
  ] as const)
    if (!Number.isInteger(value) || value < 1)
      throw new RangeError(`loginRateLimit: ${name} must be a whole number >= 1`);
  if (!(windowMs > 0)) throw new RangeError('loginRateLimit: windowMs must be > 0');
  if (typeof clientAddress !== 'function') throw new TypeError('loginRateLimit: clientAddress is required');
  const now = options.now ?? Date.now;
  const maxTracked = options.maxTrackedAddresses ?? 10_000;
  const failureStatus = options.failureStatus ?? 401;
  const attemptName = options.attemptName ?? 'sign-in';

  // The same attempt objects, listed by address and by account.
  const byAddress = new FailureLists(windowMs, maxTracked);
  const byAccount = new FailureLists(windowMs, maxTracked);
  const pending = new WeakMap<Request, Attempt>();

  const refuse = (oldest: number, at: number, from: string): never => {
    const retryAfter = Math.max(1, Math.ceil((oldest + windowMs - at) / 1000));
    throw new GatewayError('rate_limited', {
      message: `Too many failed ${attemptName} attempts ${from}. Try again in ${formatWait(retryAfter)}.`,
      headers: { 'retry-after': String(retryAfter) },
    });
  };

  return {
    async check(request) {
      const address = rateLimitKey(clientAddress(request));
      const account = options.account ? await options.account(request) : undefined;
      // Nothing awaits from here on: checking and counting happen in one turn of the event loop.
      const at = now();
      const fromAddress = byAddress.recent(address, at);
      if (fromAddress.length >= maxFailures)
        refuse(fromAddress[fromAddress.length - maxFailures]!.at, at, 'from this address');
      const atAccount = account === undefined ? undefined : byAccount.recent(account, at);
      if (atAccount && atAccount.length >= maxAccountFailures)
        refuse(atAccount[atAccount.length - maxAccountFailures]!.at, at, 'for this account');
      const attempt: Attempt = { at, address, account };
      byAddress.add(address, attempt);
      if (account !== undefined) byAccount.add(account, attempt);
      pending.set(request, attempt);
    },

    async settle(request, reply) {
      const attempt = pending.get(request);
      if (!attempt) return;
      pending.delete(request);
      const status = reply.statusCode;
      if (status === failureStatus) return;
      const { address, account } = attempt;
      const forgotten =
        status >= 200 && status < 300
          ? (a: Attempt) => a.address === address && a.account === account
          : (a: Attempt) => a === attempt;
      byAddress.remove(address, forgotten);
      if (account !== undefined) byAccount.remove(account, forgotten);
    },
  };
}

/** Failures per key within the window, oldest first; the least recently tried key is dropped beyond `maxKeys`. */
class FailureLists {
  readonly #lists = new Map<string, Attempt[]>();

  constructor(
    private readonly windowMs: number,
    private readonly maxKeys: number,
  ) {}

  /** The key's failures still in the window at `at`. */
  recent(key: string, at: number): readonly Attempt[] {
    const list = (this.#lists.get(key) ?? []).filter((a) => at - a.at < this.windowMs);
    if (list.length === 0) this.#lists.delete(key);
    else this.#lists.set(key, list);
    return list;
  }

  add(key: string, attempt: Attempt): void {
    const list = this.#lists.get(key) ?? [];
    list.push(attempt);
    this.#lists.delete(key); // re-insert: Map order is then "least recently attempted first"
    this.#lists.set(key, list);
    if (this.#lists.size > this.maxKeys) {
      const first = this.#lists.keys().next();
      if (!first.done) this.#lists.delete(first.value);
    }
  }

  remove(key: string, match: (attempt: Attempt) => boolean): void {
    const list = this.#lists.get(key)?.filter((a) => !match(a));
    if (list === undefined) return;
    if (list.length === 0) this.#lists.delete(key);
    else this.#lists.set(key, list);
  }
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
