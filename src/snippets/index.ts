/**
 * Client snippets for the dashboard's Endpoints page: the single source of truth for what a user
 * pastes into curl, an SDK, Home Assistant, a coding agent, an editor, a chat UI or an Ollama client. Each fact
 * comes from the client's own documentation; test/snippets runs or parses every snippet against a real
 * gateway. Browser-safe: no Node built-ins.
 */
import { CHAT_UI_SNIPPETS } from './chat-uis.js';
import { CODING_AGENT_SNIPPETS } from './coding-agents.js';
import { CURL_SNIPPETS } from './curl.js';
import { EDITOR_SNIPPETS } from './editors.js';
import { HOME_ASSISTANT_SNIPPETS } from './home-assistant.js';
import { OLLAMA_SNIPPETS } from './ollama.js';
import { PYTHON_SNIPPETS } from './python.js';
import { TYPESCRIPT_SNIPPETS } from './typescript.js';
import type { Snippet, SnippetContext } from './types.js';

export type { Snippet, SnippetContext, SnippetGroup, SnippetKey, SnippetLanguage, SnippetNeed } from './types.js';
export { anthropicBaseUrl, containerOrigin, normalizeOrigin, ollamaOrigin, openaiBaseUrl } from './urls.js';
export { ollamaBaseUrl } from './ollama.js';
export { KEY_ENV_VAR, NO_KEY_PLACEHOLDER, keyPlaceholder } from './keys.js';
export { EMBEDDING_MODEL_PLACEHOLDER } from './curl.js';

/** Every snippet, in page order: grouped, and within a group as the page lists them. */
export const SNIPPETS = [
  ...CURL_SNIPPETS,
  ...PYTHON_SNIPPETS,
  ...TYPESCRIPT_SNIPPETS,
  ...HOME_ASSISTANT_SNIPPETS,
  ...CODING_AGENT_SNIPPETS,
  ...EDITOR_SNIPPETS,
  ...CHAT_UI_SNIPPETS,
  ...OLLAMA_SNIPPETS,
] as const;

export type SnippetId = (typeof SNIPPETS)[number]['id'];

const BY_ID: ReadonlyMap<string, Snippet> = new Map(SNIPPETS.map((s) => [s.id, s]));

export function getSnippet(id: SnippetId): Snippet {
  const snippet = BY_ID.get(id);
  if (!snippet) throw new Error(`unknown snippet: ${id}`);
  return snippet;
}

export function renderSnippet(id: SnippetId, ctx: SnippetContext): string {
  return getSnippet(id).render(ctx);
}

/** The line to show under a snippet: about a placeholder key or open mode; undefined otherwise. */
export function snippetNote(id: SnippetId, ctx: SnippetContext): string | undefined {
  return getSnippet(id).note(ctx);
}
