/**
 * Who may speak for the client. A request's `X-Forwarded-For`, `-Proto` and `-Host` are
 * believed only when its socket peer is one of `GATEHOUSE_TRUSTED_PROXIES`; anyone else could
 * write them. Used for the login rate limit (client address), the `Secure` cookie attribute
 * (scheme) and the same-origin check (scheme + host).
 *
 * The address matcher is node:net's `BlockList` (IPv4/IPv6 addresses and subnets), which is
 * all `proxy-addr` would add here.
 */
import type { IncomingMessage } from 'node:http';
import { BlockList, isIP } from 'node:net';

/**
 * Builds the matcher for a list of addresses and CIDRs (`10.0.0.0/8`, `192.168.1.10`,
 * `fd00::/8`, `::1`). Throws an Error naming the first bad entry.
 */
export function parseTrustedProxies(entries: readonly string[]): BlockList {
  const list = new BlockList();
  for (const entry of entries) {
    const parts = entry.trim().split('/');
    const address = normalizeAddress(parts[0] ?? '');
    const family = isIP(address);
    const bad = () => new Error(`"${entry}" is not an IP address or CIDR (e.g. 10.0.0.0/8, 192.168.1.10, fd00::/8)`);
    if (family === 0 || parts.length > 2) throw bad();
    const type = family === 4 ? 'ipv4' : 'ipv6';
    if (parts.length === 1) {
      list.addAddress(address, type);
      continue;
    }
    const prefixText = parts[1] ?? '';
    const prefix = Number(prefixText);
    if (!/^\d{1,3}$/.test(prefixText) || prefix > (family === 4 ? 32 : 128)) throw bad();
    list.addSubnet(address, prefix, type);
  }
  return list;
}

export interface ProxyTrust {
  /** Whether the peer at `address` is a proxy whose forwarding headers are believed. */
  trusts(address: string | undefined): boolean;
  /**
   * The client's address: the socket peer; when that is a trusted proxy, the first untrusted
   * hop of `X-Forwarded-For` counting from the right (the hops left of it were written by
   * whoever connected to that proxy, so they prove nothing).
   */
  clientAddress(req: IncomingMessage): string;
  /** `https` when the socket is TLS, or a trusted proxy says `X-Forwarded-Proto: https`. */
  protocol(req: IncomingMessage): 'http' | 'https';
  /** The `X-Forwarded-For` chain a trusted proxy sent, to be extended; undefined from anyone else. */
  forwardedFor(req: IncomingMessage): string | undefined;
  /** The origin the client addressed (`scheme://host[:port]`), or undefined without a usable Host. */
  origin(req: IncomingMessage): string | undefined;
}

export function createProxyTrust(entries: readonly string[]): ProxyTrust {
  const list = parseTrustedProxies(entries);
  const empty = entries.length === 0;

  const trusts = (address: string | undefined): boolean => {
    if (empty || !address) return false;
    const family = isIP(address);
    return family !== 0 && list.check(address, family === 4 ? 'ipv4' : 'ipv6');
  };

  const peer = (req: IncomingMessage): string => normalizeAddress(req.socket.remoteAddress ?? '');

  const forwarded = (req: IncomingMessage, name: string): string | undefined => {
    if (!trusts(peer(req))) return undefined;
    const first = headerValues(req.headers[name])[0];
    return first === '' ? undefined : first;
  };

  const protocol = (req: IncomingMessage): 'http' | 'https' => {
    if ((req.socket as { encrypted?: boolean }).encrypted) return 'https';
    return forwarded(req, 'x-forwarded-proto')?.toLowerCase() === 'https' ? 'https' : 'http';
  };

  return {
    trusts,

    clientAddress(req) {
      let address = peer(req);
      if (!trusts(address)) return address;
      const hops = headerValues(req.headers['x-forwarded-for']);
      for (let i = hops.length - 1; i >= 0; i--) {
        const hop = parseHop(hops[i] ?? '');
        // A hop that is not an address: stop at the last one that could be checked.
        if (hop === undefined) return address;
        address = hop;
        if (!trusts(hop)) return hop;
      }
      return address;
    },

    protocol,

    forwardedFor(req) {
      if (!trusts(peer(req))) return undefined;
      const chain = headerValues(req.headers['x-forwarded-for']).filter(Boolean).join(', ');
      return chain === '' ? undefined : chain;
    },

    origin(req) {
      const host = forwarded(req, 'x-forwarded-host') ?? req.headers.host;
      if (!host) return undefined;
      try {
        const url = new URL(`${protocol(req)}://${host}`);
        // A Host with a path, credentials or query is not a host.
        if (url.pathname !== '/' || url.username || url.password || url.search || url.hash) return undefined;
        return url.origin;
      } catch {
        return undefined;
      }
    },
  };
}

/** `::ffff:10.0.0.1` (an IPv4 peer on a dual-stack socket) is `10.0.0.1`. */
function normalizeAddress(address: string): string {
  const lower = address.trim().toLowerCase();
  if (lower.startsWith('::ffff:') && isIP(lower.slice(7)) === 4) return lower.slice(7);
  return lower;
}

function headerValues(value: string | string[] | undefined): string[] {
  if (value === undefined) return [];
  return (Array.isArray(value) ? value.join(',') : value).split(',').map((v) => v.trim());
}

/** An `X-Forwarded-For` hop: `1.2.3.4`, `1.2.3.4:5678`, `::1` or `[::1]:5678`. */
function parseHop(raw: string): string | undefined {
  let hop = raw.trim();
  const bracketed = /^\[([^\]]+)\](?::\d+)?$/.exec(hop);
  if (bracketed) hop = bracketed[1]!;
  else if (/^[\d.]+:\d+$/.test(hop)) hop = hop.slice(0, hop.lastIndexOf(':'));
  hop = normalizeAddress(hop);
  return isIP(hop) === 0 ? undefined : hop;
}
