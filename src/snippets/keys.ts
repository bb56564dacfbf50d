/**
 * How a key shows up in a snippet. A prefix (an existing key, whose secret is never shown
 * again) becomes a marked placeholder; open mode gives clients that refuse an empty key a
 * placeholder that says what it is, and the others no key at all.
 */
import type { SnippetKey } from './types.js';

/** For clients that insist on a key while the gateway is in open mode (it ignores any key then). */
export const NO_KEY_PLACEHOLDER = 'sk-no-key-required';

/**
 * The environment variable that carries the key for clients configured through one (Codex,
 * LibreChat, Zed): one export serves them all.
 */
export const KEY_ENV_VAR = 'GATEHOUSE_API_KEY';

/**
 * What stands in for an existing key whose secret cannot be shown. ASCII on purpose: HTTP
 * clients refuse a non-ASCII header value before sending (Node's fetch throws "Cannot convert
 * argument to a ByteString"), while this one reaches the gateway and gets a readable 401.
 */
export function keyPlaceholder(prefix: string): string {
  return `${prefix}...PASTE-YOUR-KEY`;
}

/** The key text for a client that needs one. */
export function requiredKey(key: SnippetKey): string {
  switch (key.kind) {
    case 'secret':
      return key.value;
    case 'prefix':
      return keyPlaceholder(key.prefix);
    case 'none':
      return NO_KEY_PLACEHOLDER;
  }
}

/** The key text, or undefined in open mode (the snippet then leaves the key out). */
export function optionalKey(key: SnippetKey): string | undefined {
  return key.kind === 'none' ? undefined : requiredKey(key);
}

export interface KeyNoteOptions {
  client: string;
  /** Where the key goes, in the user's words: "the Authorization header", "ANTHROPIC_AUTH_TOKEN". */
  keyField: string;
  keyRequired: boolean;
}

/** The line shown under a snippet whose key is a placeholder or absent; undefined for a real key. */
export function keyNote(key: SnippetKey, { client, keyField, keyRequired }: KeyNoteOptions): string | undefined {
  switch (key.kind) {
    case 'secret':
      return undefined;
    case 'prefix':
      return (
        `Replace ${keyPlaceholder(key.prefix)} with your full key (it starts ${key.prefix}): it was shown ` +
        `only once, when it was created; if it is lost, create a new key.`
      );
    case 'none':
      return keyRequired
        ? `Open mode: no key exists yet, so the gateway accepts any key. ${client} wants a non-empty one, ` +
            `hence ${NO_KEY_PLACEHOLDER} in ${keyField}; once you create a key, put the key there instead.`
        : `Open mode: no key exists yet, so none is needed. Once you create a key, every request needs it ` +
            `(${keyField}).`;
  }
}
