/** Chat web UIs: Open WebUI and LibreChat, both usually run in Docker. */
import { defineSnippet } from './define.js';
import { KEY_ENV_VAR, optionalKey, requiredKey } from './keys.js';
import { lines, shWord, str } from './quoting.js';
import { containerOrigin, openaiBaseUrl, originPort } from './urls.js';
import type { SnippetContext } from './types.js';

const CONTAINER =
  'Inside a container localhost is the container itself: use host.docker.internal (with ' +
  "--add-host=host.docker.internal:host-gateway on Linux) or the gateway's LAN address.";

/** Open WebUI's documented example maps host port 3000, the gateway's own port; pick another. */
function openWebuiPort(ctx: SnippetContext): number {
  return originPort(ctx.origin) === 8080 ? 8081 : 8080;
}

const OPEN_WEBUI_PITFALLS = [
  'The URL ends in /v1.',
  'Open WebUI lists models from GET /v1/models with the key: a key that cannot list models leaves the ' +
    'model list empty.',
  CONTAINER,
];

const openWebuiDocker = defineSnippet({
  id: 'open-webui-docker',
  title: 'Open WebUI: docker run',
  client: 'Open WebUI',
  group: 'chat-uis',
  language: 'bash',
  where:
    'The shell of the machine that will run Open WebUI (needs Docker); then open Open WebUI on the host port it maps.',
  pitfalls: [
    "Port clash: Open WebUI's own example maps host port 3000, the gateway's port; this command maps " +
      '8080 instead (8081 if the gateway itself is on 8080).',
    'These variables only seed the settings on the first start; later changes go through Admin Panel → ' +
      'Settings → Connections (or set ENABLE_PERSISTENT_CONFIG=false).',
    ...OPEN_WEBUI_PITFALLS,
  ],
  baseUrlKind: 'openai',
  keyRequired: false,
  needs: ['models-list'],
  keyField: '-e OPENAI_API_KEY=<key>',
  render: (ctx) => {
    const { origin, viaHostGateway } = containerOrigin(ctx.origin);
    const port = openWebuiPort(ctx);
    const key = optionalKey(ctx.key);
    return lines(
      `docker run -d -p ${port}:8080 \\`,
      viaHostGateway && '  --add-host=host.docker.internal:host-gateway \\',
      `  -e OPENAI_API_BASE_URL=${shWord(openaiBaseUrl(origin))} \\`,
      key !== undefined && `  -e OPENAI_API_KEY=${shWord(key)} \\`,
      '  -v open-webui:/app/backend/data \\',
      '  --name open-webui --restart always \\',
      '  ghcr.io/open-webui/open-webui:main',
    );
  },
});

const openWebuiAdmin = defineSnippet({
  id: 'open-webui-admin',
  title: 'Open WebUI: admin settings',
  client: 'Open WebUI',
  group: 'chat-uis',
  language: 'text',
  where:
    'Open WebUI → Admin Panel → Settings → Connections → OpenAI API → + (works any time, and is the only ' +
    'way after the first start).',
  pitfalls: OPEN_WEBUI_PITFALLS,
  baseUrlKind: 'openai',
  keyRequired: false,
  needs: ['models-list'],
  keyField: 'the Key field',
  render: (ctx) =>
    lines(
      'Admin Panel → Settings → Connections → OpenAI API → + (Add Connection):',
      `  URL:  ${openaiBaseUrl(containerOrigin(ctx.origin).origin)}`,
      `  Key:  ${optionalKey(ctx.key) ?? '(leave empty)'}`,
      'Verify the connection, then Save. The models appear from GET /v1/models.',
    ),
});

const LIBRECHAT_VERSION = '1.3.17';

const librechatYaml = defineSnippet({
  id: 'librechat-yaml',
  title: 'LibreChat: librechat.yaml',
  client: 'LibreChat',
  group: 'chat-uis',
  language: 'yaml',
  where:
    'librechat.yaml next to docker-compose.yml, bind-mounted to /app/librechat.yaml by ' +
    'docker-compose.override.yml; then docker compose down && docker compose up -d.',
  pitfalls: [
    'baseURL ends at /v1, not /v1/chat/completions.',
    'An endpoint without name, baseURL, apiKey and models is silently dropped; two endpoints with the same ' +
      'name replace each other.',
    `Use the version from your LibreChat's librechat.example.yaml; a mismatch only logs a notice.`,
    'A schema error stops the server: read docker compose logs api.',
    CONTAINER,
  ],
  baseUrlKind: 'openai',
  keyRequired: true,
  needs: ['models-list'],
  keyField: `${KEY_ENV_VAR} in .env`,
  // The file names the variable, not the key (see librechat-env).
  note: () => undefined,
  render: (ctx) =>
    lines(
      `version: ${LIBRECHAT_VERSION}   # use the value from your LibreChat's librechat.example.yaml; a ` +
        `mismatch only logs a notice`,
      'cache: true',
      'endpoints:',
      '  custom:',
      '    - name: "Gatehouse"',
      `      apiKey: "\${${KEY_ENV_VAR}}"`,
      `      baseURL: ${str(openaiBaseUrl(containerOrigin(ctx.origin).origin))}`,
      '      models:',
      `        default: [${str(ctx.model)}]`,
      '        fetch: true',
      '      titleConvo: true',
      '      titleModel: "current_model"',
      '      modelDisplayLabel: "Gatehouse"',
    ),
});

const librechatEnv = defineSnippet({
  id: 'librechat-env',
  title: 'LibreChat: .env',
  client: 'LibreChat',
  group: 'chat-uis',
  language: 'text',
  where: "LibreChat's .env file (next to librechat.yaml), added as a new line.",
  pitfalls: [
    'LibreChat drops an endpoint whose apiKey is empty, so open mode uses a placeholder.',
    'To let each user enter their own key instead, write apiKey: "user_provided" in librechat.yaml.',
  ],
  baseUrlKind: 'openai',
  keyRequired: true,
  keyField: KEY_ENV_VAR,
  render: (ctx) => `${KEY_ENV_VAR}=${requiredKey(ctx.key)}`,
});

export const CHAT_UI_SNIPPETS = [openWebuiDocker, openWebuiAdmin, librechatYaml, librechatEnv] as const;
