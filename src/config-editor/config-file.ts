/**
 * The config file on disk: where it is (or why the editor is off), reading it together with a
 * version token taken from the same open descriptor, and replacing its bytes exactly.
 *
 * Writing follows llama-swap's reload rules (docs/llama-swap.md, "Reload"): llama-swap polls
 * mtime/size every 2 s and reloads on any change, so the file must go from old to new bytes in one
 * step. The new bytes go to a temp file next to the target, named so that a `-config-dir` scan
 * never loads it (it does not end in `.yml`/`.yaml`), then `rename` replaces the target. Where
 * rename cannot work (the file is a single-file bind mount: EXDEV/EBUSY; a directory the gateway
 * may not write: EACCES/EPERM) the bytes are written in place instead (`in-place-write.ts`), which
 * llama-swap may briefly see half-written, but which puts the old bytes back when it fails.
 */
import { createHash, randomBytes } from 'node:crypto';
import { constants as fsConstants } from 'node:fs';
import * as fsp from 'node:fs/promises';
import { basename, dirname, isAbsolute, join, resolve } from 'node:path';
import { InPlaceWriteError, overwriteInPlace, writeAll, type InPlaceOutcome } from './in-place-write.js';

export type ConfigTarget =
  | {
      enabled: true;
      /** as configured (may be a symlink) */ path: string;
      /** what gets read and written */ realPath: string;
    }
  | { enabled: false; path: string | null; reason: string };

const CONFIG_FILE_SETTING = 'INFERENCE_CONFIG_FILE';

/**
 * Decides whether the editor is on. Evaluated per request, so creating the file (or fixing a
 * symlink) takes effect without a restart; changing the setting itself needs one.
 */
export async function resolveConfigTarget(configured: string | undefined, cwd = process.cwd()): Promise<ConfigTarget> {
  const set =
    `Set ${CONFIG_FILE_SETTING} to the absolute path of the config.yaml llama-swap is started with (its ` +
    `-config flag), e.g. ${CONFIG_FILE_SETTING}=/etc/llama-swap/config.yaml, and restart Gatehouse.`;
  if (configured === undefined || configured.trim() === '') {
    return {
      enabled: false,
      path: null,
      reason: `The config editor is off: ${CONFIG_FILE_SETTING} is not set. ${set}`,
    };
  }
  if (!isAbsolute(configured)) {
    return {
      enabled: false,
      path: configured,
      reason:
        `The config editor is off: ${CONFIG_FILE_SETTING} is "${configured}", a relative path. ` +
        `Set it to an absolute path (from Gatehouse's working directory that would be ` +
        `${resolve(cwd, configured)}) and restart Gatehouse.`,
    };
  }
  let realPath: string;
  try {
    realPath = await fsp.realpath(configured);
  } catch (error) {
    const code = errnoCode(error);
    if (code === 'ENOENT' || code === 'ENOTDIR') {
      const link = await fsp.readlink(configured).catch(() => undefined);
      const what = link === undefined ? 'does not exist' : `is a symlink to ${link}, which does not exist`;
      return {
        enabled: false,
        path: configured,
        reason: `The config editor is off: ${CONFIG_FILE_SETTING}=${configured} ${what}. ${set}`,
      };
    }
    if (code === 'ELOOP') {
      return {
        enabled: false,
        path: configured,
        reason: `The config editor is off: ${CONFIG_FILE_SETTING}=${configured} is a symlink loop. ${set}`,
      };
    }
    return {
      enabled: false,
      path: configured,
      reason:
        `The config editor is off: ${CONFIG_FILE_SETTING}=${configured} cannot be resolved ` +
        `(${describeError(error)}). Give Gatehouse's user access to it, or ` +
        `${set.charAt(0).toLowerCase()}${set.slice(1)}`,
    };
  }
  const stats = await fsp.stat(realPath);
  if (stats.isDirectory()) {
    return {
      enabled: false,
      path: configured,
      reason:
        `The config editor is off: ${CONFIG_FILE_SETTING}=${configured} is a directory. Set it to the ` +
        `config file itself (e.g. ${join(configured, 'config.yaml')}); ` +
        'a -config-dir directory of fragments cannot be edited here.',
    };
  }
  if (!stats.isFile()) {
    return {
      enabled: false,
      path: configured,
      reason: `The config editor is off: ${CONFIG_FILE_SETTING}=${configured} is not a regular file. ${set}`,
    };
  }
  try {
    await fsp.access(realPath, fsConstants.R_OK);
  } catch (error) {
    return {
      enabled: false,
      path: configured,
      reason:
        `The config editor is off: Gatehouse may not read ${realPath} (${describeError(error)}). Give ` +
        `Gatehouse's user read and write access to it.`,
    };
  }
  return { enabled: true, path: configured, realPath };
}

// ---------------------------------------------------------------------------------------
// Versions: what a client read, so a save can tell whether the file changed since.

export interface FileVersion {
  /** Modification time in nanoseconds (full precision of the filesystem). */
  mtimeNs: bigint;
  size: number;
  sha256: string;
}

const VERSION_PREFIX = 'v1';

/** Opaque to clients: `v1.<mtimeNs>.<size>.<sha256 hex>`. */
export function formatVersion(version: FileVersion): string {
  return `${VERSION_PREFIX}.${version.mtimeNs}.${version.size}.${version.sha256}`;
}

export function parseVersion(token: string): FileVersion | undefined {
  const match = /^v1\.(\d{1,30})\.(\d{1,16})\.([0-9a-f]{64})$/.exec(token);
  if (!match) return undefined;
  return { mtimeNs: BigInt(match[1]!), size: Number(match[2]), sha256: match[3]! };
}

/** What differs between two versions (empty: same file state). */
export function versionDifferences(a: FileVersion, b: FileVersion): Array<'mtime' | 'size' | 'content'> {
  const out: Array<'mtime' | 'size' | 'content'> = [];
  if (a.mtimeNs !== b.mtimeNs) out.push('mtime');
  if (a.size !== b.size) out.push('size');
  if (a.sha256 !== b.sha256) out.push('content');
  return out;
}

export function sha256Hex(bytes: Uint8Array): string {
  return createHash('sha256').update(bytes).digest('hex');
}

// ---------------------------------------------------------------------------------------
// Reading

export interface ConfigSnapshot {
  bytes: Buffer;
  /** The bytes as UTF-8, a BOM kept as U+FEFF, so encoding `text` gives `bytes` back when `lossless`. */
  text: string;
  /** False when the file is not valid UTF-8 (then `text` has U+FFFD where bytes were invalid). */
  lossless: boolean;
  version: FileVersion;
  mode: number;
  uid: number;
  gid: number;
}

/**
 * Reads the file and its version from one open descriptor: fstat, read, fstat again. If a
 * writer was busy meanwhile (mtime or size moved), it reads again, so `text` always matches
 * `version`.
 */
export async function readSnapshot(realPath: string): Promise<ConfigSnapshot> {
  for (let attempt = 0; ; attempt++) {
    const handle = await fsp.open(realPath, 'r');
    try {
      const before = await handle.stat({ bigint: true });
      const bytes = await handle.readFile();
      const after = await handle.stat({ bigint: true });
      const settled =
        before.mtimeNs === after.mtimeNs && before.size === after.size && Number(after.size) === bytes.length;
      if (settled || attempt >= 4) {
        const { text, lossless } = decodeUtf8(bytes);
        return {
          bytes,
          text,
          lossless,
          version: { mtimeNs: after.mtimeNs, size: bytes.length, sha256: sha256Hex(bytes) },
          mode: Number(after.mode) & 0o7777,
          uid: Number(after.uid),
          gid: Number(after.gid),
        };
      }
    } finally {
      await handle.close();
    }
    await new Promise((r) => setTimeout(r, 20));
  }
}

function decodeUtf8(bytes: Uint8Array): { text: string; lossless: boolean } {
  // ignoreBOM: keep a leading BOM as U+FEFF so it survives the round trip.
  try {
    return { text: new TextDecoder('utf-8', { fatal: true, ignoreBOM: true }).decode(bytes), lossless: true };
  } catch {
    return { text: new TextDecoder('utf-8', { fatal: false, ignoreBOM: true }).decode(bytes), lossless: false };
  }
}

// ---------------------------------------------------------------------------------------
// Writing

/** The filesystem calls the writer makes; tests replace some to inject failures. */
export interface FileOps {
  open: typeof fsp.open;
  rename: typeof fsp.rename;
  unlink: typeof fsp.unlink;
}

export const REAL_FILE_OPS: FileOps = { open: fsp.open, rename: fsp.rename, unlink: fsp.unlink };

export interface WriteResult {
  method: 'rename' | 'in-place';
  version: FileVersion;
  /** Why the atomic replace was not possible, when `method` is `in-place`. */
  fallbackReason?: string;
}

export class FileWriteError extends Error {
  override name = 'FileWriteError';
  /** What the failed write left in the file; only an in-place write can leave anything but `untouched`. */
  readonly outcome: InPlaceOutcome;
  /** When `outcome` is `damaged`: where a copy of the old bytes was written, if that worked. */
  readonly oldCopyPath: string | undefined;
  /** When `outcome` is `damaged`: why putting the old bytes back (and keeping a copy) failed. */
  readonly restoreFailure: string | undefined;
  constructor(
    message: string,
    readonly code: string | undefined,
    /** True when the failure is about permissions / a read-only file system. */
    readonly readOnly: boolean,
    options?: { cause?: unknown; outcome?: InPlaceOutcome; oldCopyPath?: string | undefined; restoreFailure?: string },
  ) {
    super(message, { cause: options?.cause });
    this.outcome = options?.outcome ?? 'untouched';
    this.oldCopyPath = options?.oldCopyPath;
    this.restoreFailure = options?.restoreFailure;
  }
}

/** The temp file's name: hidden, in the same directory, and never ending in .yml/.yaml. */
function tempNameFor(realPath: string): string {
  return join(dirname(realPath), `.${basename(realPath)}.gatehouse-tmp-${randomBytes(6).toString('hex')}`);
}

const FALLBACK_CODES = new Set(['EXDEV', 'EBUSY', 'EPERM', 'EACCES']);
const READ_ONLY_CODES = new Set(['EACCES', 'EPERM', 'EROFS']);

/**
 * Replaces the file's bytes with `bytes`, keeping its mode (and owner, when allowed). Returns
 * the version of what was written, taken from the written descriptor (not by reading the path
 * again, which could pick up someone else's write).
 */
export async function replaceFileBytes(
  realPath: string,
  bytes: Buffer,
  original: Pick<ConfigSnapshot, 'mode' | 'uid' | 'gid'>,
  ops: FileOps = REAL_FILE_OPS,
): Promise<WriteResult> {
  const temp = tempNameFor(realPath);
  let fallbackReason: string;
  let created = false;
  try {
    const handle = await ops.open(temp, fsConstants.O_WRONLY | fsConstants.O_CREAT | fsConstants.O_EXCL, original.mode);
    created = true;
    let written: FileVersion;
    try {
      await writeAll(handle, bytes, 0);
      // The umask may have narrowed the mode given to open.
      await handle.chmod(original.mode);
      // Keep the owner when Gatehouse runs as another user that may chown (root); else the
      // replaced file would belong to Gatehouse's user.
      await handle.chown(original.uid, original.gid).catch(() => undefined);
      await handle.sync();
      written = await versionOf(handle, bytes);
    } finally {
      await handle.close();
    }
    await ops.rename(temp, realPath);
    created = false;
    await syncDirectory(dirname(realPath));
    return { method: 'rename', version: written };
  } catch (error) {
    if (created) await ops.unlink(temp).catch(() => undefined);
    const code = errnoCode(error);
    if (code === undefined || !FALLBACK_CODES.has(code)) {
      throw new FileWriteError(
        `Could not write ${realPath}: ${describeError(error)}`,
        code,
        code !== undefined && READ_ONLY_CODES.has(code),
        { cause: error },
      );
    }
    fallbackReason = `atomic replace failed (${describeError(error)}); wrote the file in place`;
  }
  return { ...(await writeInPlace(realPath, bytes, ops)), fallbackReason };
}

/** Writes through the file's own descriptor; see `overwriteInPlace` for what a failure leaves. */
async function writeInPlace(realPath: string, bytes: Buffer, ops: FileOps): Promise<WriteResult> {
  let handle: fsp.FileHandle;
  try {
    // Read-write: the old bytes are read back through the same descriptor, to restore them.
    handle = await ops.open(realPath, fsConstants.O_RDWR);
  } catch (error) {
    const code = errnoCode(error);
    throw new FileWriteError(
      `Could not open ${realPath} for writing: ${describeError(error)}`,
      code,
      code !== undefined && READ_ONLY_CODES.has(code),
      { cause: error },
    );
  }
  try {
    await overwriteInPlace(handle, bytes);
    return { method: 'in-place', version: await versionOf(handle, bytes) };
  } catch (error) {
    const cause = error instanceof InPlaceWriteError ? error.cause : error;
    const code = errnoCode(cause);
    const message = `Writing ${realPath} in place failed: ${describeError(cause)}`;
    const readOnly = code !== undefined && READ_ONLY_CODES.has(code);
    if (!(error instanceof InPlaceWriteError) || error.outcome !== 'damaged') {
      throw new FileWriteError(message, code, readOnly, {
        cause,
        outcome: error instanceof InPlaceWriteError ? error.outcome : 'untouched',
      });
    }
    const copy = await keepOldCopy(realPath, error.oldBytes);
    const restoreFailure =
      describeError(error.restoreError) +
      (copy.failure === undefined ? '' : `; keeping a copy failed too: ${copy.failure}`);
    throw new FileWriteError(message, code, readOnly, {
      cause,
      outcome: 'damaged',
      oldCopyPath: copy.path,
      restoreFailure,
    });
  } finally {
    await handle.close();
  }
}

/**
 * After a failed restore: the old bytes, in a hidden file next to the config (never
 * `.yml`/`.yaml`, so a `-config-dir` scan does not load it), for the operator to copy back.
 */
async function keepOldCopy(realPath: string, oldBytes: Buffer): Promise<{ path?: string; failure?: string }> {
  const path = join(dirname(realPath), `.${basename(realPath)}.gatehouse-previous-${randomBytes(6).toString('hex')}`);
  try {
    await fsp.writeFile(path, oldBytes, { flag: 'wx', mode: 0o600 });
    return { path };
  } catch (error) {
    await fsp.unlink(path).catch(() => undefined);
    return { failure: describeError(error) };
  }
}

async function versionOf(handle: fsp.FileHandle, bytes: Buffer): Promise<FileVersion> {
  const stats = await handle.stat({ bigint: true });
  return { mtimeNs: stats.mtimeNs, size: bytes.length, sha256: sha256Hex(bytes) };
}

/** Makes the rename durable. Some platforms/filesystems refuse fsync on a directory; that is not fatal. */
async function syncDirectory(dir: string): Promise<void> {
  let handle: fsp.FileHandle | undefined;
  try {
    handle = await fsp.open(dir, 'r');
    await handle.sync();
  } catch {
    // EISDIR/EINVAL/EPERM on some systems: the data itself is already synced.
  } finally {
    await handle?.close();
  }
}

/**
 * Whether the operator marked the file read-only (no write bit at all). Checked explicitly
 * because a rename would replace even a 0444 file, and root passes every access() check.
 */
export async function readOnlyReason(realPath: string, mode: number): Promise<string | undefined> {
  const octal = `0${mode.toString(8).padStart(3, '0')}`;
  if ((mode & 0o222) === 0) {
    return (
      `The config file ${realPath} is read-only (mode ${octal}). Make it writable for Gatehouse (e.g. chmod ` +
      `u+w ${realPath}) to save from the dashboard; nothing was written.`
    );
  }
  try {
    await fsp.access(realPath, fsConstants.W_OK);
  } catch (error) {
    return (
      `The config file ${realPath} is not writable by Gatehouse (${describeError(error)}, mode ${octal}). ` +
      `Give Gatehouse's user write access to it; nothing was written.`
    );
  }
  return undefined;
}

function errnoCode(error: unknown): string | undefined {
  const code = (error as { code?: unknown } | null)?.code;
  return typeof code === 'string' ? code : undefined;
}

export function describeError(error: unknown): string {
  const code = errnoCode(error);
  const message = error instanceof Error ? error.message : String(error);
  return code && !message.includes(code) ? `${code}: ${message}` : message;
}
