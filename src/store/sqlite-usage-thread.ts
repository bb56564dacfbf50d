/**
 * SQLite usage batches are written by a worker thread with its own connection to the file, so
 * a batch's inserts (better-sqlite3 is synchronous) never pause the proxy's event loop. The
 * thread starts with the first batch. A batch the thread could not write, or lost when the thread
 * died, is rejected: the usage writer keeps it and retries, on a new thread if need be.
 */
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { Worker } from 'node:worker_threads';
import type { UsageRecord } from './store.js';

export interface UsageWriteThreadData {
  file: string;
  busyTimeoutMs: number;
}
export type UsageWriteRequest = { type: 'write'; seq: number; records: readonly UsageRecord[] } | { type: 'close' };
export interface UsageWriteReply {
  seq: number;
  /** The driver's error, with its code (`SQLITE_CONSTRAINT_PRIMARYKEY` ...) for the writer's retry rule. */
  error?: { message: string; code?: string };
}

export interface UsageWriteThread {
  /** Resolves once the batch is committed. */
  append(records: readonly UsageRecord[]): Promise<void>;
  /** Lets the batches in flight finish, then ends the thread. */
  close(): Promise<void>;
}

const CLOSE_WAIT_MS = 5000;

export function createUsageWriteThread(data: UsageWriteThreadData): UsageWriteThread {
  let current: RunningThread | undefined;
  const inFlight = new Set<Promise<void>>();

  return {
    append(records) {
      if (!current?.alive) current = new RunningThread(spawnWorker(data));
      const done = current.write(records);
      const settled = done.then(
        () => {},
        () => {},
      );
      inFlight.add(settled);
      void settled.then(() => inFlight.delete(settled));
      return done;
    },
    async close() {
      const running = current;
      current = undefined;
      await Promise.all(inFlight);
      if (running?.alive) await running.stop();
    },
  };
}

/** One worker and the batches sent to it; a thread that failed takes no more batches. */
class RunningThread {
  alive = true;
  readonly #thread: Worker;
  readonly #pending = new Map<number, { resolve: () => void; reject: (error: Error) => void }>();
  #seq = 0;

  constructor(thread: Worker) {
    this.#thread = thread;
    thread.on('message', (reply: UsageWriteReply) => {
      const batch = this.#pending.get(reply.seq);
      if (!batch) return;
      this.#pending.delete(reply.seq);
      if (reply.error === undefined) batch.resolve();
      else batch.reject(Object.assign(new Error(reply.error.message), { code: reply.error.code }));
      // An idle thread must not keep the process alive; one with a batch in flight must.
      if (this.#pending.size === 0) thread.unref();
    });
    thread.on('error', (error) => this.#fail(error));
    thread.on('exit', (code) => this.#fail(new Error(`the usage write thread stopped (exit code ${code})`)));
  }

  write(records: readonly UsageRecord[]): Promise<void> {
    const seq = ++this.#seq;
    const done = new Promise<void>((resolve, reject) => this.#pending.set(seq, { resolve, reject }));
    this.#thread.ref();
    this.#thread.postMessage({ type: 'write', seq, records } satisfies UsageWriteRequest);
    return done;
  }

  /** Asks the thread to close its connection and end; ends it by force if it does not. */
  async stop(): Promise<void> {
    this.alive = false;
    this.#thread.ref();
    const exited = new Promise<void>((resolve) => this.#thread.once('exit', () => resolve()));
    this.#thread.postMessage({ type: 'close' } satisfies UsageWriteRequest);
    const timer = setTimeout(() => void this.#thread.terminate(), CLOSE_WAIT_MS);
    await exited;
    clearTimeout(timer);
  }

  #fail(error: Error): void {
    this.alive = false;
    for (const batch of this.#pending.values()) batch.reject(error);
    this.#pending.clear();
  }
}

/** From the compiled `dist/` the worker is a plain module; from the TypeScript sources tsx loads it. */
function spawnWorker(data: UsageWriteThreadData): Worker {
  const here = import.meta.url;
  if (!here.endsWith('.ts')) return new Worker(new URL('./sqlite-usage-worker.js', here), { workerData: data });
  const [tsx, entry, parent] = [tsxEsmApi(here), new URL('./sqlite-usage-worker.ts', here).href, here].map((url) =>
    JSON.stringify(url),
  );
  const code = `import(${tsx}).then((tsx) => tsx.tsImport(${entry}, ${parent}))`;
  return new Worker(code, { eval: true, workerData: data });
}

/** tsx's ESM API module, found from its package.json (its CommonJS build cannot load ESM workers). */
function tsxEsmApi(from: string): string {
  const manifest = createRequire(from).resolve('tsx/package.json');
  const { exports } = JSON.parse(readFileSync(manifest, 'utf8')) as {
    exports: Record<string, { import: { default: string } }>;
  };
  return pathToFileURL(join(dirname(manifest), exports['./esm/api']!.import.default)).href;
}
