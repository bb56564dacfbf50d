/**
 * The two undici pools Gatehouse opens to its upstream, side by side so their differences are
 * read in one place. Both dispatch to the same origin; they stay separate so a dashboard call
 * never waits behind `/v1` streams that hold every connection of the proxy's pool.
 *
 * - `/v1` (`proxy/forward.ts`): `GATEHOUSE_UPSTREAM_CONNECTIONS` connections, the header and
 *   idle timeouts of the settings (a stream may run for minutes), keep-alive 30 s.
 * - the management client (`management-client/transport.ts`): health, models, loads, log
 *   streams; each call carries its own deadline, so the pool sets only the connect timeout.
 */
import { Pool } from 'undici';

export interface ProxyPoolOptions {
  url: URL;
  connectTimeoutMs: number;
  headersTimeoutMs: number;
  idleTimeoutMs: number;
  /** Keep-alive connections to llama-swap; a stream holds one for its whole life. */
  connections: number;
}

/** The pool `/v1` calls are dispatched on. */
export function openProxyPool(options: ProxyPoolOptions): Pool {
  return new Pool(options.url.origin, {
    connections: options.connections,
    connect: { timeout: options.connectTimeoutMs },
    headersTimeout: options.headersTimeoutMs,
    bodyTimeout: options.idleTimeoutMs,
    keepAliveTimeout: 30_000,
  });
}

/** The pool of one management client (llama-swap's or llama-server's API, or kind detection). */
export function openManagementPool(baseUrl: URL, connectTimeoutMs: number): Pool {
  return new Pool(baseUrl.origin, { connect: { timeout: connectTimeoutMs }, keepAliveTimeout: 10_000 });
}
