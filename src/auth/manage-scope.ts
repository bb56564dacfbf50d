/**
 * Who may manage models through `/models*` (docs/llama-server.md, "Model management for
 * clients"): a valid key with the `manage` scope, or anyone in open mode (no key records: the
 * operator left the gateway open, and any caller can already load a model by calling it).
 * A key restricted to some models (by its list or its owner's allowance) manages only those; the
 * caller gets the lists to apply.
 */
import { GatewayError } from '../core/errors.js';
import { CHALLENGE, type KeyUseRecorder } from './client-auth-steps.js';
import { authenticateClient, type IncomingHeaders } from './client-auth.js';
import type { KeyVerifier } from './key-index.js';
import type { KeyRecord } from '../store/records.js';
import type { ModelAllowance } from '../core/context.js';

export interface ManageCaller {
  /** The key's list and its owner's current allowance; both empty: every model. */
  models: ModelAllowance;
  /** The key that authorized the call; null in open mode. */
  key: KeyRecord | null;
}

export function authorizeManage(
  headers: IncomingHeaders,
  keys: KeyVerifier & KeyUseRecorder,
  nowMs: number,
): ManageCaller {
  const result = authenticateClient(headers, keys, nowMs);
  if ('error' in result) throw new GatewayError(result.error, { headers: CHALLENGE });
  if (result.mode === 'open') return { models: { key: [], owner: [] }, key: null };
  if (!result.key.manage) throw new GatewayError('manage_scope_required');
  keys.markUsed(result.key.id);
  return { models: { key: result.key.models, owner: result.key.ownerModels }, key: result.key };
}
