/**
 * One entry per snippet: how it is tested, and the lines that must carry the key. Typed by
 * snippet id, so a new snippet without an entry fails the type-check, and the catalogue test
 * fails at run time too. Each `*.test.ts` here takes the snippets of its kind from this table.
 */
import { SNIPPETS, type SnippetId } from '../../src/snippets/index.js';

/**
 * - curl: executed verbatim with curl against the gateway;
 * - shell: executed verbatim with bash, the program it starts replaced by a recorder;
 * - node: written to an .mjs file and run with node, with the real npm packages;
 * - python: compiled with python3 -m py_compile;
 * - config: parsed as JSON / YAML / TOML / .env, values used for real requests;
 * - fields: the form fields it lists, values used for real requests.
 */
export type CheckKind = 'curl' | 'shell' | 'node' | 'python' | 'config' | 'fields';

/** The origin the key-placement test renders with. */
export const ORIGIN = 'http://192.168.1.5:3000';
/** The Ollama door on the same host, at Ollama's port (no ollamaOrigin in the context). */
export const OLLAMA_ORIGIN = 'http://192.168.1.5:11434';

export interface SnippetCheck {
  kind: CheckKind;
  /**
   * Every line that carries the key `k`, whitespace runs collapsed; in this order and nowhere
   * else. Rendered with the embedding model set.
   */
  keyLines(k: string): string[];
}

const bearerHeader = (k: string) => `-H "Authorization: Bearer ${k}" \\`;

export const CHECKS: Record<SnippetId, SnippetCheck> = {
  'curl-openai-chat': { kind: 'curl', keyLines: (k) => [bearerHeader(k)] },
  'curl-openai-chat-stream': { kind: 'curl', keyLines: (k) => [bearerHeader(k)] },
  'curl-anthropic-messages': { kind: 'curl', keyLines: (k) => [`-H "x-api-key: ${k}" \\`] },
  'curl-models': { kind: 'curl', keyLines: (k) => [`curl ${ORIGIN}/v1/models -H "Authorization: Bearer ${k}"`] },
  'curl-embeddings': {
    kind: 'curl',
    keyLines: (k) => [`-H "Content-Type: application/json" -H "Authorization: Bearer ${k}" \\`],
  },
  'python-openai': { kind: 'python', keyLines: (k) => [`client = OpenAI(base_url="${ORIGIN}/v1", api_key="${k}")`] },
  'python-openai-stream': {
    kind: 'python',
    keyLines: (k) => [`client = OpenAI(base_url="${ORIGIN}/v1", api_key="${k}")`],
  },
  'python-anthropic': { kind: 'python', keyLines: (k) => [`client = Anthropic(base_url="${ORIGIN}", api_key="${k}")`] },
  'typescript-openai': {
    kind: 'node',
    keyLines: (k) => [`const client = new OpenAI({ baseURL: "${ORIGIN}/v1", apiKey: "${k}" });`],
  },
  'typescript-anthropic': {
    kind: 'node',
    keyLines: (k) => [`const client = new Anthropic({ baseURL: "${ORIGIN}", apiKey: "${k}" });`],
  },
  'typescript-ai-sdk': { kind: 'node', keyLines: (k) => [`apiKey: "${k}",`] },
  'home-assistant-local-openai': { kind: 'fields', keyLines: (k) => [`API key: ${k}`] },
  'home-assistant-extended-openai': { kind: 'fields', keyLines: (k) => [`API Key: ${k}`] },
  'claude-code-settings': { kind: 'config', keyLines: (k) => [`"ANTHROPIC_AUTH_TOKEN": "${k}",`] },
  'claude-code-shell': { kind: 'shell', keyLines: (k) => [`export ANTHROPIC_AUTH_TOKEN="${k}"`] },
  'claude-code-preflight': {
    kind: 'curl',
    keyLines: (k) => [`-H "Authorization: Bearer ${k}" -H "anthropic-version: 2023-06-01" \\`],
  },
  'opencode-json': { kind: 'config', keyLines: (k) => [`"apiKey": "${k}"`] },
  'aider-shell': { kind: 'shell', keyLines: (k) => [`export OPENAI_API_KEY=${k}`] },
  // Codex, Zed and LibreChat name the key's variable in their config files; the key itself goes
  // in the companion snippet.
  'codex-config': { kind: 'config', keyLines: () => [] },
  'codex-shell': { kind: 'shell', keyLines: (k) => [`export GATEHOUSE_API_KEY="${k}"`] },
  'continue-yaml': { kind: 'config', keyLines: (k) => [`apiKey: ${k}`, `apiKey: ${k}`] },
  'zed-settings': { kind: 'config', keyLines: () => [] },
  'zed-key': { kind: 'shell', keyLines: (k) => [`export GATEHOUSE_API_KEY="${k}"`] },
  'open-webui-docker': { kind: 'shell', keyLines: (k) => [`-e OPENAI_API_KEY=${k} \\`] },
  'open-webui-admin': { kind: 'fields', keyLines: (k) => [`Key: ${k}`] },
  'librechat-yaml': { kind: 'config', keyLines: () => [] },
  'librechat-env': { kind: 'config', keyLines: (k) => [`GATEHOUSE_API_KEY=${k}`] },
  // Home Assistant and Copilot cannot send a key: keyless calls act as GATEHOUSE_OLLAMA_KEY's key.
  'ollama-home-assistant': { kind: 'fields', keyLines: () => [] },
  'ollama-open-webui': { kind: 'fields', keyLines: (k) => [`Key: ${k}`] },
  'ollama-vscode-copilot': { kind: 'config', keyLines: () => [] },
  'ollama-javascript': { kind: 'node', keyLines: (k) => [`headers: { Authorization: "Bearer ${k}" },`] },
  'ollama-python': {
    kind: 'python',
    keyLines: (k) => [`client = Client(host="${OLLAMA_ORIGIN}", headers={"Authorization": "Bearer ${k}"})`],
  },
};

/** The snippets a test file of this kind must cover, in page order. */
function snippetsOfKind(kind: CheckKind) {
  return SNIPPETS.filter((s) => CHECKS[s.id].kind === kind);
}

/** Fails a kind's test file when a snippet of its kind has no specific assertions there. */
export function requireCases<T>(kind: CheckKind, cases: Partial<Record<SnippetId, T>>): Array<[SnippetId, T]> {
  return snippetsOfKind(kind).map((s) => {
    const c = cases[s.id];
    if (c === undefined) throw new Error(`snippet ${s.id} (${kind}) has no case in its test file`);
    return [s.id, c];
  });
}
