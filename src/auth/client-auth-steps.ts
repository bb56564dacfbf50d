/**
 * The `/v1` steps that enforce who may call and which models they may use. The decision
 * itself is `authenticateClient` (framework-free); these turn it into the catalogue's errors.
 */
import { GatewayError } from '../http/errors.js';
import type { ProxyStep } from '../http/proxy-route.js';
import { authenticateClient, modelAllowed } from './client-auth.js';
import type { KeyVerifier } from './key-index.js';

export interface KeyUseRecorder {
  markUsed(id: string): void;
}

/** Clients read the scheme from here to know a Bearer key is expected. */
const CHALLENGE = { 'www-authenticate': 'Bearer' };

/** `clientAuth`: a valid key, or open mode (no key records at all). */
export function clientAuth(keys: KeyVerifier & KeyUseRecorder, now: () => number = Date.now): ProxyStep {
  return function clientAuthStep(ctx) {
    const result = authenticateClient(ctx.req.headers, keys, now());
    if ('error' in result) throw new GatewayError(result.error, { headers: CHALLENGE });
    if (result.mode === 'key') {
      const key = result.key;
      ctx.caller = { keyId: key.id, keyName: key.name, allowedModels: key.models, limits: key.limits };
      keys.markUsed(key.id);
    }
  };
}

/** `modelAllowList`: a key restricted to some models gets 403 naming any other model. */
export const modelAllowList: ProxyStep = function modelAllowListStep(ctx) {
  const caller = ctx.caller;
  if (!caller || caller.allowedModels.length === 0 || ctx.model === undefined) return;
  if (!modelAllowed({ models: caller.allowedModels as string[] }, ctx.model)) {
    throw new GatewayError('model_not_allowed', {
      message: `This API key may not use the model "${ctx.model}". Allowed: ${caller.allowedModels.join(', ')}.`,
      param: 'model',
    });
  }
};
