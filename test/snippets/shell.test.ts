/**
 * Shell snippets that start another program (claude, aider, codex, zed, docker), executed
 * verbatim with bash. The program is replaced by a recorder on PATH that saves its arguments
 * and environment; the test then makes the request that program would make, with those values,
 * against a real gateway.
 */
import { join } from 'node:path';
import { parse as parseToml } from 'smol-toml';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  KEY_ENV_VAR,
  NO_KEY_PLACEHOLDER,
  SNIPPETS,
  type SnippetContext,
  type SnippetId,
} from '../../src/snippets/index.js';
import { requireCases } from './expectations.js';
import {
  expectAnthropicMessage,
  expectModelsList,
  expectOpenaiChat,
  expectResponses,
  fromContainer,
  installRecorders,
  liveContext,
  MODEL,
  requireProgram,
  runRecorded as runRecordedIn,
  scratchDir,
  startLiveGateways,
  type LiveGateways,
  type Recorded,
} from './harness.js';

interface ShellCase {
  program: string;
  /** Checks what the program was started with, then makes its request; `key` is what it should send. */
  check(recorded: Recorded, ctx: SnippetContext, key: string | undefined): Promise<void>;
}

const render = (id: SnippetId, ctx: SnippetContext) => SNIPPETS.find((s) => s.id === id)!.render(ctx);
/** A variable that a user's shell may still export from another tool. */
const LEFTOVER = { ANTHROPIC_API_KEY: 'sk-ant-leftover-from-another-tool' };

const CASES = requireCases<ShellCase>('shell', {
  'claude-code-shell': {
    program: 'claude',
    async check({ argv, env }, ctx, key) {
      expect(argv).toEqual([]);
      expect(env.ANTHROPIC_BASE_URL).toBe(ctx.origin);
      expect(env.ANTHROPIC_API_KEY).toBeUndefined();
      expect(env.ANTHROPIC_AUTH_TOKEN).toBe(key ?? NO_KEY_PLACEHOLDER);
      for (const name of [
        'ANTHROPIC_MODEL',
        'ANTHROPIC_DEFAULT_OPUS_MODEL',
        'ANTHROPIC_DEFAULT_SONNET_MODEL',
        'ANTHROPIC_DEFAULT_HAIKU_MODEL',
      ])
        expect(env[name], name).toBe(MODEL);
      // Claude Code: POST {ANTHROPIC_BASE_URL}/v1/messages?beta=true, Authorization: Bearer {ANTHROPIC_AUTH_TOKEN}.
      await expectAnthropicMessage(env.ANTHROPIC_BASE_URL!, env.ANTHROPIC_AUTH_TOKEN!, env.ANTHROPIC_MODEL!, 'bearer');
    },
  },
  'aider-shell': {
    program: 'aider',
    async check({ argv, env }, ctx, key) {
      expect(argv).toEqual(['--model', `openai/${MODEL}`]);
      expect(env.OPENAI_API_BASE).toBe(`${ctx.origin}/v1`);
      expect(env.OPENAI_API_KEY).toBe(key ?? NO_KEY_PLACEHOLDER);
      // Aider (LiteLLM) strips the openai/ prefix and posts to {OPENAI_API_BASE}/chat/completions.
      await expectOpenaiChat(env.OPENAI_API_BASE!, env.OPENAI_API_KEY, argv[1]!.replace(/^openai\//, ''));
    },
  },
  'codex-shell': {
    program: 'codex',
    async check({ argv, env }, ctx, key) {
      expect(argv).toEqual([]);
      // With its partner config.toml: base_url from the file, the key from the variable env_key names.
      const config = parseToml(render('codex-config', ctx)) as {
        model: string;
        model_provider: string;
        model_providers: Record<string, { base_url: string; env_key: string }>;
      };
      const provider = config.model_providers[config.model_provider]!;
      expect(provider.env_key).toBe(KEY_ENV_VAR);
      expect(env[provider.env_key]).toBe(key ?? NO_KEY_PLACEHOLDER);
      await expectResponses(provider.base_url, env[provider.env_key]!, config.model);
    },
  },
  'zed-key': {
    program: 'zed',
    async check({ argv, env }, ctx, key) {
      expect(argv).toEqual([]);
      const settings = JSON.parse(render('zed-settings', ctx)) as {
        language_models: {
          openai_compatible: Record<string, { api_url: string; available_models: Array<{ name: string }> }>;
        };
      };
      const [[providerId, provider]] = Object.entries(settings.language_models.openai_compatible) as [
        [string, { api_url: string; available_models: Array<{ name: string }> }],
      ];
      // Zed: the provider id in upper snake case + _API_KEY.
      const variable = `${providerId.toUpperCase().replace(/[^A-Z0-9]/g, '_')}_API_KEY`;
      expect(variable).toBe(KEY_ENV_VAR);
      expect(env[variable]).toBe(key ?? NO_KEY_PLACEHOLDER);
      await expectOpenaiChat(provider.api_url, env[variable], provider.available_models[0]!.name);
    },
  },
  'open-webui-docker': {
    program: 'docker',
    async check({ argv }, ctx, key) {
      const port = new URL(ctx.origin).port;
      const env = Object.fromEntries(
        argv.flatMap((a, i) => (argv[i - 1] === '-e' ? [a.split(/=(.*)/s).slice(0, 2)] : [])),
      ) as Record<string, string>;
      expect(argv.slice(0, 2)).toEqual(['run', '-d']);
      expect(argv[argv.indexOf('-p') + 1]).toBe('8080:8080');
      expect(argv).toContain('--add-host=host.docker.internal:host-gateway');
      expect(env.OPENAI_API_BASE_URL).toBe(`http://host.docker.internal:${port}/v1`);
      expect(env.OPENAI_API_KEY).toBe(key);
      expect(argv.at(-1)).toBe('ghcr.io/open-webui/open-webui:main');
      // Open WebUI lists models, then streams chat completions.
      await expectModelsList(fromContainer(env.OPENAI_API_BASE_URL!), env.OPENAI_API_KEY, MODEL);
      await expectOpenaiChat(fromContainer(env.OPENAI_API_BASE_URL!), env.OPENAI_API_KEY, MODEL, { stream: true });
    },
  },
});

let live: LiveGateways;
let dir: string;
let bin: string;

beforeAll(async () => {
  requireProgram('bash');
  dir = scratchDir('shell');
  bin = installRecorders(
    dir,
    CASES.map(([, c]) => c.program),
  );
  live = await startLiveGateways();
});
afterAll(async () => {
  await live?.close();
});

function runRecorded(text: string, program: string, runDir: string): Promise<Recorded> {
  return runRecordedIn(text, program, { bin, runDir, env: LEFTOVER });
}

describe.each(CASES)('%s', (id, c) => {
  it(`starts ${c.program} with values that work through a protected gateway`, async () => {
    const ctx = liveContext(live, 'protected');
    await c.check(await runRecorded(render(id, ctx), c.program, join(dir, `${id}-protected`)), ctx, live.secret);
  });

  it(`starts ${c.program} with values that work through a gateway in open mode`, async () => {
    const ctx = liveContext(live, 'open');
    const snippet = SNIPPETS.find((s) => s.id === id)!;
    await c.check(
      await runRecorded(render(id, ctx), c.program, join(dir, `${id}-open`)),
      ctx,
      snippet.keyRequired ? NO_KEY_PLACEHOLDER : undefined,
    );
  });
});

describe('shell quoting and placement', () => {
  it('keeps a model id with quotes, spaces and $ intact in the exported variables', async () => {
    const model = `it's "$HOME" \`x\` y`;
    const ctx: SnippetContext = { ...liveContext(live, 'protected'), model };
    const claude = await runRecorded(render('claude-code-shell', ctx), 'claude', join(dir, 'quoting-claude'));
    expect(claude.env.ANTHROPIC_MODEL).toBe(model);
    const aider = await runRecorded(render('aider-shell', ctx), 'aider', join(dir, 'quoting-aider'));
    expect(aider.argv).toEqual(['--model', `openai/${model}`]);
  });

  it("points Open WebUI at a LAN origin directly, without --add-host, and off the gateway's port", () => {
    const text = render('open-webui-docker', {
      origin: 'http://192.168.1.5:8080',
      model: MODEL,
      key: { kind: 'none' },
    });
    expect(text).toContain('-e OPENAI_API_BASE_URL=http://192.168.1.5:8080/v1');
    expect(text).not.toContain('--add-host');
    expect(text).not.toContain('OPENAI_API_KEY');
    expect(text.split('\n')[0]).toBe('docker run -d -p 8081:8080 \\');
  });
});
