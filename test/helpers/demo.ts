/**
 * Runs `npm run demo` as a child process, from the TypeScript sources through tsx's loader (the
 * same demo/main.ts that dist/demo/main.js is built from), and reads the addresses its banner prints.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { REPO_ROOT } from './process.js';
import { TEST_PASSWORD_HASH_COST_ENV } from './password-cost.js';

export interface DemoProcess {
  child: ChildProcess;
  /** Everything written to stdout and stderr so far. */
  output(): string;
  /** The banner's lines, as printed. */
  bannerLines: string[];
  /** The gateway as the banner names it (dashboard and /v1 share the origin). */
  gatewayUrl: string;
  dataDir: string;
  /** SIGTERM, then the exit code. */
  stop(): Promise<number | null>;
}

/** A fresh data directory, so the demo starts in its default state (no password, no key). */
export function freshDemoDataDir(): string {
  return mkdtempSync(join(tmpdir(), 'gh-demo-'));
}

/** Starts the demo on free ports and resolves once its banner is complete. */
export function startDemo(dataDir: string = freshDemoDataDir()): Promise<DemoProcess> {
  const child = spawn(process.execPath, ['--import', 'tsx', join(REPO_ROOT, 'demo', 'main.ts')], {
    cwd: REPO_ROOT,
    env: {
      PATH: process.env.PATH ?? '',
      HOST: '127.0.0.1',
      PORT: '0',
      GATEHOUSE_DATA_DIR: dataDir,
      GATEHOUSE_PASSWORD_HASH_COST: TEST_PASSWORD_HASH_COST_ENV,
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  let started = false;
  const exited = new Promise<number | null>((resolve) => child.once('close', (code) => resolve(code)));
  return new Promise((resolve, reject) => {
    // A bound for a start that fails: tsx compiles the sources as it loads them.
    const timer = setTimeout(() => reject(new Error(`the demo did not print its banner:\n${output}`)), 60_000);
    const onData = (chunk: Buffer) => {
      output += chunk.toString('utf8');
      if (started) return;
      const start = output.indexOf('  Gatehouse demo is running');
      const end = output.indexOf('  Ctrl-C stops both.');
      if (start < 0 || end < 0) return;
      started = true;
      clearTimeout(timer);
      const bannerLines = output.slice(start, end + '  Ctrl-C stops both.'.length).split('\n');
      const gatewayUrl = /^ {4}Gateway \(Anthropic base URL\) +(\S+)$/m.exec(bannerLines.join('\n'))?.[1];
      if (!gatewayUrl) return reject(new Error(`no gateway address in the banner:\n${output}`));
      resolve({
        child,
        output: () => output,
        bannerLines,
        gatewayUrl,
        dataDir,
        stop: () => {
          child.kill('SIGTERM');
          return exited;
        },
      });
    };
    child.stdout.on('data', onData);
    child.stderr.on('data', onData);
    void exited.then((code) => {
      clearTimeout(timer);
      reject(new Error(`the demo exited with ${code} before its banner:\n${output}`));
    });
  });
}
