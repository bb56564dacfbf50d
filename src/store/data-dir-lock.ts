/**
 * One `gatehouse serve` per SQLite data directory: the server holds `gatehouse.lock` there while
 * it runs (file-lock.ts), and a second one refuses to start, naming the directory and, from
 * `gatehouse.lock.owner`, the process that holds it. The CLI (`keys`, `backup`) takes no lock.
 */
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { hostname } from 'node:os';
import { join } from 'node:path';
import { tryLockFile, type FileLock } from './file-lock.js';

const DATA_DIR_LOCK_FILE = 'gatehouse.lock';
const OWNER_FILE = 'gatehouse.lock.owner';

export class DataDirLockedError extends Error {
  override name = 'DataDirLockedError';
}

/** Locks `dataDir` for this process, or throws `DataDirLockedError` when another server holds it. */
export function lockDataDir(dataDir: string): FileLock {
  mkdirSync(dataDir, { recursive: true });
  const lock = tryLockFile(join(dataDir, DATA_DIR_LOCK_FILE));
  if (!lock) {
    throw new DataDirLockedError(
      `the data directory ${dataDir} is in use by another gatehouse serve (${holder(dataDir)}). ` +
        'With SQLite one server runs per data directory: stop the other one, or give this one its own ' +
        'GATEHOUSE_DATA_DIR (several servers share a store through GATEHOUSE_DATABASE_URL, PostgreSQL).',
    );
  }
  try {
    writeFileSync(
      join(dataDir, OWNER_FILE),
      `pid ${process.pid} on host ${hostname()}, since ${new Date().toISOString()}\n`,
      { mode: 0o600 },
    );
  } catch {
    // Only the refusal message of a second server reads it; the lock holds without it.
  }
  return lock;
}

function holder(dataDir: string): string {
  try {
    const text = readFileSync(join(dataDir, OWNER_FILE), 'utf8').trim();
    return text === '' ? 'process unknown' : text;
  } catch {
    return 'process unknown';
  }
}
