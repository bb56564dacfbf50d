/** Editor assistants: Continue and Zed. */
import { contextWindow, defaultContextNote } from './context-window.js';
import { defineSnippet } from './define.js';
import { KEY_ENV_VAR, optionalKey, requiredKey } from './keys.js';
import { lines, shDouble, yamlScalar } from './quoting.js';
import { openaiBaseUrl } from './urls.js';
import type { SnippetContext } from './types.js';

function continueModel(
  ctx: SnippetContext,
  name: string,
  model: string,
  roles: string[],
  capabilities: string[],
): string {
  const key = optionalKey(ctx.key);
  return lines(
    `  - name: ${yamlScalar(name)}`,
    '    provider: openai',
    `    model: ${yamlScalar(model)}`,
    `    apiBase: ${yamlScalar(openaiBaseUrl(ctx.origin))}`,
    key !== undefined && `    apiKey: ${yamlScalar(key)}`,
    '    roles:',
    ...roles.map((r) => `      - ${r}`),
    capabilities.length > 0 && '    capabilities:',
    ...capabilities.map((c) => `      - ${c}`),
  );
}

const continueYaml = defineSnippet({
  id: 'continue-yaml',
  title: 'Continue: config.yaml',
  client: 'Continue',
  group: 'editors',
  language: 'yaml',
  where: '~/.continue/config.yaml (VS Code or JetBrains); add the models to an existing list.',
  pitfalls: [
    'apiBase ends in /v1.',
    'provider: openai is right for any OpenAI-compatible server.',
    'capabilities: [tool_use] makes Agent mode offer tools for model names Continue does not recognise.',
    'To keep the key out of the file, write apiKey: ${{ secrets.GATEHOUSE_API_KEY }} and put ' +
      'GATEHOUSE_API_KEY=<key> in ~/.continue/.env.',
    'Autocomplete is not set up here: it only suits a code (FIM) model.',
  ],
  baseUrlKind: 'openai',
  keyRequired: false,
  keyField: 'apiKey',
  render: (ctx) =>
    lines(
      'name: Gatehouse',
      'version: 1.0.0',
      'schema: v1',
      'models:',
      continueModel(ctx, `${ctx.model} via Gatehouse`, ctx.model, ['chat', 'edit', 'apply'], ['tool_use']),
      ctx.embeddingModel !== undefined && continueModel(ctx, 'Gatehouse embeddings', ctx.embeddingModel, ['embed'], []),
    ),
});

const ZED_PROVIDER = 'gatehouse';

const zedSettings = defineSnippet({
  id: 'zed-settings',
  title: 'Zed: settings.json',
  client: 'Zed',
  group: 'editors',
  language: 'json',
  where:
    'Zed settings.json (Zed → Settings → Open Settings), merged into the existing object; the key is set separately.',
  pitfalls: [
    'api_url ends in /v1.',
    'Zed does not fetch the model list: list every model under available_models.',
    'max_tokens is the context window and is required; the output limit is max_output_tokens.',
    'Zed sends the output limit as max_completion_tokens; set capabilities.max_tokens_parameter to true if ' +
      'a model server only understands max_tokens.',
    'Never put the key in settings.json: Zed reads it from the OS keychain or the environment.',
  ],
  baseUrlKind: 'openai',
  keyRequired: true,
  keyField: `${KEY_ENV_VAR} or Agent Settings → LLM Providers`,
  // The key is never part of settings.json (see zed-key), so there is nothing to note about it.
  note: () => undefined,
  extraNote: (ctx) => defaultContextNote(ctx, 'max_tokens'),
  render: (ctx) => {
    const window = contextWindow(ctx);
    return JSON.stringify(
      {
        language_models: {
          openai_compatible: {
            [ZED_PROVIDER]: {
              api_url: openaiBaseUrl(ctx.origin),
              available_models: [
                {
                  name: ctx.model,
                  display_name: `${ctx.model} (Gatehouse)`,
                  max_tokens: window.context,
                  max_output_tokens: window.output,
                  capabilities: { tools: true, images: false },
                },
              ],
            },
          },
        },
      },
      null,
      2,
    );
  },
});

const zedKey = defineSnippet({
  id: 'zed-key',
  title: 'Zed: key',
  client: 'Zed',
  group: 'editors',
  language: 'bash',
  where:
    `The shell you start Zed from; or paste the key in Agent Settings → LLM Providers → ${ZED_PROVIDER} ` +
    `(kept in the OS keychain).`,
  pitfalls: [
    `Zed derives the variable from the provider id: ${ZED_PROVIDER} → ${KEY_ENV_VAR}.`,
    'Zed reads the environment when it starts: quit it first; launched from a desktop icon it does not see ' +
      'shell exports, so use Agent Settings instead.',
  ],
  baseUrlKind: 'openai',
  keyRequired: true,
  keyField: KEY_ENV_VAR,
  render: (ctx) => lines(`export ${KEY_ENV_VAR}=${shDouble(requiredKey(ctx.key))}`, 'zed'),
});

export const EDITOR_SNIPPETS = [continueYaml, zedSettings, zedKey] as const;
