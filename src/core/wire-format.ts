/**
 * Which error and stream shape a caller speaks. Decided once per request from its path:
 * Anthropic for `/v1/messages*`, OpenAI for the rest of `/v1`, the admin shape for `/api`;
 * `/v1/models*` is shared by both APIs, so there the `anthropic-version` header decides. Every call on
 * the Ollama listener (`GATEHOUSE_OLLAMA_LISTEN`) speaks `ollama`, whatever its path.
 */
export type WireFormat = 'openai' | 'anthropic' | 'admin' | 'ollama';

export function wireFormatForPath(url: string): WireFormat {
  if (url.startsWith('/v1/messages')) {
    const next = url.charCodeAt('/v1/messages'.length);
    // `/v1/messages`, `/v1/messages/...`, `/v1/messages?...` but not `/v1/messagesX`.
    if (Number.isNaN(next) || next === 0x2f || next === 0x3f) return 'anthropic';
  }
  if (url.startsWith('/api/')) return 'admin';
  return 'openai';
}

/** The format of a `/v1` call: its path, and for `/v1/models*` whether it carries `anthropic-version`. */
export function wireFormatForCall(url: string, anthropicVersion: string | string[] | undefined): WireFormat {
  if (anthropicVersion !== undefined && isModelsPath(url)) return 'anthropic';
  return wireFormatForPath(url);
}

function isModelsPath(url: string): boolean {
  if (!url.startsWith('/v1/models')) return false;
  const next = url.charCodeAt('/v1/models'.length);
  return Number.isNaN(next) || next === 0x2f || next === 0x3f;
}
