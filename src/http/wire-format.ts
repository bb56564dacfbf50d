/**
 * Which error and stream shape a caller speaks. Decided once per request from its path:
 * Anthropic for `/v1/messages*`, OpenAI for the rest of `/v1`, the admin shape for `/api`.
 */
export type WireFormat = 'openai' | 'anthropic' | 'admin';

export function wireFormatForPath(url: string): WireFormat {
  if (url.startsWith('/v1/messages')) {
    const next = url.charCodeAt('/v1/messages'.length);
    // `/v1/messages`, `/v1/messages/...`, `/v1/messages?...` but not `/v1/messagesX`.
    if (Number.isNaN(next) || next === 0x2f || next === 0x3f) return 'anthropic';
  }
  if (url.startsWith('/api/')) return 'admin';
  return 'openai';
}
