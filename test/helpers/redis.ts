/**
 * A private `redis-server` for tests, on a free port, that a test may kill, pause and start
 * again on the same port (the shared Redis on 6379 must never be stopped). Nothing is persisted.
 *
 * The binary is required: without it (`GATEHOUSE_TEST_REDIS_SERVER`, default `redis-server` on
 * PATH) the tests FAIL with how to fix it; nothing is skipped.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { freePort } from './ports.js';

const REDIS_SERVER_BIN = process.env.GATEHOUSE_TEST_REDIS_SERVER ?? 'redis-server';

export interface TestRedis {
  port: number;
  /** `redis://:<password>@127.0.0.1:<port>/0` (without `:<password>@` when there is none). */
  url: string;
  password: string | undefined;
  /** Kills the server (SIGKILL: as a crash, or a host going away) and waits for it to exit. */
  kill(): Promise<void>;
  /** Starts it again on the same port (empty: nothing is persisted). */
  restart(): Promise<void>;
  /** SIGSTOP: connections stay open and nothing answers (a hung server). */
  pause(): void;
  resume(): void;
  stop(): Promise<void>;
}

export async function startTestRedis(options: { password?: string } = {}): Promise<TestRedis> {
  const port = await freePort();
  const dir = mkdtempSync(join(tmpdir(), 'gh-redis-'));
  const args = [
    '--port',
    String(port),
    '--bind',
    '127.0.0.1',
    '--save',
    '',
    '--appendonly',
    'no',
    '--dir',
    dir,
    '--loglevel',
    'notice',
  ];
  if (options.password) args.push('--requirepass', options.password);
  let child: ChildProcess | undefined;

  const start = async (): Promise<void> => {
    const proc = spawn(REDIS_SERVER_BIN, args, { stdio: ['ignore', 'pipe', 'pipe'] });
    child = proc;
    let output = '';
    await new Promise<void>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`redis-server did not start within 5 s:\n${output}`)), 5000);
      const onData = (chunk: Buffer) => {
        output += chunk.toString('utf8');
        if (output.includes('Ready to accept connections')) {
          clearTimeout(timer);
          resolve();
        }
      };
      proc.stdout.on('data', onData);
      proc.stderr.on('data', onData);
      proc.once('error', (error) => {
        clearTimeout(timer);
        reject(
          new Error(
            `redis-server is required for these tests and could not be started (${REDIS_SERVER_BIN}): ` +
              `${error.message}. Install Redis or set GATEHOUSE_TEST_REDIS_SERVER to its redis-server binary.`,
          ),
        );
      });
      proc.once('exit', (code) => {
        clearTimeout(timer);
        reject(new Error(`redis-server exited with ${code} before it was ready:\n${output}`));
      });
    });
  };

  const kill = async (): Promise<void> => {
    const proc = child;
    child = undefined;
    if (!proc || proc.exitCode !== null || proc.signalCode !== null) return;
    const exited = new Promise<void>((resolve) => proc.once('exit', () => resolve()));
    proc.kill('SIGCONT');
    proc.kill('SIGKILL');
    await exited;
  };

  await start();
  const auth = options.password ? `:${encodeURIComponent(options.password)}@` : '';
  return {
    port,
    url: `redis://${auth}127.0.0.1:${port}/0`,
    password: options.password,
    kill,
    restart: start,
    pause: () => void child?.kill('SIGSTOP'),
    resume: () => void child?.kill('SIGCONT'),
    stop: kill,
  };
}
