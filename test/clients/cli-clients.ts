/**
 * How the matrix runs each coding-agent CLI: its pinned npm release, the configuration its docs
 * give for a custom gateway (docs/clients-tested.md), and how to read its machine-readable output.
 * Every run points the CLI at Gatehouse only: a dead loopback proxy catches anything else it
 * would fetch, and each CLI's own switches turn off update checks and telemetry.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { NpmClient } from '../helpers/npm-clients.js';
import { cleanEnv } from '../helpers/programs.js';
import { CHAT_MODEL, REFUSED_MODEL } from './matrix.js';

/** One JSON line of a CLI's output; `any` keeps the field paths readable. */
// eslint-disable-next-line @typescript-eslint/no-explicit-any -- see above
export type Event = Record<string, any>;

export interface Invocation {
  args: string[];
  env: Record<string, string>;
  cwd: string;
}

export interface CliClient {
  name: string;
  npm: NpmClient;
  /** Writes the client's configuration under `home` and says how to ask it `prompt`. */
  invocation(o: { url: string; key: string; model: string; home: string; prompt: string }): Invocation;
  /** The final answer the CLI printed. */
  answer(events: Event[]): string | undefined;
  /** The tool the simulator's call must run: the first usable tool the CLI declares. */
  tool: string;
  /** The tools the model called, in order, each with a result the CLI sent back, and whether it ran without error. */
  toolRoundTrips(events: Event[]): ToolRun[];
  /** The error the CLI reported, as it showed it. */
  error(events: Event[]): string | undefined;
}

export interface ToolRun {
  name: string;
  ok: boolean;
  /** What the tool gave back (or its error), for the transcript. */
  output: string;
}

/** Any request that is not for 127.0.0.1 goes to this dead port instead of leaving the machine. */
const OFFLINE: Record<string, string> = {
  HTTPS_PROXY: 'http://127.0.0.1:9',
  HTTP_PROXY: 'http://127.0.0.1:9',
  ALL_PROXY: 'http://127.0.0.1:9',
  NO_PROXY: '127.0.0.1,localhost',
};

/** What the file the simulator's tool call names holds: a read that worked shows it. */
export const ALPHA_TEXT = 'the sky over alpha is clear';

/**
 * The CLI's project: with a file named `alpha`, the simulator's string argument, so reading it
 * works.
 */
function workDir(home: string): string {
  const cwd = join(home, 'project');
  mkdirSync(cwd, { recursive: true });
  writeFileSync(join(cwd, 'alpha'), `${ALPHA_TEXT}\n`);
  return cwd;
}

const CLAUDE_CODE: CliClient = {
  name: 'claude-code',
  npm: { pkg: '@anthropic-ai/claude-code', version: '2.1.332', bin: 'claude' },
  invocation: ({ url, key, model, home, prompt }) => ({
    // Read alone: the simulator calls the first usable tool, and reads the project's file "alpha".
    args: ['-p', prompt, '--output-format', 'stream-json', '--verbose', '--tools', 'Read', '--strict-mcp-config'],
    env: cleanEnv(home, {
      ...OFFLINE,
      ANTHROPIC_BASE_URL: url,
      ANTHROPIC_AUTH_TOKEN: key,
      ANTHROPIC_MODEL: model,
      ANTHROPIC_DEFAULT_OPUS_MODEL: model,
      ANTHROPIC_DEFAULT_SONNET_MODEL: model,
      ANTHROPIC_DEFAULT_HAIKU_MODEL: model,
      CLAUDE_CODE_SUBAGENT_MODEL: model,
      CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC: '1',
      DISABLE_TELEMETRY: '1',
      DISABLE_AUTOUPDATER: '1',
      DISABLE_ERROR_REPORTING: '1',
      DISABLE_BUG_COMMAND: '1',
    }),
    cwd: workDir(home),
  }),
  tool: 'Read',
  answer: (events) => events.find((e) => e.type === 'result' && !e.is_error)?.result,
  toolRoundTrips(events) {
    const blocks = (role: string) =>
      events.filter((e) => e.type === role).flatMap((e) => (e.message?.content ?? []) as Event[]);
    const results = new Map(
      blocks('user').flatMap((b) => (b.type === 'tool_result' ? [[b.tool_use_id as string, b] as const] : [])),
    );
    return blocks('assistant').flatMap((b) => {
      const result = b.type === 'tool_use' ? results.get(b.id) : undefined;
      return result ? [{ name: b.name, ok: result.is_error !== true, output: JSON.stringify(result.content) }] : [];
    });
  },
  error: (events) => events.find((e) => e.type === 'result' && e.is_error)?.result,
};

const OPENCODE: CliClient = {
  name: 'opencode',
  npm: { pkg: 'opencode-ai', version: '1.18.33', bin: 'opencode' },
  invocation({ url, key, model, home, prompt }) {
    const config = join(home, 'opencode.json');
    const limit = { context: 32768, output: 1024 };
    writeFileSync(
      config,
      JSON.stringify({
        autoupdate: false,
        share: 'disabled',
        // Only `read`: the simulator calls the first usable tool, and reads the project's file "alpha"
        // (the search tools would try to download ripgrep).
        permission: { '*': 'deny', read: 'allow' },
        provider: {
          gatehouse: {
            npm: '@ai-sdk/openai-compatible',
            name: 'Gatehouse',
            options: { baseURL: `${url}/v1`, apiKey: '{env:GATEHOUSE_API_KEY}' },
            models: { [CHAT_MODEL]: { limit }, [REFUSED_MODEL]: { limit } },
          },
        },
        model: `gatehouse/${model}`,
        small_model: `gatehouse/${model}`,
      }),
    );
    return {
      args: ['run', '--format', 'json', '-m', `gatehouse/${model}`, prompt],
      env: cleanEnv(home, {
        ...OFFLINE,
        GATEHOUSE_API_KEY: key,
        OPENCODE_CONFIG: config,
        OPENCODE_DISABLE_AUTOUPDATE: '1',
        OPENCODE_DISABLE_MODELS_FETCH: '1',
        OPENCODE_DISABLE_SHARE: '1',
        OPENCODE_DISABLE_LSP_DOWNLOAD: '1',
        OPENCODE_DISABLE_DEFAULT_PLUGINS: '1',
        OPENCODE_DISABLE_CLAUDE_CODE: '1',
        OPENCODE_DISABLE_EXTERNAL_SKILLS: '1',
        OPENCODE_PURE: '1',
      }),
      cwd: workDir(home),
    };
  },
  tool: 'read',
  answer: (events) =>
    events
      .filter((e) => e.type === 'text')
      .map((e) => e.part.text as string)
      .at(-1),
  toolRoundTrips(events) {
    // A tool part is followed by the next step only once its result went back to the model.
    return events.flatMap((e, i) =>
      e.type === 'tool_use' && events.slice(i).some((n) => n.type === 'step_start')
        ? [
            {
              name: e.part.tool as string,
              ok: e.part.state?.status === 'completed',
              output: JSON.stringify(e.part.state?.output ?? e.part.state?.error),
            },
          ]
        : [],
    );
  },
  error: (events) => events.find((e) => e.type === 'error')?.error?.data?.message,
};

const CODEX: CliClient = {
  name: 'codex',
  npm: { pkg: '@openai/codex', version: '0.169.0', bin: 'codex' },
  invocation({ url, key, model, home, prompt }) {
    const codexHome = join(home, '.codex');
    mkdirSync(codexHome, { recursive: true });
    writeFileSync(
      join(codexHome, 'config.toml'),
      [
        `model = "${model}"`,
        'model_provider = "gatehouse"',
        'check_for_update_on_startup = false',
        '',
        '[model_providers.gatehouse]',
        'name = "Gatehouse"',
        `base_url = "${url}/v1"`,
        'env_key = "GATEHOUSE_API_KEY"',
        'wire_api = "responses"',
        'request_max_retries = 0',
        'stream_max_retries = 0',
        '',
        '[analytics]',
        'enabled = false',
        '',
      ].join('\n'),
    );
    // The simulator's command is "alpha": a login shell finds it in ~/bin, and it only prints.
    const bin = join(home, 'bin');
    mkdirSync(bin, { recursive: true });
    writeFileSync(join(bin, 'alpha'), `#!/bin/sh\necho '${ALPHA_TEXT}'\n`, { mode: 0o755 });
    for (const profile of ['.profile', '.bash_profile']) writeFileSync(join(home, profile), `PATH="${bin}:$PATH"\n`);
    return {
      // read-only sandbox: a command the model asks for cannot change anything.
      args: ['exec', '--json', '--skip-git-repo-check', '-s', 'read-only', '-m', model, prompt],
      env: cleanEnv(home, { ...OFFLINE, CODEX_HOME: codexHome, GATEHOUSE_API_KEY: key }),
      cwd: workDir(home),
    };
  },
  tool: 'command_execution',
  answer: (events) =>
    events
      .filter((e) => e.type === 'item.completed' && e.item.type === 'agent_message')
      .map((e) => e.item.text as string)
      .at(-1),
  toolRoundTrips(events) {
    // Codex sends a completed tool item's output back on the next request of the turn.
    const done = events.findLastIndex((e) => e.type === 'item.completed' && e.item.type === 'agent_message');
    return events
      .slice(0, Math.max(done, 0))
      .filter((e) => e.type === 'item.completed' && !['agent_message', 'error', 'reasoning'].includes(e.item.type))
      .map((e) => ({
        name: e.item.type as string,
        ok: e.item.status === 'completed' && (e.item.exit_code ?? 0) === 0,
        output: JSON.stringify(e.item),
      }));
  },
  error: (events) => events.find((e) => e.type === 'turn.failed')?.error?.message,
};

export const CLI_CLIENTS = [CLAUDE_CODE, OPENCODE, CODEX];

/** The JSON lines of a CLI's output; other lines (warnings, banners) are left out. */
export function jsonLines(text: string): Event[] {
  return text.split('\n').flatMap((line) => {
    if (!line.startsWith('{')) return [];
    try {
      return [JSON.parse(line) as Event];
    } catch {
      return [];
    }
  });
}
