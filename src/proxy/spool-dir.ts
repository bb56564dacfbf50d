/**
 * Where this process spools request bodies: a directory of its own under `<data dir>/spool`,
 * named at random and holding a lock file for as long as the process runs (store/file-lock.ts),
 * so several servers sharing a data directory (PostgreSQL replicas) never touch each other's
 * files. At start, a sibling directory whose lock is free belongs to a process that has ended
 * and is removed; anything else there is left alone.
 */
import { existsSync, mkdirSync, readdirSync, renameSync, rmSync } from 'node:fs';
import { randomUUID } from 'node:crypto';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { tryLockFile, type FileLock } from '../store/file-lock.js';

const OWNER_LOCK = 'owner.lock';

export interface SpoolDir {
  readonly dir: string;
  /** Releases the lock and removes the directory (once no call is in flight). */
  close(): void;
}

/**
 * Opens this process's spool directory under `parent`, or under the system's temp dir when
 * `parent` cannot be made (a read-only data dir, with the store in PostgreSQL).
 */
export function openSpoolDir(parent: string): SpoolDir {
  for (const candidate of [parent, join(tmpdir(), `gatehouse-spool-${process.getuid?.() ?? 'user'}`)]) {
    try {
      return openIn(candidate);
    } catch {
      // try the next place
    }
  }
  throw new Error(`No directory for request bodies could be made (tried ${parent} and the system's temp dir).`);
}

function openIn(parent: string): SpoolDir {
  mkdirSync(parent, { recursive: true, mode: 0o700 });
  removeEnded(parent);
  const id = randomUUID();
  // Made under a dot name, which the sweep skips, and renamed once its lock is held.
  const staging = join(parent, `.${id}`);
  mkdirSync(staging, { mode: 0o700 });
  let lock: FileLock | undefined;
  try {
    lock = tryLockFile(join(staging, OWNER_LOCK));
    if (!lock) throw new Error(`the new spool directory ${staging} is locked`);
    const dir = join(parent, id);
    renameSync(staging, dir);
    const held = lock;
    return {
      dir,
      close() {
        held.release();
        rmSync(dir, { recursive: true, force: true });
      },
    };
  } catch (error) {
    lock?.release();
    rmSync(staging, { recursive: true, force: true });
    throw error;
  }
}

/** Removes the spool directories of processes that have ended: their lock is free. */
function removeEnded(parent: string): void {
  for (const entry of readdirSync(parent, { withFileTypes: true })) {
    if (!entry.isDirectory() || entry.name.startsWith('.')) continue;
    const dir = join(parent, entry.name);
    const lockFile = join(dir, OWNER_LOCK);
    if (!existsSync(lockFile)) continue;
    let lock: FileLock | undefined;
    try {
      lock = tryLockFile(lockFile);
    } catch {
      continue; // removed meanwhile, or unreadable: not ours to judge
    }
    if (!lock) continue; // its process runs
    lock.release();
    rmSync(dir, { recursive: true, force: true });
  }
}
