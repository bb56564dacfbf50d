/**
 * Config-file snippets (JSON, YAML, TOML, .env): they parse, carry the base URL of their kind
 * (OpenAI ones end in /v1, Claude Code's never does), the key and the model at the paths the
 * client reads, and those values work against a real gateway.
 */
import { parse as parseToml } from 'smol-toml';
import { parse as parseYaml } from 'yaml';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  KEY_ENV_VAR,
  NO_KEY_PLACEHOLDER,
  SNIPPETS,
  type SnippetContext,
  type SnippetId,
} from '../../src/snippets/index.js';
import { DEFAULT_CONTEXT_TOKENS } from '../../src/snippets/context-window.js';
import { requireCases } from './expectations.js';
import {
  EMBEDDING_MODEL,
  expectAnthropicMessage,
  expectEmbeddings,
  expectModelsList,
  expectOllamaChat,
  expectOllamaTags,
  expectOpenaiChat,
  expectResponses,
  fromContainer,
  liveContext,
  MODEL,
  parseDotenv,
  startLiveGateways,
  type LiveGateways,
} from './harness.js';

/** A parsed config, asserted field by field; `any` keeps the paths readable. */
// eslint-disable-next-line @typescript-eslint/no-explicit-any -- see above
type Json = Record<string, any>;

interface ConfigCase {
  parse(text: string): Json;
  /**
   * Asserts the paths in the parsed config and makes the requests the client would make with
   * them. `key` is what the client sends: the secret, the open-mode placeholder, or nothing.
   */
  check(config: Json, ctx: SnippetContext, key: string | undefined): Promise<void>;
}

const render = (id: SnippetId, ctx: SnippetContext) => SNIPPETS.find((s) => s.id === id)!.render(ctx);

const CASES = requireCases<ConfigCase>('config', {
  'claude-code-settings': {
    parse: JSON.parse,
    async check(config, ctx, key) {
      expect(Object.keys(config)).toEqual(['env']);
      expect(config.env).toEqual({
        ANTHROPIC_BASE_URL: ctx.origin,
        ANTHROPIC_AUTH_TOKEN: key ?? NO_KEY_PLACEHOLDER,
        ANTHROPIC_MODEL: MODEL,
        ANTHROPIC_DEFAULT_OPUS_MODEL: MODEL,
        ANTHROPIC_DEFAULT_SONNET_MODEL: MODEL,
        ANTHROPIC_DEFAULT_HAIKU_MODEL: MODEL,
        CLAUDE_CODE_AUTO_COMPACT_WINDOW: String(DEFAULT_CONTEXT_TOKENS),
        CLAUDE_CODE_MAX_OUTPUT_TOKENS: '8192',
      });
      expect(config.env.ANTHROPIC_BASE_URL).not.toMatch(/\/v1\/?$/);
      await expectAnthropicMessage(
        config.env.ANTHROPIC_BASE_URL,
        config.env.ANTHROPIC_AUTH_TOKEN,
        config.env.ANTHROPIC_DEFAULT_HAIKU_MODEL,
        'bearer',
      );
    },
  },
  'opencode-json': {
    parse: JSON.parse,
    async check(config, ctx, key) {
      expect(config.$schema).toBe('https://opencode.ai/config.json');
      const provider = config.provider.gatehouse;
      expect(provider.npm).toBe('@ai-sdk/openai-compatible');
      expect(provider.options).toEqual({ baseURL: `${ctx.origin}/v1`, ...(key === undefined ? {} : { apiKey: key }) });
      expect(Object.keys(provider.models)).toEqual([MODEL]);
      expect(provider.models[MODEL].limit).toEqual({ context: expect.any(Number), output: expect.any(Number) });
      expect(config.model).toBe(`gatehouse/${MODEL}`);
      expect(config.small_model).toBe(`gatehouse/${MODEL}`);
      const [providerId, model] = (config.model as string).split(/\/(.*)/s);
      expect(config.provider[providerId!]).toBe(provider);
      await expectOpenaiChat(provider.options.baseURL, provider.options.apiKey, model!);
    },
  },
  'codex-config': {
    parse: parseToml,
    async check(config, ctx) {
      // Top-level keys parsed as top-level: they came before the first table.
      expect(config.model).toBe(MODEL);
      expect(config.model_provider).toBe('gatehouse');
      expect(config.model_context_window).toBe(DEFAULT_CONTEXT_TOKENS);
      const provider = config.model_providers[config.model_provider];
      // No retries: Codex would otherwise send a refused key five more times.
      expect(provider).toEqual({
        name: 'Gatehouse',
        base_url: `${ctx.origin}/v1`,
        env_key: KEY_ENV_VAR,
        wire_api: 'responses',
        request_max_retries: 0,
        stream_max_retries: 0,
      });
      expect(config.model_provider).not.toBe('openai');
      expect(provider.name).not.toBe('OpenAI');
      // The key comes from the environment (codex-shell), never from this file.
      const key = ctx.key.kind === 'secret' ? ctx.key.value : NO_KEY_PLACEHOLDER;
      await expectResponses(provider.base_url, key, config.model);
    },
  },
  'continue-yaml': {
    parse: parseYaml,
    async check(config, ctx, key) {
      expect(config).toMatchObject({ name: 'Gatehouse', version: '1.0.0', schema: 'v1' });
      const withKey = key === undefined ? {} : { apiKey: key };
      expect(config.models).toEqual([
        {
          name: `${MODEL} via Gatehouse`,
          provider: 'openai',
          model: MODEL,
          apiBase: `${ctx.origin}/v1`,
          ...withKey,
          roles: ['chat', 'edit', 'apply'],
          capabilities: ['tool_use'],
        },
        {
          name: 'Gatehouse embeddings',
          provider: 'openai',
          model: EMBEDDING_MODEL,
          apiBase: `${ctx.origin}/v1`,
          ...withKey,
          roles: ['embed'],
        },
      ]);
      await expectOpenaiChat(config.models[0].apiBase, config.models[0].apiKey, config.models[0].model);
      await expectEmbeddings(config.models[1].apiBase, config.models[1].apiKey, config.models[1].model);
    },
  },
  'zed-settings': {
    parse: JSON.parse,
    async check(config, ctx) {
      const provider = config.language_models.openai_compatible.gatehouse;
      expect(provider.api_url).toBe(`${ctx.origin}/v1`);
      expect(provider.available_models).toEqual([
        {
          name: MODEL,
          display_name: `${MODEL} (Gatehouse)`,
          max_tokens: expect.any(Number),
          max_output_tokens: expect.any(Number),
          capabilities: { tools: true, images: false },
        },
      ]);
      expect(JSON.stringify(config)).not.toMatch(/sk-|api_key/i);
      const key = ctx.key.kind === 'secret' ? ctx.key.value : NO_KEY_PLACEHOLDER;
      await expectOpenaiChat(provider.api_url, key, provider.available_models[0].name);
    },
  },
  'librechat-yaml': {
    parse: parseYaml,
    async check(config, ctx) {
      expect(typeof config.version).toBe('string');
      const [endpoint, ...others] = config.endpoints.custom;
      expect(others).toEqual([]);
      // The four fields without which LibreChat silently drops the endpoint.
      expect(endpoint).toMatchObject({
        name: 'Gatehouse',
        apiKey: `\${${KEY_ENV_VAR}}`,
        models: { default: [MODEL], fetch: true },
      });
      expect(endpoint.baseURL).toBe(`http://host.docker.internal:${new URL(ctx.origin).port}/v1`);
      expect(JSON.stringify(config)).not.toContain('sk-');
      const key = ctx.key.kind === 'secret' ? ctx.key.value : NO_KEY_PLACEHOLDER;
      await expectModelsList(fromContainer(endpoint.baseURL), key, MODEL);
      await expectOpenaiChat(fromContainer(endpoint.baseURL), key, endpoint.models.default[0]);
    },
  },
  'librechat-env': {
    parse: parseDotenv,
    async check(config, ctx, key) {
      expect(config).toEqual({ [KEY_ENV_VAR]: key ?? NO_KEY_PLACEHOLDER });
      // The variable librechat.yaml reads.
      expect(render('librechat-yaml', ctx)).toContain(`apiKey: "\${${Object.keys(config)[0]}}"`);
      const yaml = parseYaml(render('librechat-yaml', ctx)) as Json;
      await expectOpenaiChat(fromContainer(yaml.endpoints.custom[0].baseURL), config[KEY_ENV_VAR], MODEL);
    },
  },
  // Copilot's Ollama provider sends no key (keyless calls act as GATEHOUSE_OLLAMA_KEY's key) and
  // lists the models from /api/tags, then chats as a stream.
  'ollama-vscode-copilot': {
    parse: JSON.parse,
    async check(config, ctx) {
      expect(config).toEqual({ 'github.copilot.chat.byok.ollamaEndpoint': ctx.ollamaOrigin });
      const endpoint = config['github.copilot.chat.byok.ollamaEndpoint'] as string;
      await expectOllamaTags(endpoint, undefined, MODEL);
      await expectOllamaChat(endpoint, undefined, `${MODEL}:latest`, { stream: true });
    },
  },
});

let live: LiveGateways;

beforeAll(async () => {
  live = await startLiveGateways();
});
afterAll(async () => {
  await live?.close();
});

describe.each(CASES)('%s', (id, c) => {
  const snippet = SNIPPETS.find((s) => s.id === id)!;

  it(`parses as ${snippet.language}, with URL, key and model in place, and they work through a protected gateway`, async () => {
    await c.check(c.parse(render(id, liveContext(live, 'protected'))), liveContext(live, 'protected'), live.secret);
  });

  it('parses, and works through a gateway in open mode', async () => {
    const ctx = liveContext(live, 'open');
    await c.check(c.parse(render(id, ctx)), ctx, snippet.keyRequired ? NO_KEY_PLACEHOLDER : undefined);
  });

  it('still parses with a model id that needs quoting and a placeholder key', () => {
    const model = `weird: "model" #1 'q' \\ \${x}`;
    const ctx: SnippetContext = {
      origin: 'http://192.168.1.5:3000',
      model,
      embeddingModel: model,
      key: { kind: 'prefix', prefix: 'sk-AbC123' },
    };
    const text = render(id, ctx);
    const parsed = c.parse(text);
    // The .env names no model; Copilot picks its models from /api/tags.
    if (id !== 'librechat-env' && id !== 'ollama-vscode-copilot')
      expect(JSON.stringify(parsed)).toContain(JSON.stringify(model).slice(1, -1));
  });
});

describe('Continue without an embedding model', () => {
  it('lists only the chat model', () => {
    const config = parseYaml(
      render('continue-yaml', { origin: 'http://192.168.1.5:3000', model: MODEL, key: { kind: 'none' } }),
    ) as Json;
    expect(config.models).toEqual([
      {
        name: `${MODEL} via Gatehouse`,
        provider: 'openai',
        model: MODEL,
        apiBase: 'http://192.168.1.5:3000/v1',
        roles: ['chat', 'edit', 'apply'],
        capabilities: ['tool_use'],
      },
    ]);
  });
});

describe('the context window OpenCode, Zed, Claude Code and Codex are told about', () => {
  const base: SnippetContext = { origin: 'http://192.168.1.5:3000', model: MODEL, key: { kind: 'none' } };
  const opencodeLimit = (ctx: SnippetContext) => (JSON.parse(render('opencode-json', ctx)) as Json).provider.gatehouse;
  const zedModel = (ctx: SnippetContext) =>
    (JSON.parse(render('zed-settings', ctx)) as Json).language_models.openai_compatible.gatehouse.available_models[0];
  const note = (id: SnippetId, ctx: SnippetContext) => SNIPPETS.find((s) => s.id === id)!.note(ctx) ?? '';

  it('is the size llama-swap declares for the model, with a quarter of it at most for the output, and no note', () => {
    const ctx = { ...base, contextLength: 16384 };
    expect(opencodeLimit(ctx).models[MODEL].limit).toEqual({ context: 16384, output: 4096 });
    expect(zedModel(ctx)).toMatchObject({ max_tokens: 16384, max_output_tokens: 4096 });
    expect(note('opencode-json', ctx)).not.toMatch(/context size/);
    expect(note('zed-settings', ctx)).toBe('');
    const large = { ...base, contextLength: 131072 };
    expect(opencodeLimit(large).models[MODEL].limit).toEqual({ context: 131072, output: 8192 });
    expect((JSON.parse(render('claude-code-settings', ctx)) as Json).env).toMatchObject({
      CLAUDE_CODE_AUTO_COMPACT_WINDOW: '16384',
      CLAUDE_CODE_MAX_OUTPUT_TOKENS: '4096',
    });
    expect(render('claude-code-shell', ctx)).toContain('export CLAUDE_CODE_AUTO_COMPACT_WINDOW="16384"');
    expect(parseToml(render('codex-config', ctx)).model_context_window).toBe(16384);
    for (const id of ['claude-code-settings', 'claude-code-shell', 'codex-config'] as const)
      expect(note(id, ctx)).not.toMatch(/context size/);
  });

  it('is a stated default when llama-swap declares none, and the note says how to set the real one', () => {
    expect(opencodeLimit(base).models[MODEL].limit).toEqual({ context: DEFAULT_CONTEXT_TOKENS, output: 8192 });
    expect(zedModel(base)).toMatchObject({ max_tokens: DEFAULT_CONTEXT_TOKENS, max_output_tokens: 8192 });
    for (const [id, field] of [
      ['opencode-json', 'limit.context'],
      ['zed-settings', 'max_tokens'],
      ['claude-code-settings', 'CLAUDE_CODE_AUTO_COMPACT_WINDOW'],
      ['claude-code-shell', 'CLAUDE_CODE_AUTO_COMPACT_WINDOW'],
      ['codex-config', 'model_context_window'],
    ] as const)
      expect(note(id, base)).toContain(
        `llama-swap declares no context size for ${MODEL}, so ${field} is ${DEFAULT_CONTEXT_TOKENS}: set it to ` +
          'the size the model server runs with (llama-server -c), or declare capabilities.context in ' +
          "llama-swap's config.",
      );
  });
});
