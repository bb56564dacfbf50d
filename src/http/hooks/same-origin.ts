/**
 * `sameOrigin`: refuses a state-changing request (anything but GET, HEAD, OPTIONS) that a
 * browser sent from another site, so a page elsewhere cannot use the admin's cookie
 * (cross-site request forgery). `SameSite=Strict` on the cookie is the first fence; this is
 * the second, and it also covers requests that carry no cookie (login, setup).
 *
 * - `Sec-Fetch-Site`, when present, must be `same-origin` or `none` (typed URL, bookmark).
 *   `same-site` is refused: a sibling subdomain is not this origin.
 * - `Origin`, when present, must equal this request's own origin: scheme (`https` when TLS or
 *   a trusted proxy says so) and host (`X-Forwarded-Host` from a trusted proxy, else `Host`).
 * - A request with neither header is not from a browser (browsers send `Origin` on every
 *   cross-origin POST and on every non-GET fetch): scripts pass.
 */
import type { FastifyReply, FastifyRequest } from 'fastify';
import { GatewayError } from '../../core/errors.js';
import type { ProxyTrust } from '../../auth/proxy-trust.js';

const SAFE_METHODS = new Set(['GET', 'HEAD', 'OPTIONS']);

export function sameOrigin(trust: ProxyTrust) {
  if (typeof trust?.origin !== 'function') throw new TypeError('sameOrigin: a ProxyTrust is required');
  return async function sameOriginHook(request: FastifyRequest, _reply: FastifyReply): Promise<void> {
    if (SAFE_METHODS.has(request.method)) return;
    const site = request.headers['sec-fetch-site'];
    if (site !== undefined && site !== 'same-origin' && site !== 'none') {
      throw new GatewayError('csrf_rejected', {
        message:
          `Cross-site request refused: Sec-Fetch-Site is "${String(site)}"; the admin API accepts ` +
          `changes only from the dashboard's own origin.`,
        details: [{ path: '/headers/sec-fetch-site', message: 'must be same-origin or none' }],
      });
    }
    const origin = request.headers.origin;
    if (origin === undefined) return;
    const own = trust.origin(request.raw);
    if (own !== undefined && normalizeOrigin(origin) === own) return;
    throw new GatewayError('csrf_rejected', {
      message:
        `Cross-site request refused: Origin ${JSON.stringify(origin)} is not this gateway's origin ` +
        `(${own ?? 'unknown: no Host header'}). ` +
        'Behind a TLS-terminating reverse proxy, list it in GATEHOUSE_TRUSTED_PROXIES so its ' +
        'X-Forwarded-Proto is believed.',
      details: [{ path: '/headers/origin', message: `must be ${own ?? "this gateway's origin"}` }],
    });
  };
}

/** `Origin` as `URL.origin` writes it (lowercase host, default port dropped); `null` stays unmatched. */
function normalizeOrigin(origin: string): string | undefined {
  try {
    const url = new URL(origin);
    return url.origin === 'null' ? undefined : url.origin;
  } catch {
    return undefined;
  }
}
