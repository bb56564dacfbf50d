import { chmod, lstat, mkdir, readFile, readlink, stat, symlink, utimes, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { REAL_FILE_OPS, type FileOps } from '../../src/config-editor/config-file.js';
import { RELOAD_NOTICE } from '../../src/config-editor/config-editor.js';
import {
  listDir,
  removeDir,
  SCHEMA_PATH,
  startEditorServer,
  tempDir,
  testConfig,
  V1,
  V2,
  type EditorServer,
} from './helpers.js';

let dir: string;
let file: string;
let server: EditorServer | undefined;

beforeEach(async () => {
  dir = await tempDir();
  file = join(dir, 'config.yaml');
});
afterEach(async () => {
  await server?.close();
  server = undefined;
  await chmod(file, 0o644).catch(() => undefined);
  await removeDir(dir);
});

/** `null`: INFERENCE_CONFIG_FILE unset. */
async function start(
  configFile: string | null = file,
  extra: { fileOps?: Partial<FileOps>; cwd?: string } = {},
): Promise<EditorServer> {
  server = await startEditorServer({
    configFile: configFile ?? undefined,
    schemaSource: SCHEMA_PATH(),
    dataDir: join(dir, 'data'),
    ...extra,
  });
  return server;
}

describe('GET /api/config: when the editor is off', () => {
  it('is off when INFERENCE_CONFIG_FILE is unset, and says what to set', async () => {
    const s = await start(null);
    const res = await s.request('GET', '/api/config');
    expect(res.status).toBe(200);
    expect(res.body).toEqual({
      enabled: false,
      path: null,
      reason: expect.stringContaining('INFERENCE_CONFIG_FILE is not set'),
    });
    expect(res.body.reason).toContain('Set INFERENCE_CONFIG_FILE to the absolute path');
  });

  it('is off for a relative path, suggesting the absolute one', async () => {
    const s = await start('config.yaml', { cwd: dir });
    const res = await s.request('GET', '/api/config');
    expect(res.body).toEqual({
      enabled: false,
      path: 'config.yaml',
      reason: expect.stringContaining('a relative path'),
    });
    expect(res.body.reason).toContain(join(dir, 'config.yaml'));
  });

  it('is off for a file that does not exist', async () => {
    const s = await start(join(dir, 'missing.yaml'));
    const res = await s.request('GET', '/api/config');
    expect(res.body).toEqual({
      enabled: false,
      path: join(dir, 'missing.yaml'),
      reason: expect.stringContaining(`${join(dir, 'missing.yaml')} does not exist`),
    });
  });

  it('is off for a directory, naming the file to point at', async () => {
    const s = await start(dir);
    const res = await s.request('GET', '/api/config');
    expect(res.body).toEqual({ enabled: false, path: dir, reason: expect.stringContaining('is a directory') });
    expect(res.body.reason).toContain(join(dir, 'config.yaml'));
  });

  it('is off for a dangling symlink', async () => {
    await symlink(join(dir, 'gone.yaml'), file);
    const s = await start();
    const res = await s.request('GET', '/api/config');
    expect(res.body.reason).toContain(`is a symlink to ${join(dir, 'gone.yaml')}, which does not exist`);
  });

  it('refuses to save with 409 config_disabled and the reason', async () => {
    const s = await start(null);
    const res = await s.request('PUT', '/api/config', { text: V1, version: `v1.1.1.${'0'.repeat(64)}` });
    expect(res.status).toBe(409);
    expect(res.body.error.code).toBe('config_disabled');
    expect(res.body.error.message).toContain('INFERENCE_CONFIG_FILE is not set');
  });

  it('turns on when the file appears, without a restart', async () => {
    const s = await start();
    expect((await s.request('GET', '/api/config')).body.enabled).toBe(false);
    await writeFile(file, V1);
    expect((await s.request('GET', '/api/config')).body.enabled).toBe(true);
  });
});

describe('load and save', () => {
  it('loads the exact text with a version and the schema it validates against', async () => {
    await writeFile(file, V1);
    const s = await start();
    const res = await s.request('GET', '/api/config');
    expect(res.status).toBe(200);
    expect(res.raw.headers['cache-control']).toBe('no-store');
    const st = await stat(file, { bigint: true });
    expect(res.body).toMatchObject({
      enabled: true,
      path: file,
      realPath: file,
      text: V1,
      size: Buffer.byteLength(V1),
      lossless: true,
      writable: true,
      readOnlyReason: null,
      warnings: [],
    });
    expect(res.body.version).toMatch(new RegExp(`^v1\\.${st.mtimeNs}\\.${st.size}\\.[0-9a-f]{64}$`));
    expect(res.body.schema).toMatchObject({
      available: true,
      source: SCHEMA_PATH(),
      origin: 'setting',
      fromCache: false,
      reason: null,
    });
    expect(res.body.schema.document.$id).toBe('llama-swap-config-schema.json');
  });

  it('saves a valid edit byte for byte and answers the new version and the reload notice', async () => {
    await writeFile(file, V1);
    const s = await start();
    const loaded = (await s.request('GET', '/api/config')).body;
    const res = await s.request('PUT', '/api/config', { text: V2, version: loaded.version });
    expect(res.status).toBe(200);
    expect((await readFile(file)).equals(Buffer.from(V2))).toBe(true);
    expect(res.body).toMatchObject({
      saved: true,
      changed: true,
      path: file,
      method: 'rename',
      warnings: [],
      notices: [RELOAD_NOTICE],
    });
    // No llama-swap connection in this server: the outcome is unknown, and says why.
    expect(res.body.reload).toMatchObject({ state: 'unknown', savedAt: expect.any(String) });
    const again = (await s.request('GET', '/api/config')).body;
    expect(again.version).toBe(res.body.version);
    expect(again.text).toBe(V2);
    // The new version is good for the next save.
    const next = await s.request('PUT', '/api/config', { text: V1, version: res.body.version });
    expect(next.status).toBe(200);
  });

  it('leaves no temp or backup file next to the config', async () => {
    await writeFile(file, V1);
    const s = await start();
    const loaded = (await s.request('GET', '/api/config')).body;
    expect((await s.request('PUT', '/api/config', { text: V2, version: loaded.version })).status).toBe(200);
    expect(await listDir(dir)).toEqual(['config.yaml']);
  });

  it('keeps the file mode', async () => {
    await writeFile(file, V1);
    await chmod(file, 0o640);
    const s = await start();
    const loaded = (await s.request('GET', '/api/config')).body;
    expect((await s.request('PUT', '/api/config', { text: V2, version: loaded.version })).status).toBe(200);
    expect((await stat(file)).mode & 0o7777).toBe(0o640);
  });

  it('writes nothing when the text equals the file (llama-swap would restart every model for nothing)', async () => {
    await writeFile(file, V1);
    const before = await stat(file, { bigint: true });
    const s = await start();
    const loaded = (await s.request('GET', '/api/config')).body;
    const res = await s.request('PUT', '/api/config', { text: V1, version: loaded.version });
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ changed: false, method: 'unchanged', version: loaded.version });
    expect((await stat(file, { bigint: true })).mtimeNs).toBe(before.mtimeNs);
  });

  it('reports a missing or malformed body as 422 validation_failed with paths', async () => {
    await writeFile(file, V1);
    const s = await start();
    const res = await s.request('PUT', '/api/config', { text: 5 });
    expect(res.status).toBe(422);
    expect(res.body).toEqual({
      error: {
        code: 'validation_failed',
        message: 'Validation failed.',
        details: [
          { path: '/text', message: 'must be a string' },
          { path: '/version', message: 'is required' },
        ],
      },
    });
    const bad = await s.request('PUT', '/api/config', { text: V2, version: 'yesterday' });
    expect(bad.status).toBe(422);
    expect(bad.body.error.details[0].path).toBe('/version');
    expect(await readFile(file, 'utf8')).toBe(V1);
  });
});

describe('conflicts', () => {
  it('refuses a stale version with 409, writes nothing, and returns the text on disk', async () => {
    await writeFile(file, V1);
    const s = await start();
    const loaded = (await s.request('GET', '/api/config')).body;
    const external = V1.replace('qwen.gguf', 'qwen-q8.gguf');
    await writeFile(file, external);
    const res = await s.request('PUT', '/api/config', { text: V2, version: loaded.version });
    expect(res.status).toBe(409);
    expect(res.body.error.code).toBe('config_conflict');
    expect(res.body.error.details).toMatchObject({
      currentText: external,
      changed: expect.arrayContaining(['size', 'content']),
    });
    expect(await readFile(file, 'utf8')).toBe(external);
    // the returned version lets the page save over it deliberately
    const retry = await s.request('PUT', '/api/config', { text: V2, version: res.body.error.details.currentVersion });
    expect(retry.status).toBe(200);
  });

  it('detects an external edit of the same size with the same mtime (by hash)', async () => {
    await writeFile(file, V1);
    const s = await start();
    const loaded = (await s.request('GET', '/api/config')).body;
    const before = await stat(file);
    const sameSize = V1.replace('qwen.gguf', 'QWEN.gguf');
    expect(Buffer.byteLength(sameSize)).toBe(Buffer.byteLength(V1));
    await writeFile(file, sameSize);
    // put the mtime back exactly: only the content differs now
    await utimes(file, before.atime, before.mtime);
    const res = await s.request('PUT', '/api/config', { text: V2, version: loaded.version });
    expect(res.status).toBe(409);
    expect(res.body.error.details.changed).toContain('content');
    expect(await readFile(file, 'utf8')).toBe(sameSize);
  });

  it('lets exactly one of two concurrent saves of one version win', async () => {
    await writeFile(file, V1);
    const s = await start();
    const loaded = (await s.request('GET', '/api/config')).body;
    const a = V2;
    const b = V1.replace('gpt-4o-mini', 'gpt-4o');
    const results = await Promise.all([
      s.request('PUT', '/api/config', { text: a, version: loaded.version }),
      s.request('PUT', '/api/config', { text: b, version: loaded.version }),
    ]);
    expect(results.map((r) => r.status).sort()).toEqual([200, 409]);
    const winner = results[0].status === 200 ? a : b;
    expect(await readFile(file, 'utf8')).toBe(winner);
  });
});

describe('invalid text is never written', () => {
  const cases: Array<[string, string, string]> = [
    ['invalid YAML', 'models:\n  qwen: [unclosed\n', 'yaml'],
    ['a duplicate key', 'models:\n  qwen:\n    cmd: a --port ${PORT}\n    cmd: b --port ${PORT}\n', 'yaml'],
    ['a schema error', 'models:\n  qwen:\n    ttl: forever\n', 'schema'],
  ];
  for (const [what, text, kind] of cases) {
    it(`refuses ${what} with 422 and every error, leaving the file byte-identical`, async () => {
      await writeFile(file, V1);
      const s = await start();
      const loaded = (await s.request('GET', '/api/config')).body;
      const res = await s.request('PUT', '/api/config', { text, version: loaded.version });
      expect(res.status).toBe(422);
      expect(res.body.error.code).toBe('config_invalid');
      expect(res.body.error.details.errors.length).toBeGreaterThan(0);
      expect(
        res.body.error.details.errors.every((e: { kind: string; line: number }) => e.kind === kind && e.line > 0),
      ).toBe(true);
      expect((await readFile(file)).equals(Buffer.from(V1))).toBe(true);
      expect(await listDir(dir)).toEqual(['config.yaml']);
    });
  }

  it('lists all schema errors at once', async () => {
    await writeFile(file, V1);
    const s = await start();
    const loaded = (await s.request('GET', '/api/config')).body;
    const res = await s.request('PUT', '/api/config', {
      text: 'logLevel: loud\nmodels:\n  a:\n    ttl: x\n',
      version: loaded.version,
    });
    expect(res.body.error.details.errors.map((e: { path: string }) => e.path).sort()).toEqual([
      '/logLevel',
      '/models/a',
      '/models/a/ttl',
    ]);
  });

  it('saves a schema-valid text with loader warnings, and returns them', async () => {
    await writeFile(file, V1);
    const s = await start();
    const loaded = (await s.request('GET', '/api/config')).body;
    const text = `${V2}    aliases: [gpt-4o-mini]\n`;
    const res = await s.request('PUT', '/api/config', { text, version: loaded.version });
    expect(res.status).toBe(200);
    expect(res.body.warnings).toEqual([
      expect.objectContaining({ kind: 'loader', path: '/models/llama/aliases/0', line: 8 }),
    ]);
  });
});

describe('byte-exact round trips', () => {
  const files: Array<[string, Buffer]> = [
    ['CRLF line endings', Buffer.from('# crlf\r\nmodels:\r\n  a:\r\n    cmd: x --port ${PORT}\r\n')],
    [
      'non-ASCII text',
      Buffer.from('# Modèles — 日本語 🦙\nmodels:\n  café:\n    cmd: x --port ${PORT}\n    description: "ñandú"\n'),
    ],
    [
      'a UTF-8 BOM',
      Buffer.concat([Buffer.from([0xef, 0xbb, 0xbf]), Buffer.from('models:\n  a:\n    cmd: x --port ${PORT}\n')]),
    ],
    ['no trailing newline', Buffer.from('models:\n  a:\n    cmd: x --port ${PORT}')],
    ['a config that uses every top-level key', Buffer.from(testConfig('every-key.yaml'))],
  ];
  for (const [what, bytes] of files) {
    it(`keeps ${what}: load, edit one value, save, and only that value changed`, async () => {
      const original = bytes;
      await writeFile(file, original);
      const s = await start();
      const loaded = (await s.request('GET', '/api/config')).body;
      expect(Buffer.from(loaded.text, 'utf8').equals(original)).toBe(true);
      const edited = loaded.text.replace('--port ${PORT}', '--port ${PORT} -v');
      expect(edited).not.toBe(loaded.text);
      const res = await s.request('PUT', '/api/config', { text: edited, version: loaded.version });
      expect(res.status, JSON.stringify(res.body)).toBe(200);
      const written = await readFile(file);
      expect(written.equals(Buffer.from(edited, 'utf8'))).toBe(true);
      expect(written.toString('latin1').replace('--port ${PORT} -v', '--port ${PORT}')).toBe(
        original.toString('latin1'),
      );
    });
  }
});

describe('where and how the file is written', () => {
  it('writes the target of a symlink and keeps the link', async () => {
    const real = join(dir, 'real');
    await mkdir(real);
    const target = join(real, 'llama-swap.yaml');
    await writeFile(target, V1);
    await symlink(target, file);
    const s = await start();
    const loaded = (await s.request('GET', '/api/config')).body;
    expect(loaded).toMatchObject({ path: file, realPath: target, text: V1 });
    const res = await s.request('PUT', '/api/config', { text: V2, version: loaded.version });
    expect(res.status).toBe(200);
    expect((await lstat(file)).isSymbolicLink()).toBe(true);
    expect(await readlink(file)).toBe(target);
    expect(await readFile(target, 'utf8')).toBe(V2);
    expect(await listDir(real)).toEqual(['llama-swap.yaml']);
  });

  it('refuses a read-only file with 403 config_read_only and a clear message, losing nothing', async () => {
    await writeFile(file, V1);
    await chmod(file, 0o444);
    const s = await start();
    const loaded = (await s.request('GET', '/api/config')).body;
    expect(loaded).toMatchObject({ writable: false, readOnlyReason: expect.stringContaining('read-only') });
    const res = await s.request('PUT', '/api/config', { text: V2, version: loaded.version });
    expect(res.status).toBe(403);
    expect(res.body.error.code).toBe('config_read_only');
    expect(res.body.error.message).toBe(
      `The config file ${file} is read-only (mode 0444). Make it writable for Gatehouse (e.g. chmod u+w ` +
        `${file}) to save from the dashboard; nothing was written.`,
    );
    expect(await readFile(file, 'utf8')).toBe(V1);
    expect(await listDir(dir)).toEqual(['config.yaml']);
  });

  it('reports a write refused by the filesystem (EROFS) as read-only, losing nothing', async () => {
    await writeFile(file, V1);
    const erofs = Object.assign(new Error('read-only file system'), { code: 'EROFS' });
    const s = await start(file, {
      fileOps: { open: (async () => Promise.reject(erofs)) as unknown as FileOps['open'] },
    });
    const loaded = (await s.request('GET', '/api/config')).body;
    const res = await s.request('PUT', '/api/config', { text: V2, version: loaded.version });
    expect(res.status).toBe(403);
    expect(res.body.error.code).toBe('config_read_only');
    expect(res.body.error.message).toContain('EROFS');
    expect(await readFile(file, 'utf8')).toBe(V1);
  });

  it('reports any other write failure (ENOSPC) as 500 config_write_failed, losing nothing', async () => {
    await writeFile(file, V1);
    const enospc = Object.assign(new Error('no space left on device'), { code: 'ENOSPC' });
    const s = await start(file, {
      fileOps: { open: (async () => Promise.reject(enospc)) as unknown as FileOps['open'] },
    });
    const loaded = (await s.request('GET', '/api/config')).body;
    const res = await s.request('PUT', '/api/config', { text: V2, version: loaded.version });
    expect(res.status).toBe(500);
    expect(res.body.error).toMatchObject({ code: 'config_write_failed', details: { code: 'ENOSPC' } });
    expect(res.body.error.message).toContain('The file still has its previous contents');
    expect(await readFile(file, 'utf8')).toBe(V1);
    expect(await listDir(dir)).toEqual(['config.yaml']);
  });

  it('removes its temp file when the replace fails (EIO on rename)', async () => {
    await writeFile(file, V1);
    const eio = Object.assign(new Error('i/o error'), { code: 'EIO' });
    const s = await start(file, { fileOps: { rename: async () => Promise.reject(eio) } });
    const loaded = (await s.request('GET', '/api/config')).body;
    const res = await s.request('PUT', '/api/config', { text: V2, version: loaded.version });
    expect(res.status).toBe(500);
    expect(res.body.error.code).toBe('config_write_failed');
    expect(await readFile(file, 'utf8')).toBe(V1);
    expect(await listDir(dir)).toEqual(['config.yaml']);
  });

  it('writes in place when the directory does not let it create the temp file (EACCES)', async () => {
    await writeFile(file, V1);
    const open: FileOps['open'] = async (path: Parameters<FileOps['open']>[0], ...rest: unknown[]) => {
      if (String(path).includes('.gatehouse-tmp-'))
        throw Object.assign(new Error('permission denied'), { code: 'EACCES' });
      return (REAL_FILE_OPS.open as (...a: unknown[]) => ReturnType<FileOps['open']>)(path, ...rest);
    };
    const s = await start(file, { fileOps: { open } });
    const loaded = (await s.request('GET', '/api/config')).body;
    const res = await s.request('PUT', '/api/config', { text: V2, version: loaded.version });
    expect(res.status).toBe(200);
    expect(res.body.method).toBe('in-place');
    expect(await readFile(file, 'utf8')).toBe(V2);
    expect(await listDir(dir)).toEqual(['config.yaml']);
  });

  for (const code of ['EXDEV', 'EBUSY', 'EPERM']) {
    it(`falls back to writing in place when rename fails with ${code} (single-file bind mount)`, async () => {
      await writeFile(file, V2);
      let renames = 0;
      const failing: Partial<FileOps> = {
        rename: async () => {
          renames++;
          throw Object.assign(new Error(`rename: ${code}`), { code });
        },
      };
      const s = await start(file, { fileOps: failing });
      const loaded = (await s.request('GET', '/api/config')).body;
      // shorter than before: the tail of the old text must not survive
      const res = await s.request('PUT', '/api/config', { text: V1, version: loaded.version });
      expect(res.status).toBe(200);
      expect(renames).toBe(1);
      expect(res.body.method).toBe('in-place');
      expect(res.body.notices[1]).toContain('written in place');
      expect((await readFile(file)).equals(Buffer.from(V1))).toBe(true);
      expect(await listDir(dir)).toEqual(['config.yaml']);
      expect((await s.request('GET', '/api/config')).body.version).toBe(res.body.version);
    });
  }

  /**
   * Rename fails (a bind mount), and the in-place descriptor's writes follow `plan`: for call n,
   * 'ok' writes, a number writes only that many bytes, 'fail' throws EIO.
   */
  function inPlaceFailing(plan: Array<'ok' | 'fail' | number>): Partial<FileOps> {
    let call = 0;
    const eio = () => Object.assign(new Error('i/o error'), { code: 'EIO' });
    const open = (async (path: Parameters<FileOps['open']>[0], ...rest: unknown[]) => {
      const handle = await (REAL_FILE_OPS.open as (...a: unknown[]) => ReturnType<FileOps['open']>)(path, ...rest);
      if (path !== file) return handle;
      return new Proxy(handle, {
        get(target, key) {
          if (key === 'write') {
            return async (buffer: Buffer, offset: number, length: number, position: number) => {
              const step = plan[call++] ?? 'fail';
              if (step === 'fail') throw eio();
              return target.write(buffer, offset, typeof step === 'number' ? Math.min(step, length) : length, position);
            };
          }
          const value = Reflect.get(target, key, target) as unknown;
          return typeof value === 'function' ? value.bind(target) : value;
        },
      });
    }) as FileOps['open'];
    return { open, rename: async () => Promise.reject(Object.assign(new Error('rename: EBUSY'), { code: 'EBUSY' })) };
  }

  it('puts the old bytes back when an in-place write fails halfway, and says so', async () => {
    await writeFile(file, V2);
    const s = await start(file, { fileOps: inPlaceFailing([10, 'fail', 'ok']) });
    const loaded = (await s.request('GET', '/api/config')).body;
    const res = await s.request('PUT', '/api/config', { text: V1, version: loaded.version });
    expect(res.status).toBe(500);
    expect((await readFile(file)).equals(Buffer.from(V2))).toBe(true);
    expect(res.body.error).toMatchObject({
      code: 'config_write_failed',
      details: { code: 'EIO', file: 'restored', oldCopyPath: null },
    });
    expect(res.body.error.message).toBe(
      `Writing ${file} in place failed: EIO: i/o error. The previous contents were put back, so the file ` +
        `is byte for byte as it was; ` +
        'its modification time changed, so llama-swap may reload it (which restarts every model).',
    );
    expect(await listDir(dir)).toEqual(['config.yaml']);
  });

  it('says the file may be damaged, and where a copy of the old bytes is, when putting them back fails too', async () => {
    await writeFile(file, V2);
    const s = await start(file, { fileOps: inPlaceFailing([10, 'fail']) });
    const loaded = (await s.request('GET', '/api/config')).body;
    const res = await s.request('PUT', '/api/config', { text: V1, version: loaded.version });
    expect(res.status).toBe(500);
    expect(res.body.error).toMatchObject({ code: 'config_write_failed', details: { code: 'EIO', file: 'damaged' } });
    const copy = res.body.error.details.oldCopyPath as string;
    expect(copy).toMatch(new RegExp(`^${dir}/\\.config\\.yaml\\.gatehouse-previous-[0-9a-f]{12}$`));
    expect((await readFile(copy)).equals(Buffer.from(V2))).toBe(true);
    expect(res.body.error.message).toBe(
      `Writing ${file} in place failed: EIO: i/o error. Writing the previous contents back failed too ` +
        `(EIO: i/o error), so the file may be damaged: ` +
        `a copy of the previous contents is at ${copy}; copy it over ${file}.`,
    );
  });

  it('uses the real rename by default', () => {
    expect(REAL_FILE_OPS.rename).toBeTypeOf('function');
  });
});

describe('validate and format over HTTP', () => {
  it('POST /api/config/validate answers valid, errors with positions, warnings and the schema used', async () => {
    await writeFile(file, V1);
    const s = await start();
    const ok = await s.request('POST', '/api/config/validate', { text: V2 });
    expect(ok.status).toBe(200);
    expect(ok.body).toMatchObject({
      valid: true,
      errors: [],
      warnings: [],
      schema: { available: true, source: SCHEMA_PATH() },
    });
    const bad = await s.request('POST', '/api/config/validate', { text: 'models:\n  a:\n    cmd: x\n    cmd: y\n' });
    expect(bad.body.valid).toBe(false);
    expect(bad.body.errors).toEqual([
      {
        kind: 'yaml',
        message: 'Map keys must be unique',
        path: '',
        line: 4,
        column: 5,
        endLine: 4,
        endColumn: 6,
        from: 28,
        to: 29,
      },
    ]);
  });

  it('POST /api/config/format re-prints without saving', async () => {
    await writeFile(file, V1);
    const s = await start();
    const res = await s.request('POST', '/api/config/format', { text: 'models:\n    a:   {cmd: x}\n' });
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ text: 'models:\n  a: { cmd: x }\n', changed: true });
    expect(await readFile(file, 'utf8')).toBe(V1);
    const bad = await s.request('POST', '/api/config/format', { text: 'a: [1\n' });
    expect(bad.status).toBe(422);
    expect(bad.body.error.code).toBe('config_invalid');
  });
});
