/**
 * Running other programs from tests: with only the environment given, a bounded time, and a
 * handle to stop one midway (as a user pressing Ctrl-C would).
 */
import { spawn } from 'node:child_process';
import { mkdirSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { REPO_ROOT } from './process.js';

export interface RunResult {
  code: number | null;
  signal: NodeJS.Signals | null;
  stdout: string;
  stderr: string;
  /** True when the time bound killed it. */
  timedOut: boolean;
}

export interface RunningProgram {
  /** Resolves when the program has exited and its output is complete. */
  done: Promise<RunResult>;
  /** Sends a signal now (SIGINT by default); SIGKILL follows after `graceMs` if it is still running. */
  stop(signal?: NodeJS.Signals, graceMs?: number): void;
}

export interface RunOptions {
  env: Record<string, string>;
  cwd?: string;
  timeoutMs?: number;
}

/** Starts a program with only the given environment; killed after `timeoutMs`. */
export function startProgram(command: string, args: string[], options: RunOptions): RunningProgram {
  const child = spawn(command, args, {
    cwd: options.cwd ?? REPO_ROOT,
    env: options.env,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  let timedOut = false;
  child.stdout.on('data', (c: Buffer) => (stdout += c.toString('utf8')));
  child.stderr.on('data', (c: Buffer) => (stderr += c.toString('utf8')));
  const timers: NodeJS.Timeout[] = [];
  const kill = (signal: NodeJS.Signals) => {
    if (child.exitCode === null && child.signalCode === null) child.kill(signal);
  };
  timers.push(
    setTimeout(() => {
      timedOut = true;
      kill('SIGKILL');
    }, options.timeoutMs ?? 10_000),
  );
  const done = new Promise<RunResult>((resolve, reject) => {
    child.once('error', (error) => {
      for (const t of timers) clearTimeout(t);
      reject(error);
    });
    child.once('close', (code, signal) => {
      for (const t of timers) clearTimeout(t);
      resolve({ code, signal, stdout, stderr, timedOut });
    });
  });
  return {
    done,
    stop(signal = 'SIGINT', graceMs = 5000) {
      kill(signal);
      timers.push(setTimeout(() => kill('SIGKILL'), graceMs));
    },
  };
}

/** Runs a program to completion with only the given environment; killed after `timeoutMs`. */
export function run(command: string, args: string[], options: RunOptions): Promise<RunResult> {
  return startProgram(command, args, options).done;
}

/** A minimal environment, so nothing from the test runner's shell leaks into a client. */
export function cleanEnv(home: string, extra: Record<string, string> = {}): Record<string, string> {
  return { PATH: process.env.PATH ?? '/usr/bin:/bin', HOME: home, LANG: 'C.UTF-8', ...extra };
}

/** A fresh scratch directory inside the repo (test-results is git-ignored), so Node resolves node_modules. */
export function scratchDir(...name: string[]): string {
  const dir = join(REPO_ROOT, 'test-results', ...name);
  rmSync(dir, { recursive: true, force: true });
  mkdirSync(dir, { recursive: true });
  return dir;
}
