/** Coding agents: Claude Code, OpenCode, Aider, Codex CLI. */
import { contextWindow, defaultContextNote } from './context-window.js';
import { defineSnippet } from './define.js';
import { KEY_ENV_VAR, optionalKey, requiredKey } from './keys.js';
import { lines, shDouble, shSingleBody, shWord, str } from './quoting.js';
import { anthropicBaseUrl, openaiBaseUrl } from './urls.js';
import type { SnippetContext } from './types.js';

/**
 * Claude Code's model variables: every tier must name a model the gateway knows, or background
 * (Haiku-tier) calls go out with `claude-*` names.
 */
const claudeCodeEnv = (ctx: SnippetContext): Array<[string, string]> => [
  ['ANTHROPIC_BASE_URL', anthropicBaseUrl(ctx.origin)],
  ['ANTHROPIC_AUTH_TOKEN', requiredKey(ctx.key)],
  ['ANTHROPIC_MODEL', ctx.model],
  ['ANTHROPIC_DEFAULT_OPUS_MODEL', ctx.model],
  ['ANTHROPIC_DEFAULT_SONNET_MODEL', ctx.model],
  ['ANTHROPIC_DEFAULT_HAIKU_MODEL', ctx.model],
  // Claude Code assumes a Claude-sized window for an unknown model and would compact too late.
  ['CLAUDE_CODE_AUTO_COMPACT_WINDOW', String(contextWindow(ctx).context)],
  ['CLAUDE_CODE_MAX_OUTPUT_TOKENS', String(contextWindow(ctx).output)],
];

const CLAUDE_BASE =
  'ANTHROPIC_BASE_URL has no /v1: Claude Code appends /v1/messages itself, so …/v1 gives /v1/v1/messages.';
const CLAUDE_ONE_KEY =
  'Set only one credential: ANTHROPIC_AUTH_TOKEN is sent as Authorization: Bearer; ANTHROPIC_API_KEY ' +
  '(X-Api-Key) asks for approval once and conflicts when both are set, so unset it.';
const CLAUDE_TIERS =
  'Every model tier (ANTHROPIC_MODEL and the OPUS/SONNET/HAIKU defaults) must name a model the gateway ' +
  'serves; otherwise background calls go out as claude-* and fail. CLAUDE_CODE_SUBAGENT_MODEL is optional.';
const CLAUDE_STATUS =
  'Check with /status inside Claude Code: it shows the Anthropic base URL and which credential is active.';
const CLAUDE_EXTRA =
  'Optional: CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1 (fewer calls to Anthropic services); ' +
  'ANTHROPIC_SMALL_FAST_MODEL only for old 1.x releases.';
const CLAUDE_CONTEXT =
  "CLAUDE_CODE_AUTO_COMPACT_WINDOW is the model's context size (llama-server -c): Claude Code otherwise assumes a " +
  "Claude model's window and compacts too late; CLAUDE_CODE_MAX_OUTPUT_TOKENS keeps a reply inside it.";
const CLAUDE_NEEDS_KEY =
  'Claude Code asks for a login when no credential is set, so open mode still needs a placeholder token.';

const claudeCodeSettings = defineSnippet({
  id: 'claude-code-settings',
  title: 'Claude Code: ~/.claude/settings.json',
  client: 'Claude Code',
  group: 'coding-agents',
  language: 'json',
  where:
    "~/.claude/settings.json (your user settings; never a project's committed .claude/settings.json). " +
    'Merge "env" into an existing file.',
  pitfalls: [
    CLAUDE_BASE,
    CLAUDE_ONE_KEY,
    CLAUDE_TIERS,
    CLAUDE_CONTEXT,
    'An ANTHROPIC_API_KEY exported in the shell still applies: unset it.',
    CLAUDE_STATUS,
    CLAUDE_EXTRA,
    CLAUDE_NEEDS_KEY,
  ],
  baseUrlKind: 'anthropic',
  keyRequired: true,
  keyField: 'ANTHROPIC_AUTH_TOKEN',
  extraNote: (ctx) => defaultContextNote(ctx, 'CLAUDE_CODE_AUTO_COMPACT_WINDOW'),
  render: (ctx) => JSON.stringify({ env: Object.fromEntries(claudeCodeEnv(ctx)) }, null, 2),
});

const claudeCodeShell = defineSnippet({
  id: 'claude-code-shell',
  title: 'Claude Code: shell',
  client: 'Claude Code',
  group: 'coding-agents',
  language: 'bash',
  where: 'The shell you start claude from (or your ~/.bashrc / ~/.zshrc without the last line).',
  pitfalls: [CLAUDE_BASE, CLAUDE_ONE_KEY, CLAUDE_TIERS, CLAUDE_CONTEXT, CLAUDE_STATUS, CLAUDE_EXTRA, CLAUDE_NEEDS_KEY],
  baseUrlKind: 'anthropic',
  keyRequired: true,
  keyField: 'ANTHROPIC_AUTH_TOKEN',
  extraNote: (ctx) => defaultContextNote(ctx, 'CLAUDE_CODE_AUTO_COMPACT_WINDOW'),
  render: (ctx) => {
    const [base, token, ...models] = claudeCodeEnv(ctx).map(([name, value]) => `export ${name}=${shDouble(value)}`);
    return lines(base, token, 'unset ANTHROPIC_API_KEY', ...models, 'claude');
  },
});

const claudeCodePreflight = defineSnippet({
  id: 'claude-code-preflight',
  title: 'Claude Code: check URL and key first',
  client: 'Claude Code',
  group: 'coding-agents',
  language: 'bash',
  where: 'Any shell on the machine that will run Claude Code.',
  pitfalls: [
    'A JSON body starting {"id":"msg_ means the URL and key work; a 401 means the key, a 404 usually a /v1 too many.',
    'This sends the key the way Claude Code does with ANTHROPIC_AUTH_TOKEN: Authorization: Bearer.',
  ],
  baseUrlKind: 'anthropic',
  keyRequired: false,
  keyField: 'an -H "Authorization: Bearer <key>" header',
  render: (ctx) => {
    const key = optionalKey(ctx.key);
    const body = `{"model":${str(ctx.model)},"max_tokens":32,"messages":[{"role":"user","content":"ping"}]}`;
    return lines(
      `curl ${anthropicBaseUrl(ctx.origin)}/v1/messages \\`,
      key === undefined
        ? '  -H "anthropic-version: 2023-06-01" \\'
        : `  -H ${shDouble(`Authorization: Bearer ${key}`)} -H "anthropic-version: 2023-06-01" \\`,
      '  -H "content-type: application/json" \\',
      `  -d '${shSingleBody(body)}'`,
    );
  },
});

const opencodeJson = defineSnippet({
  id: 'opencode-json',
  title: 'OpenCode: opencode.json',
  client: 'OpenCode',
  group: 'coding-agents',
  language: 'json',
  where: '~/.config/opencode/opencode.json (global, so the key stays out of project repositories).',
  pitfalls: [
    'baseURL ends in /v1.',
    'OpenCode does not fetch the model list: every model you want must be under "models", with the id ' +
      '/v1/models shows.',
    "limit.context must be the model's real context size (llama-server -c); without a limit OpenCode " +
      'cannot track context use.',
    'small_model keeps title and summary calls on the gateway too.',
    'In a project\'s opencode.json write "apiKey": "{env:GATEHOUSE_API_KEY}" instead of the key, or use ' +
      '/connect → Other with the provider id gatehouse.',
  ],
  baseUrlKind: 'openai',
  keyRequired: false,
  keyField: 'provider.gatehouse.options.apiKey',
  extraNote: (ctx) => defaultContextNote(ctx, 'limit.context'),
  render: (ctx) => {
    const key = optionalKey(ctx.key);
    const config = {
      $schema: 'https://opencode.ai/config.json',
      provider: {
        gatehouse: {
          npm: '@ai-sdk/openai-compatible',
          name: 'Gatehouse',
          options: { baseURL: openaiBaseUrl(ctx.origin), ...(key === undefined ? {} : { apiKey: key }) },
          models: { [ctx.model]: { name: ctx.model, limit: contextWindow(ctx) } },
        },
      },
      model: `gatehouse/${ctx.model}`,
      small_model: `gatehouse/${ctx.model}`,
    };
    return JSON.stringify(config, null, 2);
  },
});

const aiderShell = defineSnippet({
  id: 'aider-shell',
  title: 'Aider',
  client: 'Aider',
  group: 'coding-agents',
  language: 'bash',
  where:
    'The shell you start aider from (or the same keys in .aider.conf.yml: openai-api-base, openai-api-key, model).',
  pitfalls: [
    'The openai/ prefix on the model is mandatory: it selects the OpenAI-compatible route, and Aider ' +
      'strips it before sending.',
    'OPENAI_API_BASE ends in /v1.',
    'The warning about an unknown context window for the model is harmless.',
    'Aider refuses to start without a key, so open mode uses a placeholder.',
  ],
  baseUrlKind: 'openai',
  keyRequired: true,
  keyField: 'OPENAI_API_KEY',
  render: (ctx) =>
    lines(
      `export OPENAI_API_BASE=${shWord(openaiBaseUrl(ctx.origin))}`,
      `export OPENAI_API_KEY=${shWord(requiredKey(ctx.key))}`,
      `aider --model ${shWord(`openai/${ctx.model}`)}`,
    ),
});

const CODEX_RESPONSES =
  'Codex speaks only the Responses API (POST …/v1/responses); wire_api = "chat" stops it at startup. The ' +
  'model server behind the gateway must implement /v1/responses.';

const codexConfig = defineSnippet({
  id: 'codex-config',
  title: 'Codex CLI: ~/.codex/config.toml',
  client: 'Codex CLI',
  group: 'coding-agents',
  language: 'toml',
  where: '~/.codex/config.toml; the top-level lines must come before any [table].',
  pitfalls: [
    CODEX_RESPONSES,
    'base_url ends in /v1, without /responses.',
    'Do not call the provider openai (the built-in one wins) or name it "OpenAI" (Codex then enables ' +
      'OpenAI-only features).',
    `The key comes from the environment variable named by env_key (${KEY_ENV_VAR}), never from this file.`,
    'Keep this file free of profiles: newer releases reportedly moved them out of config.toml.',
    "model_context_window is the model's context size (llama-server -c): Codex has no metadata for the model " +
      'otherwise.',
    'request_max_retries and stream_max_retries are 0 so a refused key fails at once: Codex retries even a 401 ' +
      'or 403 otherwise. Raise stream_max_retries if your network drops long streams.',
  ],
  baseUrlKind: 'openai',
  keyRequired: true,
  needs: ['responses'],
  keyField: `the ${KEY_ENV_VAR} environment variable`,
  // The file names the variable, not the key: the only note is about a default context size.
  note: (ctx) => defaultContextNote(ctx, 'model_context_window'),
  render: (ctx) =>
    lines(
      `model = ${str(ctx.model)}`,
      'model_provider = "gatehouse"',
      `model_context_window = ${contextWindow(ctx).context}`,
      '',
      '[model_providers.gatehouse]',
      'name = "Gatehouse"',
      `base_url = ${str(openaiBaseUrl(ctx.origin))}`,
      `env_key = ${str(KEY_ENV_VAR)}`,
      'wire_api = "responses"',
      'request_max_retries = 0',
      'stream_max_retries = 0',
    ),
});

const codexShell = defineSnippet({
  id: 'codex-shell',
  title: 'Codex CLI: key and start',
  client: 'Codex CLI',
  group: 'coding-agents',
  language: 'bash',
  where:
    'The shell you start codex from (or your ~/.bashrc / ~/.zshrc without the last line), with config.toml in place.',
  pitfalls: [
    CODEX_RESPONSES,
    `Codex stops with "missing environment variable" when ${KEY_ENV_VAR} is unset or empty, so open mode ` +
      `uses a placeholder.`,
  ],
  baseUrlKind: 'openai',
  keyRequired: true,
  needs: ['responses'],
  keyField: KEY_ENV_VAR,
  render: (ctx) => lines(`export ${KEY_ENV_VAR}=${shDouble(requiredKey(ctx.key))}`, 'codex'),
});

export const CODING_AGENT_SNIPPETS = [
  claudeCodeSettings,
  claudeCodeShell,
  claudeCodePreflight,
  opencodeJson,
  aiderShell,
  codexConfig,
  codexShell,
] as const;
