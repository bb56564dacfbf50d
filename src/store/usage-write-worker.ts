/**
 * The usage write thread's code (started by usage-write-thread.ts, never imported). It holds its
 * own connection to the store's database and, for each batch the proxy's thread sends as bytes,
 * decodes the records, lays out the statements (usage-rows.ts) and runs them in one transaction.
 *
 * Why a thread: building a 500-record batch (objects, thousands of parameters, the driver's
 * encoding) on the proxy's thread was most of what usage recording cost there (docs/
 * benchmarks.md), and better-sqlite3 is synchronous besides. Here none of that touches the
 * event loop that serves requests and streams.
 *
 * Jobs run one at a time, in the order they arrive.
 */
import { readlinkSync } from 'node:fs';
import { getPriority, setPriority } from 'node:os';
import { finished } from 'node:stream/promises';
import type BetterSqlite3 from 'better-sqlite3';
import { parentPort, workerData } from 'node:worker_threads';
import { decodeRecords } from './usage-record-codec.js';
import { batchStatements, type Statement, type UsageSqlTexts } from './usage-rows.js';

export type UsageWriteTarget =
  | { kind: 'sqlite'; file: string; busyTimeoutMs: number }
  /** `applicationName`: how the connection shows in pg_stat_activity (usageWriterApplicationName). */
  | { kind: 'postgres'; url: string; schema: string; applicationName: string };

export interface UsageWriteWorkerData {
  target: UsageWriteTarget;
  sql: UsageSqlTexts;
}

/** What the thread is asked to do: write an encoded batch, or run statements (e.g. a prune). */
export type UsageWriteJob = { id: number; batch: Uint8Array; count: number } | { id: number; statements: Statement[] } | { close: true };
export type UsageWriteReply = { id: number; changes: number[] } | { id: number; error: string; code: string | undefined };

interface Connection {
  /** Runs the statements in one transaction; each one's affected row count. */
  run(statements: readonly Statement[]): Promise<number[]>;
  close(): Promise<void>;
}

async function openConnection(target: UsageWriteTarget): Promise<Connection> {
  if (target.kind === 'sqlite') {
    const { default: Database } = await import('better-sqlite3');
    const db = new Database(target.file);
    db.pragma(`busy_timeout = ${target.busyTimeoutMs}`);
    db.pragma('synchronous = NORMAL');
    db.pragma('foreign_keys = ON');
    // Multi-row INSERTs and upserts keep a statement journal; on disk that is a temp file created,
    // written and unlinked per statement (~1 pwrite per recorded call, measured with strace).
    db.pragma('temp_store = MEMORY');
    const prepared = new Map<string, BetterSqlite3.Statement<unknown[]>>();
    const runAll = db.transaction((statements: readonly Statement[]) =>
      statements.map(({ sql, parameters }) => {
        if (parameters === undefined) throw new Error('usage write thread: COPY is for PostgreSQL only');
        let statement = prepared.get(sql);
        if (!statement) {
          statement = db.prepare<unknown[]>(sql);
          prepared.set(sql, statement);
        }
        // Spread, not one array: better-sqlite3 reads an array argument element by element
        // through V8's generic property lookup, arguments directly (~1 µs less per row of 23).
        return statement.run(...parameters).changes;
      }),
    );
    return {
      run: (statements) => Promise.resolve(runAll(statements)),
      close: () => Promise.resolve(void db.close()),
    };
  }

  const { default: pg } = await import('pg');
  // One connection, opened on first use and again after it broke (the proxy's writer retries).
  let client: InstanceType<typeof pg.Client> | undefined;
  const connected = async () => {
    if (client) return client;
    const c = new pg.Client({ connectionString: target.url, options: `-c search_path=${target.schema}`, application_name: target.applicationName });
    c.on('error', () => {
      if (client === c) client = undefined;
    });
    await c.connect();
    client = c;
    return c;
  };
  return {
    async run(statements) {
      const c = await connected();
      try {
        await c.query('begin');
        // Usage rows may wait for the WAL writer (~200 ms) instead of an fsync per batch: a
        // database crash then loses at most the last fraction of a second of records, within
        // what a gateway crash loses anyway (the usage writer's batching); keys and sessions are
        // written on the store's own connections, durably.
        await c.query('set local synchronous_commit = off');
        const counts: number[] = [];
        for (const statement of statements) {
          if (statement.copyRows !== undefined) counts.push(await copyIn(c, statement.sql, statement.copyRows));
          else counts.push((await c.query({ name: preparedName(statement.sql), text: statement.sql, values: statement.parameters.map(withoutNul) })).rowCount ?? 0);
        }
        await c.query('commit');
        return counts;
      } catch (error) {
        await c.query('rollback').catch(() => {
          if (client === c) client = undefined;
          c.end().catch(() => {});
        });
        throw error;
      }
    },
    async close() {
      await client?.end().catch(() => {});
      client = undefined;
    },
  };
}

/**
 * Every batch sends the same few rollup upserts (one text per chunk size, usage-queries.ts), so
 * each is a named prepared statement: PostgreSQL parses and plans it once per connection instead
 * of once per batch (pg prepares it again on a new connection). Unnamed, a batch's two one-row
 * upserts took 400-600 µs of server CPU, 0.8-1.2 µs per recorded call at 500 calls a batch;
 * named, ~100 (docs/benchmarks.md). Only batches run on PostgreSQL's thread (writeBatch uses the
 * store's pool), so the names stay a small, fixed set.
 */
const statementNames = new Map<string, string>();
function preparedName(sql: string): string {
  let name = statementNames.get(sql);
  if (name === undefined) {
    name = `gatehouse_usage_${statementNames.size + 1}`;
    statementNames.set(sql, name);
  }
  return name;
}

/**
 * PostgreSQL text cannot hold NUL (a client can put one in, say, a model name): it becomes
 * U+FFFD, as in the COPY rows (usage-rows.ts), so one odd call cannot get its whole batch refused.
 */
function withoutNul(value: unknown): unknown {
  return typeof value === 'string' && value.includes('\0') ? value.replaceAll('\0', '\uFFFD') : value;
}

/** `COPY ... FROM STDIN` with `rows` as its data; the rows copied. */
async function copyIn(client: import('pg').Client, sql: string, rows: string): Promise<number> {
  const { from: copyFrom } = await import('pg-copy-streams');
  const stream = client.query(copyFrom(sql));
  stream.end(rows);
  await finished(stream);
  return stream.rowCount;
}

/** How much nicer than the process this thread runs (Linux), see yieldToTheProxyThread. */
const WRITE_THREAD_NICENESS = 5;

/**
 * Lowers this thread's scheduling priority below the proxy's thread. A batch takes the thread a
 * few milliseconds of CPU; on a busy machine, at equal priority, its wake-ups took the core from
 * the event loop that serves every connection, whose calls then all waited (p99 at 50
 * connections: 13 ms with recording, 5 ms without; docs/benchmarks.md). Nicer, it uses what the
 * proxy leaves, still about a quarter of a contended core: far more than it needs to keep up.
 * Linux only (a thread id is a valid target of setpriority there); elsewhere, or when refused,
 * the thread keeps the process's priority.
 */
function yieldToTheProxyThread(): void {
  if (process.platform !== 'linux') return;
  try {
    const tid = Number(readlinkSync('/proc/thread-self').split('/').pop());
    if (!Number.isInteger(tid) || tid <= 0) return;
    setPriority(tid, Math.min(19, getPriority(tid) + WRITE_THREAD_NICENESS));
  } catch {
    // No /proc, or not allowed: the default priority works, only less smoothly under load.
  }
}

function serve(): void {
  yieldToTheProxyThread();
  const port = parentPort;
  if (!port) throw new Error('usage-write-worker.ts runs as a worker thread (see usage-write-thread.ts)');
  const data = workerData as UsageWriteWorkerData;
  // Opened on the first job, and again on the next one if opening failed.
  let connection: Promise<Connection> | undefined;
  const connect = (): Promise<Connection> =>
    (connection ??= openConnection(data.target).catch((error: unknown) => {
      connection = undefined;
      throw error;
    }));
  let queue: Promise<void> = Promise.resolve();

  const handle = async (job: Exclude<UsageWriteJob, { close: true }>): Promise<UsageWriteReply> => {
    try {
      const statements = 'batch' in job ? batchStatements(decodeRecords(job.batch, job.count), data.sql) : job.statements;
      return { id: job.id, changes: await (await connect()).run(statements) };
    } catch (error) {
      const e = error as { message?: unknown; code?: unknown } | undefined;
      return { id: job.id, error: String(e?.message ?? error), code: typeof e?.code === 'string' ? e.code : undefined };
    }
  };

  port.on('message', (job: UsageWriteJob) => {
    queue = queue.then(async () => {
      if ('close' in job) {
        await (await connection?.catch(() => undefined))?.close();
        port.close();
        process.exit(0);
      }
      port.postMessage(await handle(job));
    });
  });
}

serve();
