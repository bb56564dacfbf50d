/**
 * The coding-agent CLIs in the client matrix (see matrix.ts and cli-clients.ts), each installed
 * on demand at a pinned version and run headless through Gatehouse. A CLI always streams and
 * always declares its tools, and the simulator answers declared tools with a tool call: so one
 * conversation run shows chat, streaming and a tool round trip, each checked in its own cell.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { installNpmClient, type Installed } from '../helpers/npm-clients.js';
import { startProgram, type RunResult } from '../helpers/programs.js';
import { ALPHA_TEXT, CLI_CLIENTS, jsonLines, type CliClient, type Event } from './cli-clients.js';
import {
  ANSWER,
  CELLS,
  CHAT_MODEL,
  ClientMatrix,
  midStream,
  REFUSED_MODEL,
  SLOW,
  startStack,
  type ApiCell,
  type Stack,
} from './matrix.js';

/** A CLI run is bounded; the cell's own limit leaves room for its checks. */
const RUN_TIMEOUT_MS = 90_000;
/** A cell may wait for its CLI's earlier runs (see `inLane`). */
const CELL_TIMEOUT_MS = 3 * RUN_TIMEOUT_MS + 30_000;
const INSTALL_TIMEOUT_MS = 300_000;

const installed = new Map<string, Installed>();
const stacks: Stack[] = [];
const homes: string[] = [];

beforeAll(async () => {
  await Promise.all(CLI_CLIENTS.map(async (c) => installed.set(c.name, await installNpmClient(c.npm))));
}, INSTALL_TIMEOUT_MS);
afterAll(async () => {
  await Promise.all(stacks.map((s) => s.close()));
  for (const home of homes) rmSync(home, { recursive: true, force: true });
});

/** The CLIs are separate processes, so their cells run side by side. */
const matrix = new ClientMatrix('CLI client matrix', it.concurrent);

const lanes = new Map<string, Promise<unknown>>();
/** Runs `job` after every job queued before it under `name`. */
function inLane<T>(name: string, job: () => Promise<T>): Promise<T> {
  const next = (lanes.get(name) ?? Promise.resolve()).catch(() => undefined).then(job);
  lanes.set(name, next);
  return next;
}

interface CliRun {
  stack: Stack;
  result: RunResult;
  events: Event[];
}

async function stackFor(knobs = {}): Promise<Stack> {
  const stack = await startStack(knobs);
  stacks.push(stack);
  return stack;
}

/** Starts the CLI on one prompt against `stack`; `whenRunning` may stop it midway. */
async function runCli(
  client: CliClient,
  cell: string,
  stack: Stack,
  options: { key?: string; model?: string; whenRunning?: (stop: () => void) => Promise<void> } = {},
): Promise<CliRun> {
  const install = installed.get(client.name)!;
  if (!install.ok) throw new Error('not installed');
  // Outside the repository: a CLI takes the git checkout around it as its project.
  const home = mkdtempSync(join(tmpdir(), `gh-${client.name}-${cell}-`));
  homes.push(home);
  const { args, env, cwd } = client.invocation({
    url: stack.gateway.url,
    key: options.key ?? stack.key.secret,
    model: options.model ?? CHAT_MODEL,
    home,
    prompt: 'Say hello',
  });
  // One run at a time per CLI: opencode stalls when several of it start at once on two cores.
  const result = await inLane(client.name, async () => {
    const program = startProgram(install.bin, args, { env, cwd, timeoutMs: RUN_TIMEOUT_MS });
    try {
      await options.whenRunning?.(() => program.stop('SIGINT'));
    } catch (error) {
      program.stop('SIGKILL');
      await program.done;
      throw error;
    }
    return program.done;
  });
  const run = { stack, result, events: jsonLines(result.stdout) };
  if (result.timedOut) {
    const recorded = (await stack.calls(options.key === undefined ? undefined : stack.restrictedKey.id)).map(
      (c) => `${c.endpoint} ${c.status}${c.clientAborted ? ' (client left)' : ''}`,
    );
    const upstream = stack.sim.received.map((r) => `${r.path} ${String(r.status)} ${r.closedAt ? 'closed' : 'open'}`);
    expect.fail(`still running after ${RUN_TIMEOUT_MS} ms; Gatehouse recorded [${recorded.join(', ')}], the \
simulator saw [${upstream.join(', ')}]\n${transcript(run)}`);
  }
  return run;
}

const transcript = ({ result }: CliRun) =>
  [
    `exit ${String(result.code)}`,
    '--- stdout',
    result.stdout.slice(-4000),
    '--- stderr',
    result.stderr.slice(-2000),
  ].join('\n');

/** Skips with the install's reason when the CLI could not be installed here. */
function needsInstall(client: CliClient, skip: (reason: string) => never): void {
  const install = installed.get(client.name);
  if (!install?.ok) skip(install?.reason ?? 'not installed');
}

const conversations = new Map<string, Promise<CliRun>>();
/** The one conversation run per CLI that the chat, streaming and tool cells each check. */
function converse(client: CliClient): Promise<CliRun> {
  let run = conversations.get(client.name);
  if (!run) conversations.set(client.name, (run = stackFor().then((stack) => runCli(client, 'conversation', stack))));
  return run;
}

type RunCell = Exclude<ApiCell, 'embeddings (float)' | 'embeddings (base64)'>;
const CHECKS: Record<RunCell, (client: CliClient) => Promise<void>> = {
  async chat(client) {
    const run = await converse(client);
    expect(run.result.code, transcript(run)).toBe(0);
    expect(client.answer(run.events), transcript(run)).toBe(ANSWER);
  },
  async streaming(client) {
    const run = await converse(client);
    const calls = (await run.stack.calls()).filter((c) => c.endpoint !== '/v1/models');
    expect(calls.length, transcript(run)).toBeGreaterThan(0);
    for (const call of calls) expect(call).toMatchObject({ status: 200, streamed: true, clientAborted: false });
  },
  async 'tool round trip'(client) {
    const run = await converse(client);
    // Which tool ran, and that it ran: a call to a tool the CLI never loaded comes back as an error.
    expect(client.toolRoundTrips(run.events), transcript(run)).toEqual([
      { name: client.tool, ok: true, output: expect.stringContaining(ALPHA_TEXT) },
    ]);
    expect(client.answer(run.events), transcript(run)).toBe(ANSWER);
  },
  async errors(client) {
    const stack = await stackFor();
    const run = await runCli(client, 'errors', stack, { key: stack.restrictedKey.secret, model: REFUSED_MODEL });
    expect(run.result.code, transcript(run)).not.toBe(0);
    expect(client.error(run.events), transcript(run)).toContain(`may not use the model "${REFUSED_MODEL}"`);
    const calls = await stack.calls(stack.restrictedKey.id);
    expect(calls.map((c) => c.status)).toContain(403);
  },
  async cancel(client) {
    const stack = await stackFor(SLOW);
    // Ctrl-C once the answer is streaming: only the client's leaving can end it this soon.
    await runCli(client, 'cancel', stack, {
      whenRunning: async (stop) => {
        await midStream(stack.sim, RUN_TIMEOUT_MS);
        stop();
      },
    });
    const calls = await stack.waitForCalls((seen) => seen.some((c) => c.clientAborted));
    expect(calls.find((c) => c.clientAborted)).toMatchObject({ streamed: true, errorClass: 'client_abort' });
  },
};

// Cell by cell across the CLIs, so the CLIs' first runs start together.
for (const cell of CELLS) {
  for (const client of CLI_CLIENTS) {
    if (cell === 'embeddings (float)' || cell === 'embeddings (base64)') {
      matrix.notApplicable(client.name, cell, 'a coding agent makes no embeddings calls (SDK cells cover them)');
      continue;
    }
    matrix.cell(
      client.name,
      cell,
      async (skip) => {
        needsInstall(client, skip);
        await CHECKS[cell](client);
      },
      CELL_TIMEOUT_MS,
    );
  }
}
