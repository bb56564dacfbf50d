/**
 * What the snippet tests share: a real gateway in front of the llama-swap simulator, once
 * protected by a key created through the admin API and once in open mode, each with the Ollama
 * door on (the protected one lets keyless Ollama calls act as its key); running programs
 * (curl, bash, node, python3) with a bounded time; and the requests a configured client makes.
 */
import { spawnSync } from 'node:child_process';
import { chmodSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { expect } from 'vitest';
import { completionText, DEMO_CONFIG, startSimulator, type Simulator } from '../fakes/llama-swap/index.js';
import { startTestGateway, type TestGateway } from '../helpers/gateway.js';
import { json, rawRequest } from '../helpers/http.js';
import { cleanEnv, scratchDir as freshDir, run, type RunResult } from '../helpers/programs.js';
import { createLlamaSwapClient } from '../../src/management-client/llama-swap-client.js';
import type { SnippetContext, SnippetKey } from '../../src/snippets/index.js';

export { cleanEnv, run, type RunResult };

export const MODEL = 'qwen3-8b';
export const EMBEDDING_MODEL = 'nomic-embed';
const TOKENS = 6;
/** What the simulator answers for MODEL: every snippet that prints the answer prints this. */
export const ANSWER = completionText(MODEL, TOKENS);
const ADMIN = 'snippets-admin-token';
/** The protected gateway's key, which keyless Ollama calls act as (GATEHOUSE_OLLAMA_KEY). */
const KEY_NAME = 'endpoints-page';

export interface LiveGateways {
  sim: Simulator;
  /** Has one key: `secret`. */
  protectedGateway: TestGateway;
  /** Has no key, so it accepts any or none. */
  openGateway: TestGateway;
  /** The gateways' Ollama doors, `http://127.0.0.1:<port>`. */
  ollamaUrls: { protected: string; open: string };
  secret: string;
  close(): Promise<void>;
}

export async function startLiveGateways(): Promise<LiveGateways> {
  const sim = await startSimulator({ config: DEMO_CONFIG, knobs: { tokens: TOKENS } });
  const upstream = createLlamaSwapClient({ baseUrl: new URL(sim.url) });
  const start = (ollamaKey?: string) =>
    startTestGateway(
      sim.url,
      { adminToken: ADMIN, ollamaListen: { host: '127.0.0.1', port: 0 }, ...(ollamaKey ? { ollamaKey } : {}) },
      { listModels: () => upstream.models() },
      { withStore: true },
    );
  const [protectedGateway, openGateway] = await Promise.all([start(KEY_NAME), start()]);
  const [protectedOllama, openOllama] = await Promise.all(
    [protectedGateway, openGateway].map((g) => g.app.listenOllama(0, '127.0.0.1')!),
  );
  const res = await rawRequest(`${protectedGateway.url}/api/keys`, {
    method: 'POST',
    headers: { authorization: `Bearer ${ADMIN}`, 'content-type': 'application/json' },
    body: JSON.stringify({ name: KEY_NAME }),
  });
  expect(res.status, res.body.toString()).toBe(201);
  const secret = (json(res.body) as { secret: string }).secret;
  return {
    sim,
    protectedGateway,
    openGateway,
    ollamaUrls: { protected: protectedOllama!, open: openOllama! },
    secret,
    async close() {
      await Promise.all([protectedGateway.close(), openGateway.close()]);
      await upstream.close();
      await sim.close();
    },
  };
}

/** The context for a gateway: with the real key when it is protected, key kind none when open. */
export function liveContext(
  live: LiveGateways,
  mode: 'protected' | 'open',
  extra: Partial<SnippetContext> = {},
): SnippetContext {
  const key: SnippetKey = mode === 'protected' ? { kind: 'secret', value: live.secret } : { kind: 'none' };
  const gateway = mode === 'protected' ? live.protectedGateway : live.openGateway;
  const ollamaOrigin = live.ollamaUrls[mode];
  return { origin: gateway.url, model: MODEL, embeddingModel: EMBEDDING_MODEL, key, ollamaOrigin, ...extra };
}

/** Fails loudly when a program the tests run is missing: these tests never skip. */
export function requireProgram(name: string): void {
  const found = spawnSync('sh', ['-c', `command -v ${name}`], { encoding: 'utf8' });
  if (found.status !== 0) throw new Error(`${name} is required by the snippet tests and was not found on PATH`);
}

/** A fresh scratch directory for one snippet test file. */
export function scratchDir(name: string): string {
  return freshDir('snippets', name);
}

/** Runs snippet text exactly as a user pastes it into bash. */
export function runBash(text: string, env: Record<string, string>, cwd?: string): Promise<RunResult> {
  return run('bash', ['-c', text], { env, ...(cwd === undefined ? {} : { cwd }) });
}

// --- The requests a configured client makes, from the values a snippet gave it. ---

const bearer = (key: string | undefined): Record<string, string> =>
  key === undefined ? {} : { authorization: `Bearer ${key}` };

async function post(
  url: string,
  headers: Record<string, string>,
  body: unknown,
): Promise<{ status: number; text: string }> {
  const res = await fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...headers },
    body: JSON.stringify(body),
  });
  return { status: res.status, text: await res.text() };
}

/** OpenAI client: POST {base}/chat/completions with Bearer; expects the simulator's answer (MODEL's by default). */
export async function expectOpenaiChat(
  baseUrl: string,
  key: string | undefined,
  model: string,
  options: { stream?: boolean; answer?: string } = {},
): Promise<void> {
  const res = await post(`${baseUrl}/chat/completions`, bearer(key), {
    model,
    stream: options.stream ?? false,
    messages: [{ role: 'user', content: 'Hello!' }],
  });
  expect(res.status, res.text).toBe(200);
  if (options.stream) expect(res.text.endsWith('data: [DONE]\n\n')).toBe(true);
  else
    expect(
      (JSON.parse(res.text) as { choices: Array<{ message: { content: string } }> }).choices[0]?.message.content,
    ).toBe(options.answer ?? ANSWER);
}

/** Anthropic client: POST {base}/v1/messages, as Claude Code (`?beta=true`, Bearer) or an SDK (x-api-key). */
export async function expectAnthropicMessage(
  baseUrl: string,
  key: string,
  model: string,
  via: 'bearer' | 'x-api-key',
  answer: string = ANSWER,
): Promise<void> {
  const headers = { 'anthropic-version': '2023-06-01', ...(via === 'bearer' ? bearer(key) : { 'x-api-key': key }) };
  const url = via === 'bearer' ? `${baseUrl}/v1/messages?beta=true` : `${baseUrl}/v1/messages`;
  const res = await post(url, headers, { model, max_tokens: 64, messages: [{ role: 'user', content: 'Hello!' }] });
  expect(res.status, res.text).toBe(200);
  expect(JSON.parse(res.text)).toMatchObject({ type: 'message', content: [{ type: 'text', text: answer }] });
}

/** Codex: POST {base}/responses with Bearer. */
export async function expectResponses(baseUrl: string, key: string, model: string): Promise<void> {
  const res = await post(`${baseUrl}/responses`, bearer(key), { model, input: 'Hello!' });
  expect(res.status, res.text).toBe(200);
  expect(JSON.parse(res.text)).toMatchObject({ object: 'response' });
}

/** Setup validation and model pickers: GET {base}/models with Bearer lists the model. */
export async function expectModelsList(baseUrl: string, key: string | undefined, model: string): Promise<void> {
  const res = await fetch(`${baseUrl}/models`, { headers: bearer(key) });
  const text = await res.text();
  expect(res.status, text).toBe(200);
  expect((JSON.parse(text) as { data: Array<{ id: string }> }).data.map((m) => m.id)).toContain(model);
}

export async function expectEmbeddings(baseUrl: string, key: string | undefined, model: string): Promise<void> {
  const res = await post(`${baseUrl}/embeddings`, bearer(key), { model, input: 'hello world' });
  expect(res.status, res.text).toBe(200);
  expect((JSON.parse(res.text) as { data: Array<{ embedding: number[] }> }).data[0]?.embedding.length).toBeGreaterThan(
    0,
  );
}

/** Ollama's model list: GET {base}/api/tags lists the model as `<id>:latest`. */
export async function expectOllamaTags(baseUrl: string, key: string | undefined, model: string): Promise<void> {
  const res = await fetch(`${baseUrl}/api/tags`, { headers: bearer(key) });
  const text = await res.text();
  expect(res.status, text).toBe(200);
  expect((JSON.parse(text) as { models: Array<{ name: string }> }).models.map((m) => m.name)).toContain(
    model.includes(':') ? model : `${model}:latest`,
  );
}

/** An Ollama client: POST {base}/api/chat, NDJSON when streamed; expects the simulator's answer. */
export async function expectOllamaChat(
  baseUrl: string,
  key: string | undefined,
  model: string,
  options: { stream: boolean; answer?: string },
): Promise<void> {
  const res = await post(`${baseUrl}/api/chat`, bearer(key), {
    model,
    stream: options.stream,
    messages: [{ role: 'user', content: 'Hello!' }],
  });
  expect(res.status, res.text).toBe(200);
  const parts = res.text
    .split('\n')
    .filter((l) => l !== '')
    .map((l) => JSON.parse(l) as { message: { content: string }; done: boolean });
  expect(parts.length > 1).toBe(options.stream);
  expect(parts.map((p) => p.message.content).join('')).toBe(options.answer ?? ANSWER);
  expect(parts.at(-1)?.done).toBe(true);
}

/** A container URL (host.docker.internal) as the test machine reaches it. */
export function fromContainer(url: string): string {
  return url.replace('//host.docker.internal:', '//127.0.0.1:');
}

// --- Reading snippets that are not programs. ---

/** `Label:  value` lines, as the form-field snippets show them. */
export function fieldsOf(text: string): Record<string, string> {
  const fields: Record<string, string> = {};
  for (const line of text.split('\n')) {
    const match = /^ {2,}([A-Z][A-Za-z ]*):\s+(\S.*)$/.exec(line);
    if (match) fields[match[1]!] = match[2]!;
  }
  return fields;
}

/** A .env file: KEY=value lines. */
export function parseDotenv(text: string): Record<string, string> {
  return Object.fromEntries(
    text
      .split('\n')
      .filter((l) => l.trim() !== '' && !l.startsWith('#'))
      .map((l) => {
        const match = /^([A-Z_][A-Z0-9_]*)=(.*)$/.exec(l);
        if (!match) throw new Error(`not a .env line: ${l}`);
        return [match[1]!, match[2]!];
      }),
  );
}

// --- Shell snippets that start another program: the program is replaced by a recorder. ---

export interface Recorded {
  argv: string[];
  env: Record<string, string>;
}

/**
 * Puts a recorder named after each program into `<dir>/bin`: it saves its NUL-separated argv and
 * environment into `$SNIPPET_RECORD_DIR`. Returns the bin directory.
 */
export function installRecorders(dir: string, programs: readonly string[]): string {
  const bin = join(dir, 'bin');
  mkdirSync(bin, { recursive: true });
  const recorder =
    '#!/bin/sh\nname=$(basename "$0")\n: > "$SNIPPET_RECORD_DIR/$name.argv"\nfor a in "$@"; do printf ' +
    '\'%s\\0\' "$a" >> "$SNIPPET_RECORD_DIR/$name.argv"; done\nenv -0 > "$SNIPPET_RECORD_DIR/$name.env"\n';
  for (const program of programs) {
    writeFileSync(join(bin, program), recorder);
    chmodSync(join(bin, program), 0o755);
  }
  return bin;
}

/** Runs shell snippet text verbatim with the recorders first on PATH; what `program` was started with. */
export async function runRecorded(
  text: string,
  program: string,
  options: { bin: string; runDir: string; env?: Record<string, string> },
): Promise<Recorded> {
  const { bin, runDir } = options;
  mkdirSync(runDir, { recursive: true });
  const result = await runBash(
    text,
    cleanEnv(runDir, { PATH: `${bin}:${process.env.PATH ?? ''}`, SNIPPET_RECORD_DIR: runDir, ...options.env }),
  );
  expect(result.code, result.stderr).toBe(0);
  const split = (file: string) => readFileSync(join(runDir, file), 'utf8').split('\0').slice(0, -1);
  const env = Object.fromEntries(
    split(`${program}.env`).map((pair) => pair.split(/=(.*)/s).slice(0, 2) as [string, string]),
  );
  return { argv: split(`${program}.argv`), env };
}
