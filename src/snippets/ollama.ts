/**
 * Clients that speak only Ollama's API, through the Ollama door (GATEHOUSE_OLLAMA_LISTEN, its own
 * listener; docs/ollama.md): Home Assistant's Ollama integration, Open WebUI's Ollama connection,
 * GitHub Copilot in VS Code, and the `ollama` JavaScript and Python clients.
 */
import { defineSnippet } from './define.js';
import { optionalKey } from './keys.js';
import { lines, str } from './quoting.js';
import { containerOrigin, OLLAMA_PORT, ollamaOrigin } from './urls.js';
import type { SnippetContext } from './types.js';

/** The door's base URL: what the page was told, else Ollama's port on the gateway's host. */
export function ollamaBaseUrl(ctx: SnippetContext): string {
  return ctx.ollamaOrigin ?? ollamaOrigin(ctx.origin);
}

/** How `/api/tags` lists a model: an id without a tag as `<id>:latest`. */
function ollamaName(model: string): string {
  return model.includes(':') ? model : `${model}:latest`;
}

/** `  Label:  value`, labels padded so the values line up. */
function fields(rows: Array<[string, string]>): string {
  const width = Math.max(...rows.map(([label]) => label.length)) + 1;
  return lines(...rows.map(([label, value]) => `     ${`${label}:`.padEnd(width)}  ${value}`));
}

const KEYLESS =
  'It sends no key: calls without one act as the key GATEHOUSE_OLLAMA_KEY names (set it on the gateway, ' +
  'e.g. to a key for this client); without that setting they get 401 once any key exists.';
const NO_MANAGEMENT = "Pulling, copying or deleting models answers 501: models are managed in llama-swap's config.";
const NUM_CTX =
  "The context size is llama-swap's (llama-server -c): a context window set in the client (num_ctx) is ignored.";

const homeAssistantOllama = defineSnippet({
  id: 'ollama-home-assistant',
  title: 'Home Assistant: Ollama integration',
  client: 'Home Assistant (Ollama)',
  group: 'ollama',
  language: 'text',
  where: 'Home Assistant: Settings → Devices & Services → Add Integration → "Ollama" (built in, no HACS).',
  pitfalls: [
    `The URL is the Ollama door's (port ${OLLAMA_PORT} unless GATEHOUSE_OLLAMA_LISTEN says otherwise), without ` +
      '/api or /v1.',
    `Home Assistant's Ollama integration has no key field. ${KEYLESS}`,
    "Controlling devices needs a model that supports tool calling, and Assist's prompt is long.",
    NUM_CTX,
    "Use the gateway's LAN address, not localhost: Home Assistant usually runs in its own container or machine.",
  ],
  baseUrlKind: 'ollama',
  keyRequired: false,
  needs: ['models-list'],
  keyField: 'GATEHOUSE_OLLAMA_KEY on the gateway',
  // Home Assistant never carries the key; the pitfalls say how keyless calls are authenticated.
  note: () => undefined,
  render: (ctx) =>
    lines(
      '1. Settings → Devices & Services → Add Integration → "Ollama":',
      fields([['URL', ollamaBaseUrl(ctx)]]),
      '2. On the new entry → Add conversation agent:',
      fields([
        ['Model', ollamaName(ctx.model)],
        ['Control Home Assistant', 'Assist'],
      ]),
      '3. Settings → Voice assistants → pick the new agent as Conversation agent, ' +
        'and expose the entities it may control.',
    ),
});

const openWebuiOllama = defineSnippet({
  id: 'ollama-open-webui',
  title: 'Open WebUI: Ollama connection',
  client: 'Open WebUI (Ollama)',
  group: 'ollama',
  language: 'text',
  where: 'Open WebUI → Admin Panel → Settings → Connections → Ollama API → + (Add Connection).',
  pitfalls: [
    'The URL has no /api and no /v1: Open WebUI appends /api/tags, /api/chat… itself.',
    'Open WebUI lists the models from /api/tags with the key: a key limited to some models shows only those.',
    NO_MANAGEMENT,
    'Inside a container localhost is the container itself: use host.docker.internal (with ' +
      "--add-host=host.docker.internal:host-gateway on Linux) or the gateway's LAN address.",
  ],
  baseUrlKind: 'ollama',
  keyRequired: false,
  needs: ['models-list'],
  keyField: 'the Key field (Auth: Bearer)',
  render: (ctx) => {
    const key = optionalKey(ctx.key);
    return lines(
      'Admin Panel → Settings → Connections → Ollama API → + (Add Connection):',
      `  URL:   ${containerOrigin(ollamaBaseUrl(ctx)).origin}`,
      `  Auth:  ${key === undefined ? 'None' : 'Bearer'}`,
      key !== undefined && `  Key:   ${key}`,
      'Verify the connection, then Save. The models appear from GET /api/tags.',
    );
  },
});

const copilotOllama = defineSnippet({
  id: 'ollama-vscode-copilot',
  title: 'GitHub Copilot (VS Code): Ollama provider',
  client: 'GitHub Copilot (VS Code)',
  group: 'ollama',
  language: 'json',
  where:
    'VS Code settings.json (Preferences: Open User Settings (JSON)), merged into the existing object; then ' +
    'Chat → model picker → Manage Models → Ollama, and tick the models.',
  pitfalls: [
    'The endpoint has no /api and no /v1.',
    `Copilot's Ollama provider has no key field. ${KEYLESS}`,
    "Agent mode offers only models whose /api/show lists the tools capability (llama-swap's capabilities metadata).",
    'Inline completions still come from GitHub; only Chat uses this provider.',
  ],
  baseUrlKind: 'ollama',
  keyRequired: false,
  needs: ['models-list'],
  keyField: 'GATEHOUSE_OLLAMA_KEY on the gateway',
  // The settings never carry the key; the pitfalls say how keyless calls are authenticated.
  note: () => undefined,
  render: (ctx) => JSON.stringify({ 'github.copilot.chat.byok.ollamaEndpoint': ollamaBaseUrl(ctx) }, null, 2),
});

/** The Authorization header's value, or undefined in open mode (the snippet then sends none). */
function bearer(ctx: SnippetContext): string | undefined {
  const key = optionalKey(ctx.key);
  return key === undefined ? undefined : str(`Bearer ${key}`);
}

const javascriptOllama = defineSnippet({
  id: 'ollama-javascript',
  title: 'JavaScript: ollama',
  client: 'ollama (npm)',
  group: 'ollama',
  language: 'typescript',
  where:
    'Save as app.mjs, npm install ollama, then node app.mjs (Node.js 20+); as TypeScript: app.mts, npx tsx app.mts.',
  pitfalls: [
    'host is the Ollama door, without /api: the client appends /api/chat itself.',
    'The key goes in the Authorization header (headers option); the default export talks to localhost:11434 ' +
      'without one, so create a client with new Ollama({...}).',
    NO_MANAGEMENT,
  ],
  baseUrlKind: 'ollama',
  keyRequired: false,
  keyField: 'the Authorization header',
  render: (ctx) => {
    const header = bearer(ctx);
    const request = lines(`  model: ${str(ctx.model)},`, '  messages: [{ role: "user", content: "Hello!" }],');
    return lines(
      'import { Ollama } from "ollama";',
      '',
      'const ollama = new Ollama({',
      `  host: ${str(ollamaBaseUrl(ctx))},`,
      header !== undefined && `  headers: { Authorization: ${header} },`,
      '});',
      '',
      'const response = await ollama.chat({',
      request,
      '});',
      'console.log(response.message.content);',
      '',
      'const stream = await ollama.chat({',
      request,
      '  stream: true,',
      '});',
      'for await (const part of stream) process.stdout.write(part.message.content);',
      'process.stdout.write("\\n");',
    );
  },
});

const pythonOllama = defineSnippet({
  id: 'ollama-python',
  title: 'Python: ollama',
  client: 'ollama (Python)',
  group: 'ollama',
  language: 'python',
  where: 'A Python file, after pip install ollama.',
  pitfalls: [
    'host is the Ollama door, without /api.',
    'The key goes in the Authorization header (headers=); the module-level ollama.chat() talks to ' +
      'localhost:11434 without one, so create a Client.',
    NO_MANAGEMENT,
  ],
  baseUrlKind: 'ollama',
  keyRequired: false,
  keyField: 'the Authorization header',
  render: (ctx) => {
    const header = bearer(ctx);
    const args = lines(`    model=${str(ctx.model)},`, '    messages=[{"role": "user", "content": "Hello!"}],');
    return lines(
      'from ollama import Client',
      '',
      header === undefined
        ? `client = Client(host=${str(ollamaBaseUrl(ctx))})`
        : `client = Client(host=${str(ollamaBaseUrl(ctx))}, headers={"Authorization": ${header}})`,
      '',
      'response = client.chat(',
      args,
      ')',
      'print(response.message.content)',
      '',
      '# streaming',
      'for part in client.chat(',
      args,
      '    stream=True,',
      '):',
      '    print(part.message.content, end="", flush=True)',
      'print()',
    );
  },
});

export const OLLAMA_SNIPPETS = [
  homeAssistantOllama,
  openWebuiOllama,
  copilotOllama,
  javascriptOllama,
  pythonOllama,
] as const;
