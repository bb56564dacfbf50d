/**
 * The `/v1` steps that enforce who may call and which models they may use. The decision
 * itself is `authenticateClient` (framework-free); these turn it into the catalogue's errors.
 */
import { GatewayError } from '../core/errors.js';
import type { ProxyStep } from '../core/steps.js';
import { authenticateClient } from './client-auth.js';
import { allowanceCovers, allowanceRestricts, allowanceText, type ModelCatalog } from './model-access.js';
import type { IndexedKey, KeyVerifier } from './key-index.js';
import { hasBudget } from '../store/records.js';
import type { CallerIdentity, ModelAllowance } from '../core/context.js';

export interface KeyUseRecorder {
  markUsed(id: string): void;
}

/** Clients read the scheme from here to know a Bearer key is expected. */
export const CHALLENGE = { 'www-authenticate': 'Bearer' };

/** `clientAuth`: a valid key, or open mode (no key records at all). */
export function clientAuth(keys: KeyVerifier & KeyUseRecorder, now: () => number = Date.now): ProxyStep {
  return function clientAuthStep(ctx) {
    const result = authenticateClient(ctx.req.headers, keys, now());
    if ('error' in result) throw new GatewayError(result.error, { headers: CHALLENGE });
    if (result.mode === 'key') {
      ctx.decided.caller = callerOf(result.key);
      keys.markUsed(result.key.id);
    }
  };
}

/** The caller a key makes: its models (and its owner's allowance), limits, priority, budget and scope. */
export function callerOf(key: IndexedKey): CallerIdentity {
  return {
    keyId: key.id,
    keyName: key.name,
    ownerId: key.ownerId ?? undefined,
    models: { key: key.models, owner: key.ownerModels },
    limits: key.limits,
    manage: key.manage,
    priority: key.priority,
    budget: hasBudget(key.budget) ? key.budget : undefined,
  };
}

/**
 * `modelAllowList`: a key restricted to some models, by its own list or its owner's current
 * allowance, may call only what both allow (their aliases and patterns included, see
 * model-access.ts). Fail closed: a call whose model cannot be read with certainty, or that names
 * none, is refused and never reaches llama-swap.
 */
export function modelAllowList(catalog: () => Promise<ModelCatalog | undefined>): ProxyStep {
  return function modelAllowListStep(ctx) {
    const allowed = ctx.decided.caller?.models;
    if (!allowed || !allowanceRestricts(allowed)) return;
    // llama-swap routes on the path with each segment unescaped (Go's ServeMux); `/v1/%6dodels`
    // is its model list. The gateway decides on the path as sent, so it must be plain.
    if (!isPlainPath(pathOf(ctx.request.url))) {
      throw new GatewayError('model_required', {
        message:
          'This API key may only use some models, and a path with percent-escapes, empty or dot segments ' +
          'cannot be read with certainty.',
      });
    }
    const reading = ctx.decided.modelReading ?? { status: 'absent' };
    if (reading.status === 'uncertain') {
      throw new GatewayError('model_required', {
        message:
          `This API key may only use some models, and the model of this call cannot be read with ` +
          `certainty: ${reading.reason}.`,
        param: 'model',
      });
    }
    if (reading.status === 'absent') {
      throw new GatewayError('model_required', {
        message: 'This API key may only use some models, so every call must name one ("model").',
        param: 'model',
      });
    }
    const model = reading.model;
    return catalog().then((known) => {
      if (!allowanceCovers(allowed, model, known)) throw notAllowed(model, allowed);
    });
  };
}

/** The path as received (`request.path` is the redacted one, for logs). */
function pathOf(url: string): string {
  const q = url.indexOf('?');
  return q < 0 ? url : url.slice(0, q);
}

function isPlainPath(path: string): boolean {
  return !path.includes('%') && !path.includes('//') && !/\/\.\.?(?:\/|$)/.test(path);
}

function notAllowed(model: string, allowed: ModelAllowance): GatewayError {
  return new GatewayError('model_not_allowed', {
    message: `This API key may not use the model "${model}". ${allowanceText(allowed)}.`,
    param: 'model',
  });
}
