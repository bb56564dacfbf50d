/**
 * Starts the bench's child processes (upstream, floor, gateways) on loopback and guarantees
 * they all stop: `stopAll` on the normal path, `killAllNow` from the process 'exit' hook.
 * Every wait here is bounded.
 */
import { execFile, fork, spawn, type ChildProcess } from 'node:child_process';
import { get } from 'node:http';
import { createServer } from 'node:net';
import { fileURLToPath } from 'node:url';
import type { ListeningMessage } from './child-ipc.js';
import { sleep } from './stats.js';

export interface RunningProcess {
  name: string;
  pid: number;
  /** `http://127.0.0.1:PORT` */
  url: string;
  /** The last few KB of the child's stderr, for error messages. */
  stderrTail(): string;
}

const START_TIMEOUT_MS = 20_000;
const STOP_TIMEOUT_MS = 5_000;
const STDERR_TAIL_BYTES = 8192;

/** The gateway's CLI entry (dist/src/cli/main.js only exports `main`; bin/gatehouse runs it). */
const GATEHOUSE_BIN = fileURLToPath(new URL('../../bin/gatehouse', import.meta.url));

/**
 * Environment names the bench controls for the gateway; inherited values are dropped, so it runs on node's
 * defaults.
 */
const CONTROLLED_ENV = /^(GATEHOUSE_|INFERENCE_CONFIG_|HOST$|PORT$|NODE_OPTIONS$|MALLOC_)/;

export interface GatewayLaunch {
  upstreamUrl: string;
  dataDir: string;
  /** Extra environment for this gateway (a scenario's settings). */
  env: Readonly<Record<string, string>>;
  /** Extra node flags, e.g. `--cpu-prof`. */
  nodeArgs: readonly string[];
  /** Another checkout's CLI entry to run instead of this one's (the `baseline` scenario). */
  bin?: string;
}

export class ProcessGroup {
  private readonly children = new Map<ChildProcess, string>();

  /** Forks one of the bench's own server scripts and waits for its port over IPC. */
  async startBenchServer(name: string, script: string, args: readonly string[] = []): Promise<RunningProcess> {
    const child = fork(fileURLToPath(new URL(script, import.meta.url)), [...args], {
      stdio: ['ignore', 'ignore', 'pipe', 'ipc'],
      execArgv: [],
    });
    const tail = this.track(name, child);
    const port = await new Promise<number>((resolve, reject) => {
      const timer = setTimeout(
        () => fail(new Error(`${name} did not start within ${START_TIMEOUT_MS} ms`)),
        START_TIMEOUT_MS,
      );
      const onMessage = (message: ListeningMessage) => {
        if (message?.type !== 'listening') return;
        cleanup();
        resolve(message.port);
      };
      const onExit = (code: number | null) =>
        fail(new Error(`${name} exited (code ${code}) before listening:\n${tail()}`));
      const fail = (error: Error) => {
        cleanup();
        reject(error);
      };
      const cleanup = () => {
        clearTimeout(timer);
        child.off('message', onMessage);
        child.off('exit', onExit);
      };
      child.on('message', onMessage);
      child.once('exit', onExit);
    });
    return { name, pid: child.pid!, url: `http://127.0.0.1:${port}`, stderrTail: tail };
  }

  /** Starts `gatehouse serve` on a free loopback port with stdout to /dev/null, and waits for /healthz. */
  async startGateway(name: string, launch: GatewayLaunch): Promise<RunningProcess> {
    const port = await freePort();
    const env = gatehouseEnv(launch.dataDir, launch.env);
    const child = spawn(
      process.execPath,
      [
        ...launch.nodeArgs,
        launch.bin ?? GATEHOUSE_BIN,
        'serve',
        '--port',
        String(port),
        '--host',
        '127.0.0.1',
        '--upstream',
        launch.upstreamUrl,
      ],
      { stdio: ['ignore', 'ignore', 'pipe'], env },
    );
    const tail = this.track(name, child);
    const url = `http://127.0.0.1:${port}`;
    const deadline = Date.now() + START_TIMEOUT_MS;
    while (Date.now() < deadline) {
      if (child.exitCode !== null || child.signalCode !== null)
        throw new Error(`${name} exited (code ${child.exitCode}) during start:\n${tail()}`);
      if ((await httpStatus(`${url}/healthz`).catch(() => 0)) === 200)
        return { name, pid: child.pid!, url, stderrTail: tail };
      await sleep(50);
    }
    throw new Error(`${name} did not answer ${url}/healthz within ${START_TIMEOUT_MS} ms:\n${tail()}`);
  }

  /** SIGTERM to every child (the gateway drains and, with --cpu-prof, writes its profile), SIGKILL after a grace. */
  async stopAll(): Promise<void> {
    const alive = [...this.children.keys()].filter((c) => c.exitCode === null && c.signalCode === null);
    await Promise.all(
      alive.map(
        (child) =>
          new Promise<void>((resolve) => {
            const timer = setTimeout(() => {
              child.kill('SIGKILL');
              resolve();
            }, STOP_TIMEOUT_MS);
            child.once('exit', () => {
              clearTimeout(timer);
              resolve();
            });
            child.kill('SIGTERM');
          }),
      ),
    );
    this.children.clear();
  }

  /** Pids of the children still running. */
  pids(): number[] {
    return [...this.children.keys()]
      .filter((c) => c.exitCode === null && c.signalCode === null && c.pid !== undefined)
      .map((c) => c.pid!);
  }

  /** Last resort from the synchronous 'exit' hook: no waiting possible. */
  killAllNow(): void {
    for (const child of this.children.keys())
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
  }

  private track(name: string, child: ChildProcess): () => string {
    this.children.set(child, name);
    let tail = '';
    child.stderr?.setEncoding('utf8');
    child.stderr?.on('data', (text: string) => {
      tail = (tail + text).slice(-STDERR_TAIL_BYTES);
    });
    child.once('error', (error) => {
      tail += `\n[spawn error] ${error.message}`;
    });
    return () => tail.trim() || '(no stderr output)';
  }
}

/** A port that was free a moment ago on 127.0.0.1 (the gateway's log, which would name it, goes to /dev/null). */
function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      const port = typeof address === 'object' && address ? address.port : 0;
      server.close(() => resolve(port));
    });
  });
}

function httpStatus(url: string, timeoutMs = 1000): Promise<number> {
  return new Promise((resolve, reject) => {
    const req = get(url, { agent: false, timeout: timeoutMs }, (res) => {
      res.resume();
      resolve(res.statusCode ?? 0);
    });
    req.on('timeout', () => req.destroy(new Error('timeout')));
    req.on('error', reject);
  });
}

/** A clean environment for the gateway or its CLI: the bench's settings, not the caller's shell. */
function gatehouseEnv(dataDir: string, extra: Readonly<Record<string, string>>): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {};
  for (const [key, value] of Object.entries(process.env)) if (!CONTROLLED_ENV.test(key)) env[key] = value;
  return Object.assign(env, { GATEHOUSE_DATA_DIR: dataDir }, extra);
}

/** Runs `gatehouse ARGS...` (e.g. `keys create`) to completion, killed after `timeoutMs`. */
export function runGatehouse(
  args: readonly string[],
  dataDir: string,
  extraEnv: Readonly<Record<string, string>>,
  bin = GATEHOUSE_BIN,
  timeoutMs = 20_000,
): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    execFile(
      process.execPath,
      [bin, ...args],
      { env: gatehouseEnv(dataDir, extraEnv), timeout: timeoutMs, killSignal: 'SIGKILL' },
      (error, stdout, stderr) => {
        const code = error ? (typeof error.code === 'number' ? error.code : null) : 0;
        resolve({ code, stdout, stderr });
      },
    );
  });
}
