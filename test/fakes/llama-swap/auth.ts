/**
 * llama-swap's API-key check: one candidate only, picked Basic password > Bearer >
 * `x-api-key`; plain string equality (this is a fake of llama-swap, not gateway code).
 */
import type { IncomingMessage } from 'node:http';

function extractApiKey(req: IncomingMessage): string {
  let bearer = '';
  let basic = '';
  const auth = req.headers.authorization ?? '';
  const space = auth.indexOf(' ');
  if (space > 0) {
    const scheme = auth.slice(0, space).toLowerCase();
    const credentials = auth.slice(space + 1);
    if (scheme === 'bearer') bearer = credentials;
    if (scheme === 'basic') {
      const decoded = Buffer.from(credentials, 'base64').toString('utf8');
      const colon = decoded.indexOf(':');
      if (colon >= 0) basic = decoded.slice(colon + 1);
    }
  }
  if (basic !== '') return basic;
  if (bearer !== '') return bearer;
  const xKey = req.headers['x-api-key'];
  return Array.isArray(xKey) ? (xKey[0] ?? '') : (xKey ?? '');
}

export function isAuthorized(req: IncomingMessage, keys: readonly string[]): boolean {
  if (keys.length === 0) return true;
  const key = extractApiKey(req);
  return key !== '' && keys.includes(key);
}

export const UNAUTHORIZED_MESSAGE = 'unauthorized: invalid or missing API key';
export const WWW_AUTHENTICATE = 'Basic realm="llama-swap"';
