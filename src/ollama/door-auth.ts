/**
 * Who calls the Ollama door. A call with a key is checked exactly as on `/v1` (a wrong key is
 * always 401). A call without one acts as the key `GATEHOUSE_OLLAMA_KEY` names, for clients that
 * cannot send headers; without that setting it gets 401 once any key exists (open mode lets it in).
 */
import type { IncomingHttpHeaders } from 'node:http';
import { GatewayError } from '../core/errors.js';
import type { ProxyStep } from '../core/steps.js';
import { callerOf, CHALLENGE, clientAuth, type KeyUseRecorder } from '../auth/client-auth-steps.js';
import { keyCandidates } from '../auth/client-auth.js';
import { keyStatus } from '../auth/api-keys.js';
import type { IndexedKey, KeyVerifier } from '../auth/key-index.js';

/** Finds a key by its name (the index's `named`). */
export type KeyByName = (name: string) => IndexedKey | undefined;

export function ollamaAuth(
  keys: KeyVerifier & KeyUseRecorder,
  keyless: { name: string; find: KeyByName } | undefined,
  now: () => number = Date.now,
): ProxyStep {
  const withKey = clientAuth(keys, now);
  if (!keyless) return withKey;
  return function ollamaAuthStep(ctx) {
    const { headers } = ctx.req;
    if (!keys.hasAnyKeys() || keyCandidates(headers).length > 0 || sendsCredentials(headers)) return withKey(ctx);
    // A browser (a web page's fetch, a rebound DNS name) never acts as the keyless key: it must send one.
    if (headers.origin !== undefined || headers['sec-fetch-site'] !== undefined) {
      throw new GatewayError('invalid_api_key', {
        message: 'A call from a browser must send an API key; only other apps may call without one.',
        headers: CHALLENGE,
      });
    }
    const key = keyless.find(keyless.name);
    // Fail closed: a revoked, expired or missing key lets no keyless call in.
    if (!key || keyStatus(key, now()) !== 'active') {
      throw new GatewayError('invalid_api_key', {
        message:
          `Calls without a key act as the key "${keyless.name}" (GATEHOUSE_OLLAMA_KEY), ` +
          'which is not one active key.',
        headers: CHALLENGE,
      });
    }
    ctx.decided.caller = callerOf(key);
    keys.markUsed(key.id);
  };
}

/** Any credential header, even one that names no usable key: such a call is judged by it, never keyless. */
function sendsCredentials(headers: IncomingHttpHeaders): boolean {
  return headers.authorization !== undefined || headers['x-api-key'] !== undefined || headers['api-key'] !== undefined;
}
