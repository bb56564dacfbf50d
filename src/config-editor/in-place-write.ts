/**
 * Replaces a file's bytes through an open read-write descriptor, for when rename cannot (a
 * single-file bind mount). A failed write must not leave a mix of old and new text, so: keep
 * the old bytes in memory, reserve the extra space past the old end first, overwrite only
 * space already allocated, truncate last; on any error put the old bytes and length back.
 */
import type { FileHandle } from 'node:fs/promises';

/** How a failed in-place write left the file. */
export type InPlaceOutcome =
  /** Nothing was written. */
  | 'untouched'
  /** Bytes were written, then the old bytes and length were put back (the mtime changed). */
  | 'restored'
  /** Putting the old bytes back failed too: the file may hold anything. */
  | 'damaged';

export class InPlaceWriteError extends Error {
  override name = 'InPlaceWriteError';
  constructor(
    readonly outcome: InPlaceOutcome,
    /** The file's bytes before the write, for a copy when `outcome` is `damaged`. */
    readonly oldBytes: Buffer,
    /** Why putting the old bytes back failed, when `outcome` is `damaged`. */
    readonly restoreError: unknown,
    options: { cause: unknown },
  ) {
    super(`in-place write failed (${outcome})`, options);
  }
}

/** Writes `bytes` over the file open as `handle` (read-write, position 0). */
export async function overwriteInPlace(handle: FileHandle, bytes: Buffer): Promise<void> {
  const oldBytes = await handle.readFile();
  const oldLength = oldBytes.length;
  // How far the write got: what a restore has to undo.
  let stage: 'none' | 'extended' | 'overwritten' = 'none';
  try {
    if (bytes.length > oldLength) {
      // Reserve the space before changing a byte of the old text; zeros rather than the new
      // tail, because old text + NUL bytes is not YAML, so a poll landing here cannot load it.
      // The sync surfaces an ENOSPC that a filesystem only reports when flushing.
      stage = 'extended';
      await writeAll(handle, Buffer.alloc(bytes.length - oldLength), oldLength);
      await handle.sync();
    }
    stage = 'overwritten';
    await writeAll(handle, bytes, 0);
    if (bytes.length < oldLength) await handle.truncate(bytes.length);
    await handle.sync();
  } catch (error) {
    if (stage === 'none') throw new InPlaceWriteError('untouched', oldBytes, undefined, { cause: error });
    try {
      // After a failed reservation the old bytes are intact; rewriting them could itself need
      // space (copy-on-write filesystems), so only the length is put back.
      if (stage === 'overwritten') await writeAll(handle, oldBytes, 0);
      await handle.truncate(oldLength);
      await handle.sync();
    } catch (restoreError) {
      throw new InPlaceWriteError('damaged', oldBytes, restoreError, { cause: error });
    }
    throw new InPlaceWriteError('restored', oldBytes, undefined, { cause: error });
  }
}

/** Writes all of `bytes` at `position` (a write may be short, e.g. when space runs out). */
export async function writeAll(handle: FileHandle, bytes: Buffer, position: number): Promise<void> {
  let offset = 0;
  while (offset < bytes.length) {
    const { bytesWritten } = await handle.write(bytes, offset, bytes.length - offset, position + offset);
    if (bytesWritten === 0) throw Object.assign(new Error('write made no progress'), { code: 'EIO' });
    offset += bytesWritten;
  }
}
