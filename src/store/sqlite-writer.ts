/**
 * A worker thread with its own connection to the SQLite file, for the usage writes. The driver
 * (better-sqlite3) is synchronous: a batch of a few hundred rows with their index updates takes
 * milliseconds, which on the main thread would stall every request and stream for that long.
 * Here the main thread only hands over SQL text and parameters (`CompiledQuery`), and the worker
 * runs them in one transaction with prepared statements it keeps.
 *
 * WAL lets the main connection keep reading while the worker writes; `busy_timeout` makes either
 * side wait for the other's write lock instead of failing. The worker is started at the first
 * write and stopped by `close()`; if it dies, pending writes fail (the usage writer retries them)
 * and the next write starts a new one.
 *
 * The worker's code is plain CommonJS evaluated from a string: it needs nothing but the driver,
 * and a separate file would not exist when the sources run untranspiled (tests).
 */
import { createRequire } from 'node:module';
import { Worker } from 'node:worker_threads';
import type { CompiledQuery } from 'kysely';

const WORKER_SOURCE = `
const { parentPort, workerData } = require('node:worker_threads');
const Database = require(workerData.driver);
const db = new Database(workerData.file);
db.pragma('busy_timeout = ' + workerData.busyTimeoutMs);
db.pragma('synchronous = NORMAL');
db.pragma('foreign_keys = ON');
// Multi-row INSERTs and upserts keep a statement journal; on disk that is a temp file created,
// written and unlinked per statement (~1 pwrite per recorded call, measured with strace).
db.pragma('temp_store = MEMORY');
const prepared = new Map();
const runAll = db.transaction((queries) => queries.map((q) => {
  let statement = prepared.get(q.sql);
  if (!statement) {
    statement = db.prepare(q.sql);
    prepared.set(q.sql, statement);
  }
  return statement.run(q.parameters).changes;
}));
parentPort.on('message', (message) => {
  if (message.close) {
    db.close();
    process.exit(0);
  }
  try {
    parentPort.postMessage({ id: message.id, changes: runAll(message.queries) });
  } catch (error) {
    parentPort.postMessage({ id: message.id, error: String((error && error.message) || error), code: error && error.code });
  }
});
`;

interface Pending {
  resolve: (changes: number[]) => void;
  reject: (error: Error) => void;
}

export class SqliteWriteWorker {
  readonly #file: string;
  readonly #busyTimeoutMs: number;
  #worker: Worker | undefined;
  readonly #pending = new Map<number, Pending>();
  readonly #inFlight = new Set<Promise<number[]>>();
  #seq = 0;
  #closed = false;

  constructor(file: string, busyTimeoutMs: number) {
    this.#file = file;
    this.#busyTimeoutMs = busyTimeoutMs;
  }

  run(queries: readonly CompiledQuery[]): Promise<number[]> {
    if (this.#closed) return Promise.reject(new Error('the SQLite store is closed'));
    const worker = this.#start();
    const id = ++this.#seq;
    // Referenced while a write is pending, so the process cannot exit under it; idle, it must
    // not keep the process alive.
    if (this.#pending.size === 0) worker.ref();
    const result = new Promise<number[]>((resolve, reject) => this.#pending.set(id, { resolve, reject }));
    // Posted outside the closures above, which live until the worker answers: a closure that
    // named `queries` would keep the whole batch (thousands of parameters) alive until then.
    try {
      worker.postMessage({ id, queries: queries.map((q) => ({ sql: q.sql, parameters: q.parameters })) });
    } catch (error) {
      this.#pending.get(id)?.reject(error as Error);
      this.#pending.delete(id);
    }
    this.#inFlight.add(result);
    const settled = () => {
      this.#inFlight.delete(result);
      if (this.#pending.size === 0 && this.#worker === worker) worker.unref();
    };
    result.then(settled, settled);
    return result;
  }

  /** Lets pending writes finish, then stops the worker. */
  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    await Promise.allSettled([...this.#inFlight]);
    const worker = this.#worker;
    if (!worker) return;
    const exited = new Promise<void>((resolve) => worker.once('exit', () => resolve()));
    worker.postMessage({ close: true });
    await exited;
  }

  #start(): Worker {
    if (this.#worker) return this.#worker;
    const driver = createRequire(import.meta.url).resolve('better-sqlite3');
    const worker = new Worker(WORKER_SOURCE, {
      eval: true,
      workerData: { driver, file: this.#file, busyTimeoutMs: this.#busyTimeoutMs },
      // It only runs prepared statements: a small young generation keeps its isolate's memory small.
      resourceLimits: { maxYoungGenerationSizeMb: 2 },
    });
    worker.unref();
    worker.on('message', (message: { id: number; changes?: number[]; error?: string; code?: string }) => {
      const pending = this.#pending.get(message.id);
      if (!pending) return;
      this.#pending.delete(message.id);
      if (message.changes) pending.resolve(message.changes);
      else pending.reject(Object.assign(new Error(message.error ?? 'SQLite write failed'), { code: message.code }));
    });
    const fail = (error: Error) => {
      if (this.#worker !== worker) return;
      this.#worker = undefined;
      for (const [id, pending] of this.#pending) {
        this.#pending.delete(id);
        pending.reject(error);
      }
    };
    worker.on('error', fail);
    worker.on('exit', (code) => fail(new Error(`the SQLite writer thread exited (code ${code})`)));
    this.#worker = worker;
    return worker;
  }
}
