/**
 * Text as it may be logged, stored or shown to a viewer: anything shaped like an API key (a key
 * pasted into a path, `/v1/sk-…/chat/completions`) and every `Bearer` value replaced by
 * `[redacted]`. Applied once where a path enters the call context or an access line, and where
 * llama-swap's log text enters Gatehouse, so every reader gets the same text.
 */

/**
 * `sk-` and 16 or more key characters: Gatehouse's keys (`sk-` + 43 base62, `auth/api-keys.ts`),
 * truncated ones and OpenAI-style ones; not `sk-` inside a word (`disk-…`), but after `%20`. The run holds no `%`,
 * `.` or `/`.
 */
const KEY_SHAPED = /(?:(?<=%[0-9A-Fa-f]{2})|(?<![A-Za-z0-9_-]))sk-[A-Za-z0-9_-]{16,}/g;

/** `Bearer`, its separator as written (space, `%20`, `+`), then the value up to a delimiter. */
const BEARER_VALUE = /(bearer(?:%20|%09|\+|[ \t])+)[^\s/?#&;,"']+/gi;

export function redactSecrets(text: string): string {
  return text.replace(KEY_SHAPED, 'sk-[redacted]').replace(BEARER_VALUE, '$1[redacted]');
}
