import { spawn } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import BetterSqlite3 from 'better-sqlite3';
import { Kysely, SqliteDialect } from 'kysely';
import { afterAll, describe, expect, it } from 'vitest';
import { MIGRATIONS } from '../../src/store/migrations.js';
import { openSqliteStore, SQLITE_FILE_NAME } from '../../src/store/sqlite.js';
import { openStore } from '../../src/store/open-store.js';
import { describeStoreContract, keyRecord, waitFor } from './store-contract.js';
import { usageRecord } from './usage-contract.js';
import { expectUsageLogMigrated, writeOldUsageLog } from './usage-migration.js';
import {
  expectNameKeysMigrated,
  expectUsersKeptWithoutCap,
  writeUsersBeforeMaxBudget,
  writeUsersBeforeNameKey,
} from './users-migration.js';

const root = mkdtempSync(join(tmpdir(), 'gatehouse-sqlite-store-'));
afterAll(() => rmSync(root, { recursive: true, force: true }));

const contractDir = join(root, 'contract');
describeStoreContract('SQLite', () => openSqliteStore({ dataDir: contractDir }));

/** Runs a script in a separate Node process (same better-sqlite3), resolving with its exit. */
function runNode(script: string): { exited: Promise<{ code: number | null; stderr: string }>; stdout: () => string } {
  const child = spawn(process.execPath, ['-e', script], { cwd: process.cwd(), stdio: ['ignore', 'pipe', 'pipe'] });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
  child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
  return {
    exited: new Promise((resolve) => child.on('close', (code) => resolve({ code, stderr }))),
    stdout: () => stdout,
  };
}

describe('SQLite store', () => {
  it("refuses a usage record it already holds with the driver's code, so the writer drops it instead of retrying", async () => {
    const store = await openSqliteStore({ dataDir: join(root, 'usage-codes') });
    try {
      const record = usageRecord();
      await store.usage.append([record]);
      const error = await store.usage.append([record]).catch((e: unknown) => e as { code?: string });
      expect(error?.code).toBe('SQLITE_CONSTRAINT_PRIMARYKEY');
      expect(await store.usage.count()).toBe(1);
    } finally {
      await store.close();
    }
  });

  it('writes a usage batch after a transaction that is open across an await, never inside it', async () => {
    const store = await openSqliteStore({ dataDir: join(root, 'usage-beside-transaction') });
    try {
      const events: string[] = [];
      let release!: () => void;
      const held = new Promise<void>((resolve) => (release = resolve));
      let entered!: () => void;
      const inside = new Promise<void>((resolve) => (entered = resolve));
      const rolledBack = store
        .transaction(async (tx) => {
          await tx.meta.set('probe', 'inside');
          entered();
          await held;
          throw new Error('roll back');
        })
        .catch(() => events.push('transaction rolled back'));
      await inside;
      const appended = store.usage.append([usageRecord()]).then(() => events.push('usage written'));
      release();
      await Promise.all([rolledBack, appended]);
      expect(events).toEqual(['transaction rolled back', 'usage written']);
      expect(await store.meta.get('probe')).toBeUndefined();
      expect(await store.usage.count()).toBe(1);
    } finally {
      await store.close();
    }
  });

  it('creates a missing data directory and database on first open', async () => {
    const dataDir = join(root, 'fresh', 'nested', 'data');
    expect(existsSync(dataDir)).toBe(false);
    const store = await openStore({ dataDir, databaseUrl: undefined });
    try {
      expect(store.kind).toBe('sqlite');
      expect(existsSync(join(dataDir, SQLITE_FILE_NAME))).toBe(true);
      expect(store.migrationsApplied).toEqual(Object.keys(MIGRATIONS));
      expect(await store.keys.count()).toBe(0);
    } finally {
      await store.close();
    }
  });

  it('puts the database in WAL mode with a busy timeout', async () => {
    const file = join(root, 'wal', 'x.db');
    const store = await openSqliteStore({ file });
    await store.close();
    const raw = new BetterSqlite3(file, { readonly: true });
    try {
      expect(raw.pragma('journal_mode', { simple: true })).toBe('wal');
    } finally {
      raw.close();
    }
  });

  it('records each migration once, however often the file is opened', async () => {
    const dataDir = join(root, 'reopen');
    for (let i = 0; i < 3; i++) await (await openSqliteStore({ dataDir })).close();
    const raw = new BetterSqlite3(join(dataDir, SQLITE_FILE_NAME), { readonly: true });
    try {
      const rows = raw.prepare('select name from kysely_migration order by name').all() as Array<{ name: string }>;
      expect(rows.map((r) => r.name)).toEqual(Object.keys(MIGRATIONS));
    } finally {
      raw.close();
    }
  });

  it('opens the same fresh file concurrently from one process without deadlocking', async () => {
    const dataDir = join(root, 'concurrent');
    const stores = await Promise.all([
      openSqliteStore({ dataDir }),
      openSqliteStore({ dataDir }),
      openSqliteStore({ dataDir }),
    ]);
    try {
      expect(stores.map((s) => s.migrationsApplied.length).sort()).toEqual([0, 0, Object.keys(MIGRATIONS).length]);
    } finally {
      await Promise.all(stores.map((s) => s.close()));
    }
  });

  it("waits for another process's write lock instead of failing", async () => {
    const dataDir = join(root, 'locked');
    await (await openSqliteStore({ dataDir })).close();
    const file = join(dataDir, SQLITE_FILE_NAME);
    // The other process takes the write lock, says so, and holds it for 700 ms.
    const holder = runNode(`
      const db = require('better-sqlite3')(${JSON.stringify(file)});
      db.exec('BEGIN IMMEDIATE');
      process.stdout.write('locked\\n');
      setTimeout(() => { db.exec('COMMIT'); db.close(); }, 700);
    `);
    await waitFor(() => holder.stdout().includes('locked'), 10_000, 'the other process to take the lock');
    // Opening (which checks migrations under the write lock) and writing both wait rather
    // than fail with SQLITE_BUSY.
    const store = await openSqliteStore({ dataDir });
    try {
      await store.keys.create(keyRecord());
      expect(await store.keys.count()).toBe(1);
    } finally {
      await store.close();
    }
    expect((await holder.exited).code).toBe(0);
  });

  it('notices within a second when another process changes a key', async () => {
    const dataDir = join(root, 'other-process');
    const store = await openSqliteStore({ dataDir });
    try {
      const key = await store.keys.create(keyRecord({ name: 'before' }));
      let notified = 0;
      const stop = store.watchKeys(() => notified++);
      const writer = runNode(`
        const db = require('better-sqlite3')(${JSON.stringify(join(dataDir, SQLITE_FILE_NAME))});
        db.pragma('busy_timeout = 5000');
        db.prepare('update api_keys set name = ? where id = ?').run('after', ${JSON.stringify(key.id)});
        db.close();
      `);
      const { code, stderr } = await writer.exited;
      expect(stderr).toBe('');
      expect(code).toBe(0);
      await waitFor(() => notified > 0, 1000, 'the watcher to fire');
      stop();
      expect((await store.keys.get(key.id))?.name).toBe('after');
    } finally {
      await store.close();
    }
  });

  it('refuses to open a database that records a migration this version does not know', async () => {
    const dataDir = join(root, 'garbage');
    const file = join(dataDir, SQLITE_FILE_NAME);
    await (await openSqliteStore({ dataDir })).close();
    // Someone recorded an unknown migration: Kysely refuses to go on, and the open must fail
    // loudly rather than run on a schema it does not understand.
    const raw = new BetterSqlite3(file);
    raw.prepare("insert into kysely_migration (name, timestamp) values ('9999_from_the_future', 'x')").run();
    raw.close();
    await expect(openSqliteStore({ dataDir })).rejects.toThrow(/9999_from_the_future/);
  });

  it('keeps the users of a database from before maximum budgets, each with no cap', async () => {
    const dataDir = join(root, 'before-max-budget');
    mkdirSync(dataDir, { recursive: true });
    const old = new Kysely<unknown>({
      dialect: new SqliteDialect({ database: new BetterSqlite3(join(dataDir, SQLITE_FILE_NAME)) }),
    });
    await writeUsersBeforeMaxBudget(old, { disableTransactions: true });
    await old.destroy();
    const store = await openSqliteStore({ dataDir });
    try {
      await expectUsersKeptWithoutCap(store);
    } finally {
      await store.close();
    }
  });

  it('gives existing users their name keys, the oldest of look-alikes holding the name', async () => {
    const dataDir = join(root, 'before-name-key');
    mkdirSync(dataDir, { recursive: true });
    const old = new Kysely<unknown>({
      dialect: new SqliteDialect({ database: new BetterSqlite3(join(dataDir, SQLITE_FILE_NAME)) }),
    });
    await writeUsersBeforeNameKey(old, { disableTransactions: true });
    await old.destroy();
    const store = await openSqliteStore({ dataDir });
    try {
      await expectNameKeysMigrated(store);
    } finally {
      await store.close();
    }
  });

  it('keeps a request log written before it was keyed by time, and finds calls through the new indexes', async () => {
    const dataDir = join(root, 'old-usage-log');
    mkdirSync(dataDir, { recursive: true });
    const file = join(dataDir, SQLITE_FILE_NAME);
    const old = new Kysely<unknown>({ dialect: new SqliteDialect({ database: new BetterSqlite3(file) }) });
    const records = await writeOldUsageLog(old, { disableTransactions: true });
    await old.destroy();

    const store = await expectUsageLogMigrated(() => openSqliteStore({ dataDir }), records);
    const raw = new BetterSqlite3(file, { readonly: true });
    try {
      const indexes = raw
        .prepare(
          "select name, sql from sqlite_master where type = 'index' and tbl_name = 'usage_requests' order by name",
        )
        .all() as Array<{ name: string; sql: string | null }>;
      expect(indexes.map((i) => i.name)).toEqual([
        'sqlite_autoindex_usage_requests_1',
        'usage_requests_key_idx',
        'usage_requests_model_idx',
      ]);
      expect(indexes[1]!.sql).toMatch(/where "key_id" is not null/i);
      const plan = (query: string, ...args: unknown[]) =>
        (raw.prepare(`explain query plan ${query}`).all(...args) as Array<{ detail: string }>)
          .map((r) => r.detail)
          .join('; ');
      expect(plan('select id from usage_requests order by at desc, id desc limit 10')).toMatch(
        /sqlite_autoindex_usage_requests_1/,
      );
      expect(
        plan('select id from usage_requests where key_id = ? order by at desc, id desc limit 10', 'key_1'),
      ).toMatch(/usage_requests_key_idx/);
      expect(plan('select id from usage_requests where model = ? order by at desc, id desc limit 10', 'm1')).toMatch(
        /usage_requests_model_idx/,
      );
      expect(plan('select * from usage_requests where at = ? and id = ?', 1, 'x')).toMatch(
        /sqlite_autoindex_usage_requests_1 \(at=\? AND id=\?\)/,
      );
    } finally {
      raw.close();
      await store.close();
    }
  });
});
