import { request } from './http.js';
import type {
  ApiKey,
  CreatedKey,
  DeletedKey,
  KeyList,
  KeyPatch,
  NewKeyInput,
  UpdatedKey,
} from '@gatehouse/admin-api/types.js';

const keysChanged = new Set<() => void>();

/**
 * Calls `listener` after every key this tab creates, changes or deletes (e.g. the open-API
 * banner, which must go as soon as the first key exists). Returns the remover.
 */
export function onKeysChanged(listener: () => void): () => void {
  keysChanged.add(listener);
  return () => keysChanged.delete(listener);
}

async function changingKeys<T>(answer: Promise<T>): Promise<T> {
  const result = await answer;
  for (const listener of [...keysChanged]) listener();
  return result;
}

/** Every key, newest first (the API lists them oldest first), as the Keys page shows them. */
export async function listKeys(signal?: AbortSignal): Promise<ApiKey[]> {
  const { keys } = await request<KeyList>('GET', '/api/keys', { signal });
  return keys.toReversed();
}

export function createKey(input: NewKeyInput): Promise<CreatedKey> {
  return changingKeys(request<CreatedKey>('POST', '/api/keys', { body: input }));
}

export async function updateKey(id: string, patch: KeyPatch): Promise<ApiKey> {
  const { key } = await changingKeys(
    request<UpdatedKey>('PATCH', `/api/keys/${encodeURIComponent(id)}`, { body: patch }),
  );
  return key;
}

export function revokeKey(id: string): Promise<ApiKey> {
  return updateKey(id, { revoked: true });
}

/**
 * Deleting the last key reopens the API; the server answers 409 `conflict` unless
 * `confirmLast` is set (`?confirm=last`).
 */
export function deleteKey(id: string, options: { confirmLast?: boolean } = {}): Promise<DeletedKey> {
  return changingKeys(
    request<DeletedKey>('DELETE', `/api/keys/${encodeURIComponent(id)}`, {
      query: { confirm: options.confirmLast ? 'last' : undefined },
    }),
  );
}
