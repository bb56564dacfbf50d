/**
 * `gatehouse backup FILE`: a consistent, checked, self-contained copy of the SQLite store,
 * taken with the real CLI while the real server runs on the same data dir.
 */
import { existsSync, mkdtempSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { hashApiKey } from '../../src/auth/api-keys.js';
import { backupSqliteFile, openSqliteStore, sqliteFileIn } from '../../src/store/sqlite.js';
import { keyRecord } from '../store/store-contract.js';
import { rawRequest } from '../helpers/http.js';
import { runCli, spawnGateway, type GatewayProcess } from '../helpers/process.js';

const dataDir = mkdtempSync(join(tmpdir(), 'gh-backup-data-'));
const backupDir = mkdtempSync(join(tmpdir(), 'gh-backup-out-'));
const env = { GATEHOUSE_DATA_DIR: dataDir, GATEHOUSE_UPSTREAM_URL: 'http://127.0.0.1:9' };
let gw: GatewayProcess;
let secret = '';

beforeAll(async () => {
  gw = await spawnGateway(env);
  const created = await runCli(['keys', 'create', '--name', 'before the backup', '--quiet'], env);
  expect(created.code, created.stderr).toBe(0);
  secret = created.stdout.trim();
});
afterAll(async () => {
  gw.child.kill('SIGTERM');
  await gw.exited;
});

/** SQLite header bytes 18-19: 1/1 rollback journal (one self-contained file), 2/2 WAL. */
const journalFormat = (file: string): number[] => [...readFileSync(file).subarray(18, 20)];

describe('gatehouse backup', () => {
  it('copies the store while the server runs; the copy holds the keys and is one self-contained file', async () => {
    const target = join(backupDir, 'nested', 'gatehouse-copy.db');
    const result = await runCli(['backup', target], env);
    expect(result.code, result.stderr).toBe(0);
    expect(result.stdout).toMatch(
      new RegExp(
        `^Backed up ${sqliteFileIn(dataDir).replace(/[.]/g, '\\.')} to ${target.replace(/[.]/g, '\\.')} \\(\\d+ pages, integrity ok\\)\\.\\n$`,
      ),
    );
    expect(readdirSync(join(backupDir, 'nested'))).toEqual(['gatehouse-copy.db']);
    expect(journalFormat(target)).toEqual([1, 1]);

    const copy = await openSqliteStore({ file: target });
    try {
      const keys = await copy.keys.list();
      expect(keys.map((k) => k.name)).toEqual(['before the backup']);
      expect(keys[0]!.hash).toBe(hashApiKey(secret));
      expect(copy.migrationsApplied).toEqual([]);
    } finally {
      await copy.close();
    }
    // The server never noticed.
    expect((await rawRequest(`${gw.url}/healthz`)).status).toBe(200);
  });

  it('refuses to overwrite an existing file and leaves it alone', async () => {
    const target = join(backupDir, 'taken.db');
    writeFileSync(target, 'keep me');
    const result = await runCli(['backup', target], env);
    expect(result.code).toBe(1);
    expect(result.stderr).toBe(`gatehouse backup failed: ${target} already exists; choose a new file name\n`);
    expect(readFileSync(target, 'utf8')).toBe('keep me');
    expect(readdirSync(backupDir).filter((f) => f.includes('gatehouse-backup-tmp'))).toEqual([]);
  });

  it('refuses when there is no database, without creating one', async () => {
    const empty = mkdtempSync(join(tmpdir(), 'gh-backup-empty-'));
    const result = await runCli(['backup', join(backupDir, 'none.db')], { GATEHOUSE_DATA_DIR: empty });
    expect(result.code).toBe(1);
    expect(result.stderr).toContain(`there is no database at ${sqliteFileIn(empty)} (check GATEHOUSE_DATA_DIR)`);
    expect(readdirSync(empty)).toEqual([]);
    expect(existsSync(join(backupDir, 'none.db'))).toBe(false);
  });

  it('points PostgreSQL users at pg_dump without printing the URL password', async () => {
    const result = await runCli(['backup', join(backupDir, 'pg.db')], {
      GATEHOUSE_DATABASE_URL: 'postgres://gh:pw-not-printed@db.internal:5432/gh',
    });
    expect(result.code).toBe(1);
    expect(result.stderr).toContain(
      'this configuration uses PostgreSQL (postgres://db.internal:5432/gh (schema public))',
    );
    expect(result.stderr).toContain('pg_dump');
    expect(result.stderr).not.toContain('pw-not-printed');
  });

  it('explains its usage: --help exits 0, a missing or extra FILE exits 2', async () => {
    const help = await runCli(['backup', '--help'], env);
    expect(help.code).toBe(0);
    expect(help.stdout).toMatch(/^Usage: gatehouse backup FILE/);
    for (const args of [['backup'], ['backup', 'a.db', 'b.db'], ['backup', '--force', 'a.db']]) {
      const result = await runCli(args, env);
      expect(result.code, args.join(' ')).toBe(2);
      expect(result.stderr).toContain('Usage: gatehouse backup FILE');
    }
  });
});

describe('backupSqliteFile', () => {
  it('takes a consistent snapshot while another connection keeps writing', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'gh-backup-busy-'));
    const store = await openSqliteStore({ dataDir: dir });
    try {
      for (let n = 0; n < 50; n++) await store.keys.create(keyRecord({ name: `seed ${n}` }));
      let writing = true;
      let written = 0;
      const writer = (async () => {
        while (writing) {
          await store.keys.create(keyRecord({ name: `during ${written}` }));
          written++;
          await new Promise((r) => setImmediate(r));
        }
      })();
      const target = join(dir, 'snapshot.db');
      const result = await backupSqliteFile(sqliteFileIn(dir), target);
      writing = false;
      await writer;
      expect(result.pages).toBeGreaterThan(0);

      const copy = await openSqliteStore({ file: target });
      try {
        const count = await copy.keys.count();
        expect(count).toBeGreaterThanOrEqual(50);
        expect(count).toBeLessThanOrEqual(50 + written);
        const names = new Set((await copy.keys.list()).map((k) => k.name));
        for (let n = 0; n < 50; n++) expect(names.has(`seed ${n}`)).toBe(true);
      } finally {
        await copy.close();
      }
    } finally {
      await store.close();
    }
  });

  it('refuses to copy the database onto itself', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'gh-backup-self-'));
    const store = await openSqliteStore({ dataDir: dir });
    await store.close();
    await expect(backupSqliteFile(sqliteFileIn(dir), sqliteFileIn(dir))).rejects.toThrow(
      'the backup file must not be the database itself',
    );
  });
});
