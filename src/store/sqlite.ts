/**
 * The embedded store: one SQLite file, WAL mode, opened and migrated in one step.
 *
 * Several processes may open the file at once (the server and `gatehouse keys ...`): WAL lets
 * readers and one writer proceed together, and `busy_timeout` makes a writer wait for the
 * other instead of failing.
 */
import { existsSync, linkSync, mkdirSync, renameSync, rmSync } from 'node:fs';
import { randomBytes } from 'node:crypto';
import { dirname, join, resolve } from 'node:path';
import BetterSqlite3 from 'better-sqlite3';
import { Kysely, SqliteDialect, sql } from 'kysely';
import { ChangeListeners, createKyselyStore } from './kysely-store.js';
import { migrateToLatest } from './migrations.js';
import { sqliteUsageBatchWriter } from './sqlite-usage-batch.js';
import type { Database } from './schema.js';
import type { Store } from './store.js';

export const SQLITE_FILE_NAME = 'gatehouse.db';

export type SqliteStoreOptions = ({ dataDir: string } | { file: string }) & {
  /** How often `watchKeys` checks for commits from other connections. */
  pollIntervalMs?: number;
  /** How long a write waits for another process's write to finish. */
  busyTimeoutMs?: number;
};

/** The database file a data directory holds. */
export function sqliteFileIn(dataDir: string): string {
  return join(dataDir, SQLITE_FILE_NAME);
}

/**
 * Usage records per transaction. The write runs on the event loop, so a call arriving meanwhile
 * waits for it: small transactions keep that wait short (docs/decisions/0003).
 */
const SQLITE_APPEND_RECORDS = 32;

/**
 * Opens in flight in this process, by file. `BEGIN IMMEDIATE` waits synchronously (busy
 * timeout), so a second open of the same file in the same process would block the event loop
 * that the first open needs to finish: the two would deadlock until the timeout.
 */
const opening = new Map<string, Promise<unknown>>();

export async function openSqliteStore(options: SqliteStoreOptions): Promise<Store> {
  const file = resolve('file' in options ? options.file : sqliteFileIn(options.dataDir));
  const previous = opening.get(file) ?? Promise.resolve();
  const current = previous.catch(() => {}).then(() => openNow(file, options));
  const settled = current.catch(() => {});
  opening.set(file, settled);
  void settled.then(() => {
    if (opening.get(file) === settled) opening.delete(file);
  });
  return current;
}

async function openNow(file: string, options: SqliteStoreOptions): Promise<Store> {
  mkdirSync(dirname(file), { recursive: true });

  const raw = new BetterSqlite3(file);
  const busyTimeoutMs = Math.max(0, Math.floor(options.busyTimeoutMs ?? 5000));
  const db = new Kysely<Database>({ dialect: new SqliteDialect({ database: raw }) });
  let migrationsApplied: string[];
  try {
    // busy_timeout first: switching to WAL and migrating may wait for another process.
    raw.pragma(`busy_timeout = ${busyTimeoutMs}`);
    raw.pragma('journal_mode = WAL');
    raw.pragma('synchronous = NORMAL');
    raw.pragma('foreign_keys = ON');
    // Statement journals (upserts keep one) in memory, not a temp file created per statement.
    raw.pragma('temp_store = MEMORY');
    migrationsApplied = await migrateExclusively(raw, db);
  } catch (error) {
    await db.destroy();
    throw error;
  }

  const watcher = dataVersionWatcher(raw, options.pollIntervalMs ?? 250);
  const writeUsageBatch = sqliteUsageBatchWriter(raw, db);
  return createKyselyStore(db, {
    kind: 'sqlite',
    migrationsApplied,
    writeKeys: (conn, write) => write(conn),
    // One connection for the whole transaction: Kysely's SQLite driver lends it to nobody else meanwhile.
    transaction: (conn, work) =>
      conn.connection().execute(async (one) => {
        await sql`begin immediate`.execute(one);
        try {
          const result = await work(one);
          await sql`commit`.execute(one);
          return result;
        } catch (error) {
          await sql`rollback`.execute(one).catch(() => {});
          throw error;
        }
      }),
    // The transaction began IMMEDIATE: it holds the database's one write lock already.
    lockKeyOwner: () => Promise.resolve(),
    // Under Kysely's lock on the connection, so a batch never joins a transaction that another
    // write holds open across an await.
    appendUsage: (records) => db.connection().execute(async () => writeUsageBatch(records)),
    maxAppendRecords: SQLITE_APPEND_RECORDS,
    watchKeys: watcher.watchKeys,
    stop: () => watcher.stop(),
  });
}

/**
 * Kysely's SQLite adapter takes no lock for migrations (it assumes one process) and runs them
 * outside a transaction. `BEGIN IMMEDIATE` on the same connection gives both: a second
 * process opening a fresh file waits here, then finds the schema current; a failing
 * migration rolls back whole.
 */
async function migrateExclusively(raw: BetterSqlite3.Database, db: Kysely<Database>): Promise<string[]> {
  raw.exec('BEGIN IMMEDIATE');
  try {
    const applied = await migrateToLatest(db as Kysely<unknown>, { disableTransactions: true });
    raw.exec('COMMIT');
    return applied;
  } catch (error) {
    if (raw.inTransaction) raw.exec('ROLLBACK');
    throw error;
  }
}

/**
 * `PRAGMA data_version` changes only when another connection commits, so polling it on the
 * store's own connection reports exactly the writes made elsewhere, for the cost of one
 * in-memory read per tick and no file I/O.
 */
function dataVersionWatcher(raw: BetterSqlite3.Database, intervalMs: number) {
  const listeners = new ChangeListeners();
  let timer: NodeJS.Timeout | undefined;
  let lastVersion: unknown;

  const readVersion = (): unknown => raw.pragma('data_version', { simple: true });

  const tick = (): void => {
    if (!raw.open) return;
    let version: unknown;
    try {
      version = readVersion();
    } catch {
      // Cannot tell whether anything changed: let the listeners reload and find out.
      listeners.notify();
      return;
    }
    if (version !== lastVersion) {
      lastVersion = version;
      listeners.notify();
    }
  };

  return {
    watchKeys(onChange: () => void): () => void {
      if (!raw.open) throw new Error('watchKeys: the store is closed');
      if (listeners.size === 0) {
        lastVersion = readVersion();
        timer = setInterval(tick, intervalMs);
        timer.unref();
      }
      const remove = listeners.add(onChange);
      return () => {
        remove();
        if (listeners.size === 0 && timer) {
          clearInterval(timer);
          timer = undefined;
        }
      };
    },
    stop(): Promise<void> {
      if (timer) clearInterval(timer);
      timer = undefined;
      return Promise.resolve();
    },
  };
}

export interface SqliteBackupResult {
  source: string;
  destination: string;
  pages: number;
}

/**
 * Copies the SQLite store to `destination` while the server may be running, with SQLite's
 * online backup API: a consistent snapshot, unlike `cp` (which can miss what is still in the
 * `-wal` file or copy a half-written page). The copy is written next to the destination under
 * a temporary name, checked (`quick_check`), switched to a single self-contained file
 * (`journal_mode=DELETE`) and only then renamed into place, so an interrupted backup never
 * leaves a damaged file under the name asked for. Refuses to overwrite an existing file.
 */
export async function backupSqliteFile(source: string, destination: string): Promise<SqliteBackupResult> {
  const from = resolve(source);
  const to = resolve(destination);
  if (from === to) throw new Error('the backup file must not be the database itself');
  if (!existsSync(from)) throw new Error(`there is no database at ${from} (check GATEHOUSE_DATA_DIR)`);
  if (existsSync(to)) throw new Error(`${to} already exists; choose a new file name`);
  mkdirSync(dirname(to), { recursive: true });

  const temp = join(dirname(to), `.${randomBytes(6).toString('hex')}.gatehouse-backup-tmp`);
  const db = new BetterSqlite3(from, { fileMustExist: true });
  try {
    db.pragma('busy_timeout = 5000');
    // One step for the whole file: a single read snapshot, which in WAL mode blocks no writer.
    const progress = await db.backup(temp, { progress: () => 0x7fffffff });
    const copy = new BetterSqlite3(temp, { fileMustExist: true });
    try {
      const check = copy.pragma('quick_check', { simple: true });
      if (check !== 'ok') throw new Error(`the copy failed its integrity check: ${String(check)}`);
      copy.pragma('journal_mode = DELETE');
    } finally {
      copy.close();
    }
    placeWithoutOverwriting(temp, to);
    return { source: from, destination: to, pages: progress.totalPages };
  } catch (error) {
    rmSync(temp, { force: true });
    rmSync(`${temp}-wal`, { force: true });
    rmSync(`${temp}-shm`, { force: true });
    throw error;
  } finally {
    db.close();
  }
}

/** `link` fails when the name is taken, so a file created meanwhile is never replaced. */
function placeWithoutOverwriting(temp: string, target: string): void {
  try {
    linkSync(temp, target);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'EEXIST')
      throw new Error(`${target} already exists; choose a new file name`, { cause: error });
    // Filesystems without hard links: the existence check above has to do.
    renameSync(temp, target);
    return;
  }
  rmSync(temp, { force: true });
}
