/**
 * The proxy's side of the usage write thread (usage-write-worker.ts): a worker thread with its
 * own connection to the store's database, SQLite or PostgreSQL. An encoded batch crosses as one
 * copied byte buffer (transferred, not cloned value by value), so recording a batch costs the
 * proxy's thread a memcpy; decoding, laying out parameters and the driver's work happen there.
 *
 * For SQLite, WAL lets the main connection keep reading while the thread writes, and
 * `busy_timeout` makes either side wait for the other's write lock instead of failing. The thread
 * starts at the first write and stops at `close()`; if it dies, pending writes fail (the usage
 * writer retries them) and the next write starts a new one.
 */
import { existsSync, statSync } from 'node:fs';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { Worker } from 'node:worker_threads';
import type { CompiledQuery } from 'kysely';
import type { RecordSegment } from './usage-record-codec.js';
import type { UsageWriteJob, UsageWriteReply, UsageWriteWorkerData } from './usage-write-worker.js';

interface Pending {
  resolve: (changes: number[]) => void;
  reject: (error: Error) => void;
}

export class UsageWriteThread {
  readonly #data: UsageWriteWorkerData;
  #worker: Worker | undefined;
  readonly #pending = new Map<number, Pending>();
  readonly #inFlight = new Set<Promise<number[]>>();
  #seq = 0;
  #closed = false;

  constructor(data: UsageWriteWorkerData) {
    this.#data = data;
  }

  /** Writes an encoded batch of usage records and its rollups in one transaction. */
  append(batch: RecordSegment): Promise<void> {
    const bytes = batch.copyBytes();
    return this.#send({ id: 0, batch: bytes, count: batch.count }, [bytes.buffer as ArrayBuffer]).then(() => undefined);
  }

  /** Runs compiled statements in one transaction; each one's affected row count. */
  run(queries: readonly CompiledQuery[]): Promise<number[]> {
    return this.#send({ id: 0, statements: queries.map((q) => ({ sql: q.sql, parameters: [...q.parameters] })) }, []);
  }

  /** Lets pending writes finish, then stops the thread. */
  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    await Promise.allSettled([...this.#inFlight]);
    const worker = this.#worker;
    if (!worker) return;
    const exited = new Promise<void>((resolve) => worker.once('exit', () => resolve()));
    // An idle worker is unref'd: without this, a process with nothing else left ends while
    // waiting here, and the caller's next lines ("shutdown complete") never run.
    worker.ref();
    worker.postMessage({ close: true } satisfies UsageWriteJob);
    await exited;
  }

  #send(job: Exclude<UsageWriteJob, { close: true }>, transfer: ArrayBuffer[]): Promise<number[]> {
    if (this.#closed) return Promise.reject(new Error('the store is closed'));
    let worker: Worker;
    try {
      worker = this.#start();
    } catch (error) {
      return Promise.reject(error as Error);
    }
    const id = ++this.#seq;
    // Referenced while a write is pending, so the process cannot exit under it; idle, it must
    // not keep the process alive.
    if (this.#pending.size === 0) worker.ref();
    const result = new Promise<number[]>((resolve, reject) => this.#pending.set(id, { resolve, reject }));
    // Posted outside the closures above, which live until the thread answers: a closure that
    // named the job would keep its parameters alive until then.
    try {
      worker.postMessage({ ...job, id }, transfer);
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

  #start(): Worker {
    if (this.#worker) return this.#worker;
    const worker = new Worker(workerScript(), {
      workerData: this.#data,
      // It decodes one batch at a time: a small young generation keeps the thread's memory small.
      resourceLimits: { maxYoungGenerationSizeMb: 4 },
    });
    worker.unref();
    worker.on('message', (reply: UsageWriteReply) => {
      const pending = this.#pending.get(reply.id);
      if (!pending) return;
      this.#pending.delete(reply.id);
      if ('changes' in reply) pending.resolve(reply.changes);
      else pending.reject(Object.assign(new Error(reply.error), { code: reply.code }));
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
    worker.on('exit', (code) => fail(new Error(`the usage write thread exited (code ${code})`)));
    this.#worker = worker;
    return worker;
  }
}

/**
 * The PostgreSQL `application_name` of the write thread's connection for a schema, so an operator
 * can tell it apart in pg_stat_activity.
 */
export function usageWriterApplicationName(schema: string): string {
  return `gatehouse usage writer (${schema})`;
}

/** The worker thread's own modules: they must be built when the sources run untranspiled. */
const WORKER_MODULES = ['store/usage-write-worker', 'store/usage-rows', 'store/usage-record-codec', 'store/store'];

/**
 * The compiled worker module. Node 20 cannot start a worker from TypeScript, so when this file
 * runs from its sources (the test suite, which `npm test` builds first) the worker comes from
 * `dist/`; a build older than the sources is refused rather than silently tested.
 */
export function workerScript(): URL {
  const here = fileURLToPath(import.meta.url);
  if (here.endsWith('.js')) return new URL('./usage-write-worker.js', import.meta.url);
  const srcRoot = here.replace(/[\\/]store[\\/]usage-write-thread\.ts$/, '');
  const distRoot = srcRoot.replace(/([\\/])src$/, '$1dist$1src');
  for (const module of WORKER_MODULES) {
    const built = `${distRoot}/${module}.js`;
    if (!existsSync(built)) throw new Error(`the usage write thread needs the build: ${built} is missing (run npm run build)`);
    if (statSync(built).mtimeMs < statSync(`${srcRoot}/${module}.ts`).mtimeMs) {
      throw new Error(`the usage write thread needs a fresh build: ${built} is older than its source (run npm run build)`);
    }
  }
  return pathToFileURL(`${distRoot}/store/usage-write-worker.js`);
}
