/**
 * The in-place save on real filesystems: config.yaml is a single-file bind mount (so rename
 * over it fails with EBUSY, as in the Docker setup the docs warn about) of a file on a small
 * tmpfs that can be filled up. Mounting needs root; CI runs as root.
 */
import { execFileSync } from 'node:child_process';
import { mkdir, open, readdir, readFile, writeFile } from 'node:fs/promises';
import { statfsSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { removeDir, SCHEMA_PATH, startEditorServer, tempDir, V1, type EditorServer } from './helpers.js';

const ROOT = process.getuid?.() === 0;
if (!ROOT) {
  console.warn(
    'SKIPPED test/config-editor/full-disk.test.ts: mounting a tmpfs and a bind mount needs root (uid 0); ' +
      'CI runs these as root.',
  );
}

/** A valid config longer than one 4 KiB page, so writing it needs space the old file does not have. */
const MODELS = Array.from(
  { length: 90 },
  (_, i) => `  model-${i}:\n    cmd: llama-server --port \${PORT} -m model-${i}.gguf\n`,
);
const LONG = `${V1}${MODELS.join('')}`;

let dir: string;
let disk: string;
let source: string;
let file: string;
let server: EditorServer | undefined;
const mounted: string[] = [];

function mount(...args: string[]): void {
  execFileSync('mount', args, { stdio: 'pipe' });
  mounted.push(args[args.length - 1]!);
}

beforeEach(async () => {
  if (!ROOT) return;
  dir = await tempDir('gh-config-disk-');
  disk = join(dir, 'disk');
  await mkdir(disk);
  mount('-t', 'tmpfs', '-o', 'size=64k', 'tmpfs', disk);
  source = join(disk, 'config.yaml');
  file = join(dir, 'config.yaml');
  await writeFile(file, '');
});
afterEach(async () => {
  await server?.close();
  server = undefined;
  while (mounted.length > 0) execFileSync('umount', [mounted.pop()!], { stdio: 'pipe' });
  if (dir) await removeDir(dir);
});

/** Puts `text` on the tmpfs and bind-mounts it over `file`. */
async function bindConfig(text: string): Promise<void> {
  await writeFile(source, text);
  mount('--bind', source, file);
}

/** Fills the tmpfs until a write fails with ENOSPC. */
async function fillDisk(): Promise<void> {
  const handle = await open(join(disk, 'filler'), 'w');
  const chunk = Buffer.alloc(4096, 0x78);
  try {
    for (;;) await handle.write(chunk);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'ENOSPC') throw error;
  } finally {
    await handle.close();
  }
  expect(statfsSync(disk).bfree).toBe(0);
}

async function start(): Promise<EditorServer> {
  server = await startEditorServer({ configFile: file, schemaSource: SCHEMA_PATH(), dataDir: join(dir, 'data') });
  return server;
}

async function hiddenFiles(): Promise<string[]> {
  return (await readdir(dir)).filter((name) => name.startsWith('.'));
}

describe.skipIf(!ROOT)('saving a single-file bind mount in place (real tmpfs, root only)', () => {
  it('keeps the old bytes exactly and says so when the disk fills during the save of a longer text', async () => {
    expect(LONG.length).toBeGreaterThan(4096);
    await bindConfig(V1);
    await fillDisk();
    const s = await start();
    const loaded = (await s.request('GET', '/api/config')).body;
    const res = await s.request('PUT', '/api/config', { text: LONG, version: loaded.version });
    expect(res.status).toBe(500);
    expect((await readFile(file)).toString('utf8')).toBe(V1);
    expect(res.body.error).toMatchObject({
      code: 'config_write_failed',
      details: { code: 'ENOSPC', file: 'restored', oldCopyPath: null },
    });
    expect(res.body.error.message).toContain(`Writing ${file} in place failed: ENOSPC`);
    expect(res.body.error.message).toContain(
      'The previous contents were put back, so the file is byte for byte as it was',
    );
    expect((await readFile(file)).equals(Buffer.from(V1))).toBe(true);
    expect((await s.request('GET', '/api/config')).body.text).toBe(V1);
    expect(await hiddenFiles()).toEqual([]);
    // the restore moved the mtime: the version the client holds is stale
    const again = await s.request('PUT', '/api/config', { text: V1, version: loaded.version });
    expect(again.status).toBe(409);
    expect(again.body.error.details.changed).toEqual(['mtime']);
  });

  it('saves a shorter text in place on a full disk, leaving exactly the new bytes', async () => {
    await bindConfig(LONG);
    await fillDisk();
    const s = await start();
    const loaded = (await s.request('GET', '/api/config')).body;
    const res = await s.request('PUT', '/api/config', { text: V1, version: loaded.version });
    expect(res.status).toBe(200);
    expect(res.body.method).toBe('in-place');
    expect(res.body.notices[1]).toContain('EBUSY');
    expect((await readFile(file)).equals(Buffer.from(V1))).toBe(true);
    expect((await readFile(source)).equals(Buffer.from(V1))).toBe(true);
    expect((await s.request('GET', '/api/config')).body.version).toBe(res.body.version);
  });

  it('saves a longer text in place when the disk has room, leaving exactly the new bytes', async () => {
    await bindConfig(V1);
    const s = await start();
    const loaded = (await s.request('GET', '/api/config')).body;
    const res = await s.request('PUT', '/api/config', { text: LONG, version: loaded.version });
    expect(res.status).toBe(200);
    expect(res.body.method).toBe('in-place');
    expect(res.body.notices[1]).toContain('EBUSY');
    expect((await readFile(file)).equals(Buffer.from(LONG))).toBe(true);
    expect((await s.request('GET', '/api/config')).body.version).toBe(res.body.version);
    expect(await hiddenFiles()).toEqual([]);
  });
});
