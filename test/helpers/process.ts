/**
 * Runs the real `gatehouse` CLI as a child process, from the TypeScript sources through tsx's
 * loader (the same `main` that bin/gatehouse runs from dist/), so no build comes first.
 * Passwords are hashed at the tests' cheap cost unless `env` sets GATEHOUSE_PASSWORD_HASH_COST.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { TEST_PASSWORD_HASH_COST_ENV } from './password-cost.js';

export const REPO_ROOT = fileURLToPath(new URL('../..', import.meta.url));
const CLI_FROM_SOURCE = fileURLToPath(new URL('./gatehouse-cli.ts', import.meta.url));
/** `node` arguments that run `gatehouse` from source; append the CLI's own arguments. */
const CLI = ['--import', 'tsx', CLI_FROM_SOURCE];

export interface GatewayProcess {
  child: ChildProcess;
  url: string;
  output(): string;
  /** Resolves once the process has written text matching `pattern` (stdout or stderr). */
  waitForOutput(pattern: RegExp): Promise<void>;
  exited: Promise<number | null>;
}

/** Starts `gatehouse serve` on a free port and resolves once it logs its URL. */
export function spawnGateway(env: Record<string, string>, args: string[] = []): Promise<GatewayProcess> {
  const child = spawn(process.execPath, [...CLI, 'serve', '--host', '127.0.0.1', '--port', '0', ...args], {
    cwd: REPO_ROOT,
    env: { PATH: process.env.PATH ?? '', GATEHOUSE_PASSWORD_HASH_COST: TEST_PASSWORD_HASH_COST_ENV, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  const outputWatchers = new Set<() => void>();
  const waitForOutput = (pattern: RegExp) =>
    new Promise<void>((resolve) => {
      const check = () => {
        if (!pattern.test(output)) return;
        outputWatchers.delete(check);
        resolve();
      };
      outputWatchers.add(check);
      check();
    });
  // 'close', not 'exit': the last lines on stdout may still be in the pipe when the process exits.
  const exited = new Promise<number | null>((resolve) => child.once('close', (code) => resolve(code)));
  return new Promise((resolve, reject) => {
    // A bound for a start that fails, not a pace: each process compiles the sources as it loads
    // them, and several replicas starting at once on a busy machine take a while.
    const timer = setTimeout(() => reject(new Error(`gateway did not start:\n${output}`)), 60_000);
    const onData = (chunk: Buffer) => {
      output += chunk.toString('utf8');
      for (const watcher of [...outputWatchers]) watcher();
      const match = /"url":"(http:\/\/[^"]+)"/.exec(output);
      if (match) {
        clearTimeout(timer);
        resolve({ child, url: match[1]!, output: () => output, waitForOutput, exited });
      }
    };
    child.stdout.on('data', onData);
    child.stderr.on('data', onData);
    void exited.then((code) => {
      clearTimeout(timer);
      reject(new Error(`gateway exited with ${code} before starting:\n${output}`));
    });
  });
}

/** Runs `gatehouse <args>` to completion and returns its exit code and output. */
export function runCli(
  args: string[],
  env: Record<string, string>,
): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, [...CLI, ...args], {
      cwd: REPO_ROOT,
      env: { PATH: process.env.PATH ?? '', GATEHOUSE_PASSWORD_HASH_COST: TEST_PASSWORD_HASH_COST_ENV, ...env },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (c: Buffer) => (stdout += c.toString()));
    child.stderr.on('data', (c: Buffer) => (stderr += c.toString()));
    child.once('exit', (code) => resolve({ code, stdout, stderr }));
  });
}
