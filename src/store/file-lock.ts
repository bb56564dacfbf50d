/**
 * An exclusive lock on a file that the operating system drops when the process ends, however it
 * ends (a crash, SIGKILL), so a lock is never left stale: SQLite's own locking (POSIX `fcntl` on
 * Linux and macOS) through better-sqlite3, which the store already depends on. SQLite also
 * refuses a second holder inside the same process. docs/decisions/0005-data-dir-lock.md.
 */
import BetterSqlite3 from 'better-sqlite3';

export interface FileLock {
  /** Gives the lock back (idempotent). */
  release(): void;
}

/** Takes the lock on `path` (created when missing), or undefined when another holder has it. */
export function tryLockFile(path: string): FileLock | undefined {
  const db = new BetterSqlite3(path, { timeout: 0 });
  try {
    // No journal file beside the lock: nothing is ever written.
    db.pragma('journal_mode = MEMORY');
    db.pragma('locking_mode = EXCLUSIVE');
    // Held until the connection closes: the transaction is never committed.
    db.exec('BEGIN EXCLUSIVE');
  } catch (error) {
    db.close();
    if ((error as { code?: unknown }).code === 'SQLITE_BUSY') return undefined;
    throw error;
  }
  return {
    release() {
      if (db.open) db.close();
    },
  };
}
