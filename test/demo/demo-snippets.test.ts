/**
 * Every snippet on the Endpoints page runs unchanged against `npm run demo` in its default state.
 * The demo runs as a process (simulator with its demo models and pace, gateway, a fresh data dir);
 * the snippets are rendered as the page renders them: from GET /api/endpoints and GET /api/models,
 * through the page's own default-model and key logic, with a key made as its "Create a key" button
 * makes one. Each snippet runs as its kind allows, and every call it caused through Gatehouse must
 * have been answered 2xx (read back from the request log).
 */
import { spawnSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { parse as parseToml } from 'smol-toml';
import { parse as parseYaml } from 'yaml';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { CreatedKey, EndpointsInfo, ModelList, UsageRequestPage } from '../../src/admin-api/types.js';
import { SNIPPETS, type Snippet, type SnippetContext, type SnippetId } from '../../src/snippets/index.js';
import {
  allowedModelIds,
  clientOrigin,
  groupSnippets,
  keyNameFor,
  pageSnippets,
  MODEL_PLACEHOLDER,
  modelOptions,
  snippetContext,
  snippetKey,
  type KeyChoice,
} from '../../web/src/lib/endpoints.js';
import { defaultModels, modelUse } from '../../web/src/lib/model-defaults.js';
import { completionText, DEMO_KNOBS } from '../fakes/llama-swap/index.js';
import { startDemo, type DemoProcess } from '../helpers/demo.js';
import { json, rawRequest } from '../helpers/http.js';
import {
  cleanEnv,
  expectAnthropicMessage,
  expectEmbeddings,
  expectModelsList,
  expectOpenaiChat,
  expectResponses,
  fieldsOf,
  fromContainer,
  installRecorders,
  parseDotenv,
  requireProgram,
  run,
  runBash,
  runRecorded,
  scratchDir,
} from '../snippets/harness.js';

/** A parsed config file, read field by field; `any` keeps the paths readable. */
// eslint-disable-next-line @typescript-eslint/no-explicit-any -- see above
type Json = Record<string, any>;

const PROGRAMS = ['claude', 'aider', 'codex', 'zed', 'docker'] as const;
const ADMIN_PASSWORD = 'demo snippets password';

let demo: DemoProcess;
let cookie: string;
let ctx: SnippetContext;
let secret: string;
/** The snippets the page shows for the demo: its Ollama door is off, so not the Ollama group. */
let shown: Snippet[];
let dir: string;
let bin: string;
/** The text every chat snippet must get back: the simulator's words for the chat model, at the demo's pace. */
let answer: string;
const pythonHas = (module: string) => spawnSync('python3', ['-c', `import ${module}`]).status === 0;

function admin(method: string, path: string, body?: unknown) {
  return rawRequest(`${demo.gatewayUrl}${path}`, {
    method,
    headers: {
      cookie: `gatehouse_session=${cookie}`,
      'sec-fetch-site': 'same-origin',
      ...(body === undefined ? {} : { origin: demo.gatewayUrl, 'content-type': 'application/json' }),
    },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
}

async function adminJson<T>(method: string, path: string, body?: unknown): Promise<T> {
  const res = await admin(method, path, body);
  expect(res.status, `${method} ${path}: ${res.body.toString()}`).toBeLessThan(300);
  return json(res.body) as T;
}

beforeAll(async () => {
  for (const program of ['bash', 'curl', 'python3']) requireProgram(program);
  dir = scratchDir('demo');
  bin = installRecorders(dir, PROGRAMS);
  demo = await startDemo();

  // The operator's first steps: the banner's setup link, then the Endpoints page.
  const setup = demo.bannerLines.find((l) => l.includes('/setup#token='))!;
  const token = /#token=(\S+)/.exec(setup)![1]!;
  const signedUp = await rawRequest(`${demo.gatewayUrl}/api/setup`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', origin: demo.gatewayUrl, 'sec-fetch-site': 'same-origin' },
    body: JSON.stringify({ token, password: ADMIN_PASSWORD }),
  });
  expect(signedUp.status, signedUp.body.toString()).toBe(200);
  cookie = /gatehouse_session=([^;]+)/.exec(signedUp.headers['set-cookie']?.join('\n') ?? '')![1]!;

  const info = await adminJson<EndpointsInfo>('GET', '/api/endpoints');
  expect(info).toEqual({ publicUrl: null, apiOpen: true, ollama: null });
  shown = pageSnippets(info);
  // "Create a key for <client>" on the first client tab, as the page does.
  const firstClient = groupSnippets(shown)[0]!.clients[0]!.client;
  const created = await adminJson<CreatedKey>('POST', '/api/keys', { name: keyNameFor(firstClient) });
  secret = created.secret;
  const choice: KeyChoice = { mode: 'create', created, pasted: '', existing: null };

  const listed = await adminJson<ModelList>('GET', '/api/models');
  expect(listed.reachable).toBe(true);
  const options = modelOptions(listed.models, allowedModelIds(choice));
  const defaults = defaultModels(listed.models, options);
  ctx = snippetContext(
    {
      origin: clientOrigin(info.publicUrl, demo.gatewayUrl).origin,
      model: defaults.chat ?? '',
      embeddingModel: defaults.embedding ?? '',
      key: snippetKey(choice),
    },
    listed.models,
  );
  answer = completionText(ctx.model, DEMO_KNOBS.tokens!);
}, 60_000);
afterAll(async () => {
  await demo?.stop();
});

/** Ids of the request log's records so far, to tell a snippet's own calls from earlier ones. */
async function loggedCalls(): Promise<UsageRequestPage['requests']> {
  return (await adminJson<UsageRequestPage>('GET', '/api/usage/requests?limit=500')).requests;
}

const render = (id: SnippetId) => SNIPPETS.find((s) => s.id === id)!.render(ctx);

/** Runs bash snippet text verbatim; curl prints the answer's body. */
async function runCurl(text: string): Promise<string> {
  const result = await runBash(text, cleanEnv(dir));
  expect(result.code, result.stderr).toBe(0);
  return result.stdout;
}

/** The values a recorded program was started with. */
const recorded = (id: SnippetId, program: (typeof PROGRAMS)[number]) =>
  runRecorded(render(id), program, { bin, runDir: join(dir, id) });

async function runNode(id: SnippetId): Promise<void> {
  const file = join(dir, `${id}.mjs`);
  writeFileSync(file, render(id));
  const result = await run(process.execPath, [file], { env: cleanEnv(dir), timeoutMs: 20_000 });
  expect(result.code, result.stderr).toBe(0);
  expect(result.stdout).toBe(`${answer}\n${answer}\n`);
}

/**
 * Python snippets run for real when python3 has the SDK; otherwise they are compiled and the SDK's
 * request is made with the values the snippet passes it, and the test says so in its output.
 */
async function runPython(id: SnippetId, sdk: 'openai' | 'anthropic', stream: boolean): Promise<void> {
  const text = render(id);
  const file = join(dir, `${id.replaceAll('-', '_')}.py`);
  writeFileSync(file, text);
  if (pythonHas(sdk)) {
    const result = await run('python3', [file], { env: cleanEnv(dir), timeoutMs: 20_000 });
    expect(result.code, result.stderr).toBe(0);
    expect(result.stdout).toContain(answer);
    return;
  }
  console.info(`${id}: python3 has no ${sdk} package, so it is compiled and its request is made on its behalf`);
  const compiled = await run('python3', ['-m', 'py_compile', file], { env: cleanEnv(dir) });
  expect(compiled.code, compiled.stderr).toBe(0);
  const [, baseUrl, key] = /^client = \w+\(base_url="([^"]+)", api_key="([^"]+)"\)$/m.exec(text) ?? [];
  const model = /model="([^"]+)"/.exec(text)?.[1];
  expect([baseUrl, key, model]).toEqual([expect.any(String), secret, ctx.model]);
  if (sdk === 'anthropic') await expectAnthropicMessage(baseUrl!, key!, model!, 'x-api-key', answer);
  else await expectOpenaiChat(baseUrl!, key, model!, { stream, answer });
}

interface Streamed {
  choices: Array<{ delta?: { content?: string } }>;
}

/** The Ollama group, which the page shows only with the Ollama door on (test/snippets runs it). */
type OllamaSnippetId = Extract<SnippetId, `ollama-${string}`>;

/** How each snippet the demo's page shows runs, and what its client must get back. */
const RUNS: Record<Exclude<SnippetId, OllamaSnippetId>, () => Promise<void>> = {
  'curl-openai-chat': async () => {
    const body = JSON.parse(await runCurl(render('curl-openai-chat'))) as Json;
    expect(body.choices[0].message.content).toBe(answer);
  },
  'curl-openai-chat-stream': async () => {
    const out = await runCurl(render('curl-openai-chat-stream'));
    expect(out.endsWith('data: [DONE]\n\n')).toBe(true);
    const frames = out.split('\n\n').filter((f) => f.startsWith('data: {'));
    const text = frames.map((f) => (JSON.parse(f.slice(6)) as Streamed).choices[0]?.delta?.content ?? '').join('');
    expect(text).toBe(answer);
  },
  'curl-anthropic-messages': async () => {
    const body = JSON.parse(await runCurl(render('curl-anthropic-messages'))) as Json;
    expect(body).toMatchObject({ type: 'message', content: [{ type: 'text', text: answer }] });
  },
  'curl-models': async () => {
    const body = JSON.parse(await runCurl(render('curl-models'))) as Json;
    expect(body.data.map((m: { id: string }) => m.id)).toEqual(expect.arrayContaining([ctx.model, ctx.embeddingModel]));
  },
  'curl-embeddings': async () => {
    const body = JSON.parse(await runCurl(render('curl-embeddings'))) as Json;
    expect(body.data[0].embedding.length).toBeGreaterThan(0);
  },
  'python-openai': () => runPython('python-openai', 'openai', false),
  'python-openai-stream': () => runPython('python-openai-stream', 'openai', true),
  'python-anthropic': () => runPython('python-anthropic', 'anthropic', true),
  'typescript-openai': () => runNode('typescript-openai'),
  'typescript-anthropic': () => runNode('typescript-anthropic'),
  'typescript-ai-sdk': () => runNode('typescript-ai-sdk'),
  'home-assistant-local-openai': async () => {
    const f = fieldsOf(render('home-assistant-local-openai'));
    const key = f['API key'] === '(leave empty)' ? undefined : f['API key'];
    await expectModelsList(f['Server URL']!, key, f.Model!);
    await expectOpenaiChat(f['Server URL']!, key, f.Model!, { stream: true, answer });
  },
  'home-assistant-extended-openai': async () => {
    const f = fieldsOf(render('home-assistant-extended-openai'));
    await expectModelsList(f['Base Url']!, f['API Key'], f['Completion Model']!);
    await expectOpenaiChat(f['Base Url']!, f['API Key'], f['Completion Model']!, { answer });
  },
  'claude-code-settings': async () => {
    const { env } = JSON.parse(render('claude-code-settings')) as Json;
    await expectAnthropicMessage(
      env.ANTHROPIC_BASE_URL,
      env.ANTHROPIC_AUTH_TOKEN,
      env.ANTHROPIC_MODEL,
      'bearer',
      answer,
    );
  },
  'claude-code-shell': async () => {
    const { env } = await recorded('claude-code-shell', 'claude');
    await expectAnthropicMessage(
      env.ANTHROPIC_BASE_URL!,
      env.ANTHROPIC_AUTH_TOKEN!,
      env.ANTHROPIC_MODEL!,
      'bearer',
      answer,
    );
  },
  'claude-code-preflight': async () => {
    const body = JSON.parse(await runCurl(render('claude-code-preflight'))) as Json;
    expect(body).toMatchObject({ type: 'message', content: [{ type: 'text', text: answer }] });
  },
  'opencode-json': async () => {
    const config = JSON.parse(render('opencode-json')) as Json;
    const [providerId, model] = (config.model as string).split(/\/(.*)/s);
    const { baseURL, apiKey } = config.provider[providerId!].options;
    await expectOpenaiChat(baseURL, apiKey, model!, { stream: true, answer });
  },
  'aider-shell': async () => {
    const { argv, env } = await recorded('aider-shell', 'aider');
    await expectOpenaiChat(env.OPENAI_API_BASE!, env.OPENAI_API_KEY, argv[1]!.replace(/^openai\//, ''), { answer });
  },
  'codex-config': async () => {
    const config: Json = parseToml(render('codex-config'));
    await expectResponses(config.model_providers[config.model_provider].base_url, secret, config.model);
  },
  'codex-shell': async () => {
    const { env } = await recorded('codex-shell', 'codex');
    const config: Json = parseToml(render('codex-config'));
    const provider = config.model_providers[config.model_provider];
    await expectResponses(provider.base_url, env[provider.env_key]!, config.model);
  },
  'continue-yaml': async () => {
    const [chat, embed] = (parseYaml(render('continue-yaml')) as Json).models;
    await expectOpenaiChat(chat.apiBase, chat.apiKey, chat.model, { stream: true, answer });
    await expectEmbeddings(embed.apiBase, embed.apiKey, embed.model);
  },
  'zed-settings': async () => {
    const provider = (JSON.parse(render('zed-settings')) as Json).language_models.openai_compatible.gatehouse;
    await expectOpenaiChat(provider.api_url, secret, provider.available_models[0].name, { stream: true, answer });
  },
  'zed-key': async () => {
    const { env } = await recorded('zed-key', 'zed');
    const provider = (JSON.parse(render('zed-settings')) as Json).language_models.openai_compatible.gatehouse;
    await expectOpenaiChat(provider.api_url, env.GATEHOUSE_API_KEY, provider.available_models[0].name, { answer });
  },
  'open-webui-docker': async () => {
    const { argv } = await recorded('open-webui-docker', 'docker');
    const env = Object.fromEntries(argv.flatMap((a, i) => (argv[i - 1] === '-e' ? [a.split(/=(.*)/s)] : [])));
    const baseUrl = fromContainer(env.OPENAI_API_BASE_URL);
    await expectModelsList(baseUrl, env.OPENAI_API_KEY, ctx.model);
    await expectOpenaiChat(baseUrl, env.OPENAI_API_KEY, ctx.model, { stream: true, answer });
  },
  'open-webui-admin': async () => {
    const f = fieldsOf(render('open-webui-admin'));
    await expectModelsList(fromContainer(f.URL!), f.Key, ctx.model);
    await expectOpenaiChat(fromContainer(f.URL!), f.Key, ctx.model, { stream: true, answer });
  },
  'librechat-yaml': async () => {
    const [endpoint] = (parseYaml(render('librechat-yaml')) as Json).endpoints.custom;
    await expectModelsList(fromContainer(endpoint.baseURL), secret, endpoint.models.default[0]);
    await expectOpenaiChat(fromContainer(endpoint.baseURL), secret, endpoint.models.default[0], { answer });
  },
  'librechat-env': async () => {
    const env = parseDotenv(render('librechat-env'));
    const [endpoint] = (parseYaml(render('librechat-yaml')) as Json).endpoints.custom;
    await expectOpenaiChat(fromContainer(endpoint.baseURL), env.GATEHOUSE_API_KEY, endpoint.models.default[0], {
      answer,
    });
  },
};

describe('the Endpoints page against the demo in its default state', () => {
  it('fills in a chat model for chat, an embedding model for embeddings, the new key, and no placeholder', async () => {
    const models = (await adminJson<ModelList>('GET', '/api/models')).models;
    const use = (id: string | undefined) => modelUse(models.find((m) => m.id === id)!);
    expect(ctx.model).not.toBe(MODEL_PLACEHOLDER);
    expect(use(ctx.model)).toBe('chat');
    expect(use(ctx.embeddingModel)).toBe('embedding');
    expect(ctx.key).toEqual({ kind: 'secret', value: secret });
    for (const s of shown) expect(s.render(ctx), s.id).not.toMatch(/MODEL-ID|EMBEDDING-MODEL|PASTE-YOUR-KEY/);
  });

  it('shows every snippet but the Ollama group, since the demo runs without the Ollama door', () => {
    expect(shown.map((s) => s.id)).toEqual(Object.keys(RUNS));
  });

  it.each(Object.keys(RUNS) as Array<keyof typeof RUNS>)(
    '%s runs unchanged, and every call it makes through Gatehouse is answered 2xx',
    async (id) => {
      const before = new Set((await loggedCalls()).map((r) => r.id));
      await RUNS[id]();
      const calls = (await loggedCalls()).filter((r) => !before.has(r.id));
      expect(calls.length, id).toBeGreaterThan(0);
      const failed = calls.filter((r) => r.status < 200 || r.status > 299);
      expect(
        failed.map((r) => `${r.method} ${r.endpoint} ${r.model ?? '-'}: ${r.status} ${r.errorClass ?? ''}`),
      ).toEqual([]);
    },
  );

  it('after only the embedding model was loaded, still gives the chat snippets a chat model, and they run', async () => {
    expect((await admin('POST', '/api/models/nomic-embed/load', {})).status).toBe(202);
    const listed = await adminJson<ModelList>('GET', '/api/models');
    const loaded = listed.models.filter((m) => m.kind === 'model' && m.state !== 'stopped').map((m) => m.id);
    expect(loaded).toEqual(['nomic-embed']);
    const choice: KeyChoice = { mode: 'paste', created: null, pasted: secret, existing: null };
    const defaults = defaultModels(listed.models, modelOptions(listed.models, allowedModelIds(choice)));
    expect(defaults).toEqual({ chat: ctx.model, embedding: 'nomic-embed' });
    const before = new Set((await loggedCalls()).map((r) => r.id));
    await RUNS['curl-openai-chat']();
    await RUNS['curl-embeddings']();
    const statuses = (await loggedCalls()).filter((r) => !before.has(r.id)).map((r) => r.status);
    expect(statuses).toEqual([200, 200]);
  });
});
