/**
 * The llama-swap schema that ships with Gatehouse, for when the published one cannot be
 * downloaded and nothing is cached: `llama-swap-schema.json`, llama-swap's `config-schema.json`
 * byte for byte at the newest release we have (MIT, `LICENSE-llama-swap.md`), plus the keys
 * llama-swap added after it, so that today's configs validate. Also names the version of any
 * schema text by its hash.
 */
import { sha256Hex } from './config-file.js';

/** The published schema bundled here: llama-swap commit and date, and its sha256. */
const PUBLISHED = {
  commit: '0bdb3720',
  date: '2026-08-22',
  sha256: '85c0101dbc8a4461bd4c751bc98b3441651a83a8ba855d0473ef6c8f4c2c5666',
};

/** Keys llama-swap accepts since that release (docs/llama-swap.md, "Configuration"). */
const LATER_KEYS = ['globalConcurrencyLimit', 'hooks.on_startup.profile'] as const;

const PUBLISHED_VERSION = `llama-swap ${PUBLISHED.commit} (${PUBLISHED.date})`;
export const BUNDLED_VERSION = `${PUBLISHED_VERSION} + ${LATER_KEYS.join(', ')}`;

/** A readable version for a schema text: the llama-swap release it is, else its hash. */
export function schemaVersion(text: string): string {
  const hash = sha256Hex(Buffer.from(text));
  return hash === PUBLISHED.sha256 ? PUBLISHED_VERSION : `sha256 ${hash.slice(0, 12)}`;
}

/** The bundled schema document (a fresh copy each call). */
export async function bundledSchema(): Promise<Record<string, unknown>> {
  const published = (await import('./llama-swap-schema.json', { with: { type: 'json' } })).default;
  const document = structuredClone(published) as Record<string, unknown>;
  addLaterKeys(document);
  return document;
}

/**
 * `globalConcurrencyLimit` (llama-swap#1110) and `hooks.on_startup.profile` (#1053). `setParams`
 * keys ending in `?` (#1075) need nothing: the published schema allows any `setParams` key.
 */
function addLaterKeys(document: Record<string, unknown>): void {
  const top = document.properties as Record<string, Record<string, unknown>>;
  top.globalConcurrencyLimit = {
    type: 'integer',
    minimum: 0,
    default: 0,
    description: 'Requests admitted at once over all models; past it llama-swap answers 429 at once. 0 = no limit.',
  };
  const hooks = top.hooks as { properties: { on_startup: { properties: Record<string, unknown> } } };
  hooks.properties.on_startup.properties.profile = {
    type: 'string',
    description: 'Profile activated at start and after every config reload.',
  };
}
