/**
 * The shape of one client snippet. Everything here is plain data plus pure functions so the
 * dashboard can import it in the browser (no `node:` imports anywhere in `src/snippets`).
 */

export type SnippetGroup =
  'curl' | 'python' | 'typescript' | 'home-automation' | 'coding-agents' | 'editors' | 'chat-uis' | 'ollama';

export type SnippetLanguage = 'bash' | 'python' | 'typescript' | 'json' | 'yaml' | 'toml' | 'text';

/** Gateway features a snippet depends on beyond chat, so the page can flag or hide it. */
export type SnippetNeed = 'models-list' | 'responses' | 'embeddings';

/**
 * What the page knows about the key to show:
 * - `secret`: a key just created, shown in full;
 * - `prefix`: an existing key was picked; only its display prefix is known (`sk-3fK9aZ`);
 * - `none`: open mode, no key exists yet, the gateway accepts any or no key.
 */
export type SnippetKey = { kind: 'secret'; value: string } | { kind: 'prefix'; prefix: string } | { kind: 'none' };

export interface SnippetContext {
  /** Scheme, host and port the client reaches the gateway at, e.g. `http://192.168.1.5:3000`. */
  origin: string;
  /** Chat model id as `/v1/models` lists it. */
  model: string;
  /** Embedding model id, for snippets that can use one. */
  embeddingModel?: string;
  /** The chat model's context window in tokens, when llama-swap's config declares it. */
  contextLength?: number;
  /**
   * The Ollama door's address (`http://192.168.1.5:11434`) when GATEHOUSE_OLLAMA_LISTEN is set;
   * without it the Ollama snippets assume Ollama's port on the gateway's host.
   */
  ollamaOrigin?: string;
  key: SnippetKey;
}

export interface Snippet<Id extends string = string> {
  id: Id;
  title: string;
  /** The program or library, shared by the snippets that configure the same client. */
  client: string;
  group: SnippetGroup;
  language: SnippetLanguage;
  /** One line: the file, field or shell the text goes into. */
  where: string;
  pitfalls: readonly string[];
  /**
   * Which base URL the client wants: `…/v1` (OpenAI), the bare origin (Anthropic SDKs, Claude
   * Code), or the Ollama door's own address (Ollama clients).
   */
  baseUrlKind: 'openai' | 'anthropic' | 'ollama';
  /** The client refuses an empty key even when the gateway is in open mode. */
  keyRequired: boolean;
  needs?: readonly SnippetNeed[];
  render(ctx: SnippetContext): string;
  /** One line about the key when the text carries a placeholder or no key; undefined for a real key. */
  note(ctx: SnippetContext): string | undefined;
}
