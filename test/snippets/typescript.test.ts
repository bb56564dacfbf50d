/**
 * The TypeScript snippets, run with node and the real npm packages (openai, @anthropic-ai/sdk,
 * ai + @ai-sdk/openai-compatible, ollama) against a real gateway (ollama's through the Ollama door):
 * they must print the model's answer.
 * They are also type-checked as TypeScript under strict settings, since users paste them into .ts files.
 */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import ts from 'typescript';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SNIPPETS, type SnippetContext } from '../../src/snippets/index.js';
import { REPO_ROOT } from '../helpers/process.js';
import { requireCases } from './expectations.js';
import {
  ANSWER,
  cleanEnv,
  liveContext,
  MODEL,
  run,
  scratchDir,
  startLiveGateways,
  type LiveGateways,
} from './harness.js';

/** What reaches llama-swap when the snippet runs: one plain and one streaming request. */
const CASES = requireCases<{ paths: string[] }>('node', {
  'typescript-openai': { paths: ['/v1/chat/completions', '/v1/chat/completions'] },
  'typescript-anthropic': { paths: ['/v1/messages', '/v1/messages'] },
  'typescript-ai-sdk': { paths: ['/v1/chat/completions', '/v1/chat/completions'] },
  // Through the Ollama door, which speaks OpenAI to llama-swap.
  'ollama-javascript': { paths: ['/v1/chat/completions', '/v1/chat/completions'] },
});

let live: LiveGateways;
let dir: string;

beforeAll(async () => {
  dir = scratchDir('typescript');
  live = await startLiveGateways();
});
afterAll(async () => {
  await live?.close();
});

/** Writes the snippet as an ES module inside the repo (so node_modules resolves) and runs it. */
async function runWithNode(id: string, text: string, mode: string) {
  const file = join(dir, `${id}-${mode}.mjs`);
  writeFileSync(file, text);
  // Leftover OPENAI_/ANTHROPIC_ variables would change what the SDKs send; the clean env has none.
  return run(process.execPath, [file], { env: cleanEnv(dir), timeoutMs: 15_000 });
}

describe.each(CASES)('%s', (id, c) => {
  const snippet = SNIPPETS.find((s) => s.id === id)!;

  it('prints the answer, plain then streamed, through a protected gateway with the real key', async () => {
    const before = live.sim.received.length;
    const result = await runWithNode(id, snippet.render(liveContext(live, 'protected')), 'protected');
    expect(result.code, result.stderr).toBe(0);
    expect(result.stdout).toBe(`${ANSWER}\n${ANSWER}\n`);
    // The model calls; the Ollama door also reads llama-swap's model list to resolve names.
    const calls = live.sim.received.slice(before).map((r) => r.path.split('?')[0]);
    expect(calls.filter((p) => p !== '/v1/models')).toEqual(c.paths);
  });

  it('prints the answer through a gateway in open mode', async () => {
    const result = await runWithNode(id, snippet.render(liveContext(live, 'open')), 'open');
    expect(result.code, result.stderr).toBe(0);
    expect(result.stdout).toBe(`${ANSWER}\n${ANSWER}\n`);
  });

  it('fails with an authentication error, not silently, when the prefix placeholder is left in', async () => {
    const ctx: SnippetContext = {
      ...liveContext(live, 'protected'),
      key: { kind: 'prefix', prefix: live.secret.slice(0, 9) },
    };
    const result = await runWithNode(id, snippet.render(ctx), 'prefix');
    expect(result.code).not.toBe(0);
    expect(result.stderr).toMatch(/401|authentication|api key/i);
  });
});

describe('running a TypeScript snippet as its "where" line says', () => {
  it('names app.mjs for node and app.mts for tsx, and the .mts file prints the answer through tsx', async () => {
    const snippet = SNIPPETS.find((s) => s.id === 'typescript-openai')!;
    expect(snippet.where).toContain('node app.mjs');
    expect(snippet.where).toContain('npx tsx app.mts');
    const file = join(dir, 'app.mts');
    writeFileSync(file, snippet.render(liveContext(live, 'protected')));
    const tsx = join(REPO_ROOT, 'node_modules', '.bin', 'tsx');
    const result = await run(tsx, [file], { env: cleanEnv(dir), timeoutMs: 20_000 });
    expect(result.code, result.stderr).toBe(0);
    expect(result.stdout).toBe(`${ANSWER}\n${ANSWER}\n`);
  });
});

describe('the TypeScript snippets as TypeScript', () => {
  it('type-check under strict and noUncheckedIndexedAccess against the installed packages', () => {
    const files = SNIPPETS.filter((s) => s.language === 'typescript').map((s) => {
      // .mts, as the snippets say: tsx compiles a plain .ts outside an ESM package to CommonJS.
      const file = join(dir, `${s.id}.mts`);
      writeFileSync(
        file,
        s.render({ origin: 'http://192.168.1.5:3000', model: MODEL, key: { kind: 'secret', value: 'sk-test' } }),
      );
      return file;
    });
    const program = ts.createProgram(files, {
      strict: true,
      noUncheckedIndexedAccess: true,
      target: ts.ScriptTarget.ES2022,
      // Without an explicit lib the DOM typings load too, which doubles the time for nothing.
      lib: ['lib.es2022.d.ts'],
      module: ts.ModuleKind.NodeNext,
      moduleResolution: ts.ModuleResolutionKind.NodeNext,
      types: ['node'],
      skipLibCheck: true,
      noEmit: true,
    });
    const diagnostics = ts
      .getPreEmitDiagnostics(program)
      .map((d) => `${d.file?.fileName ?? ''}: ${ts.flattenDiagnosticMessageText(d.messageText, '\n')}`);
    expect(diagnostics).toEqual([]);
  });
});
