/**
 * The raw key must exist only in the answer to whoever created it. These tests write keys
 * through every path that touches them, then search the database files byte for byte.
 */
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import { afterAll, describe, expect, it } from 'vitest';
import { newKeyRecord } from '../../src/auth/api-keys.js';
import { KeyIndex } from '../../src/auth/key-index.js';
import { runKeysCommand } from '../../src/cli/keys.js';
import { openSqliteStore, SQLITE_FILE_NAME } from '../../src/store/sqlite.js';

const root = mkdtempSync(join(tmpdir(), 'gatehouse-at-rest-'));
afterAll(() => rmSync(root, { recursive: true, force: true }));

/** Every file SQLite keeps for the database: main file, write-ahead log, shared memory. */
function databaseBytes(dataDir: string): Map<string, Buffer> {
  const files = new Map<string, Buffer>();
  for (const suffix of ['', '-wal', '-shm', '-journal']) {
    const file = join(dataDir, SQLITE_FILE_NAME + suffix);
    if (existsSync(file)) files.set(suffix || 'db', readFileSync(file));
  }
  return files;
}

function expectNowhere(files: Map<string, Buffer>, secrets: string[]): void {
  for (const [name, bytes] of files) {
    for (const secret of secrets) {
      // The key, its body without `sk-`, and its UTF-16 form: none may appear.
      for (const needle of [Buffer.from(secret), Buffer.from(secret.slice(3)), Buffer.from(secret, 'utf16le')]) {
        expect(bytes.includes(needle), `${name} contains a raw key`).toBe(false);
      }
    }
  }
}

function sink(): { stream: Writable; text: () => string } {
  let text = '';
  const stream = new Writable({ write: (chunk: Buffer, _e, done) => ((text += chunk.toString()), done()) });
  return { stream, text: () => text };
}

describe('API keys at rest', () => {
  it('never writes the raw key to the SQLite file, its WAL or shared memory', async () => {
    const dataDir = join(root, 'store');
    const store = await openSqliteStore({ dataDir });
    const created = Array.from({ length: 20 }, (_, i) =>
      newKeyRecord({ name: `k${i}`, models: ['m'], note: 'n' }, Date.now()),
    );
    for (const k of created) await store.keys.create(k.record);
    const index = await KeyIndex.open(store);
    for (const k of created) {
      expect(index.verify(k.secret)).toBeDefined();
      index.markUsed(k.record.id);
    }
    await index.flush();
    await store.keys.update(created[0]!.record.id, { revokedAt: Date.now(), name: 'renamed' });

    const secrets = created.map((k) => k.secret);
    const whileOpen = databaseBytes(dataDir);
    expect(whileOpen.has('-wal')).toBe(true);
    // Sanity: the search reads the right bytes, the hashes are there.
    const all = Buffer.concat([...whileOpen.values()]);
    expect(all.includes(Buffer.from(created[1]!.record.hash))).toBe(true);
    expectNowhere(whileOpen, secrets);

    await index.close();
    await store.close();
    expectNowhere(databaseBytes(dataDir), secrets);
  });

  it('never writes the key the CLI prints to the database', async () => {
    const dataDir = join(root, 'cli');
    const secrets: string[] = [];
    for (let i = 0; i < 5; i++) {
      const out = sink();
      const err = sink();
      const code = await runKeysCommand(
        ['create', '--name', `cli ${i}`, '--quiet'],
        { stdout: out.stream, stderr: err.stream },
        { dataDir, databaseUrl: undefined },
      );
      expect(code).toBe(0);
      secrets.push(out.text().trim());
    }
    expect(secrets.every((s) => /^sk-[0-9A-Za-z]{43}$/.test(s))).toBe(true);
    expectNowhere(databaseBytes(dataDir), secrets);
  });
});
