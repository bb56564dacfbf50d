import { request } from './http.js';
import type { ModelList, ModelStateChange } from '@gatehouse/admin-api/types.js';

// llama-swap's status (`GET /api/upstream`) reaches the dashboard on the live stream (live.ts).

/** `reachable: false` (with `error`) when llama-swap does not answer; the list is then not the truth. */
export function listModels(signal?: AbortSignal): Promise<ModelList> {
  return request<ModelList>('GET', '/api/models', { signal });
}

// Model ids may contain `/`: always one encoded path segment.
export function loadModel(id: string): Promise<ModelStateChange> {
  return request('POST', `/api/models/${encodeURIComponent(id)}/load`);
}

export function unloadModel(id: string): Promise<ModelStateChange> {
  return request('POST', `/api/models/${encodeURIComponent(id)}/unload`);
}

export function unloadAllModels(): Promise<Record<string, never>> {
  return request('POST', '/api/models/unload-all');
}
