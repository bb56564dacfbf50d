/**
 * llama-swap's config.yaml (docs/admin-api.md, "Config editor"). The text travels exactly as
 * it is in the file (BOM, CRLF, no added newline); the version goes back with every save.
 */
import { request } from './http.js';
import type {
  ConfigFormatted,
  ConfigLoad,
  ConfigSaved,
  ConfigValidation,
  ReloadStatus,
} from '@gatehouse/admin-api/types.js';

export function getConfig(signal?: AbortSignal): Promise<ConfigLoad> {
  return request<ConfigLoad>('GET', '/api/config', { signal });
}

export function validateConfig(text: string, signal?: AbortSignal): Promise<ConfigValidation> {
  return request<ConfigValidation>('POST', '/api/config/validate', { body: { text }, signal });
}

/** Re-printed text; nothing is written. 422 `config_invalid` when the text is not YAML. */
export function formatConfig(text: string): Promise<ConfigFormatted> {
  return request('POST', '/api/config/format', { body: { text } });
}

/**
 * Errors worth handling: 409 `config_conflict` (details: ConfigConflict), 422 `config_invalid`
 * (details: ConfigInvalid), 409 `config_disabled`, 403 `config_read_only`, 503 `schema_unavailable`.
 */
export function saveConfig(text: string, version: string): Promise<ConfigSaved> {
  return request<ConfigSaved>('PUT', '/api/config', { body: { text, version } });
}

/** Long-polls up to `waitMs` while the reload of the save at `since` is pending. */
export function getReloadStatus(since: string, waitMs: number, signal?: AbortSignal): Promise<ReloadStatus> {
  return request<ReloadStatus>('GET', '/api/config/reload-status', { query: { since, wait: String(waitMs) }, signal });
}
