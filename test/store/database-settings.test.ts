/**
 * `GATEHOUSE_DATABASE_URL` / `GATEHOUSE_DATABASE_SCHEMA`: parsed and validated with the other
 * settings, never echoed, and `openStore` picks PostgreSQL (in the given schema) when set.
 */
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { loadSettings } from '../../src/settings/index.js';
import { settingsError } from '../helpers/settings.js';
import { describePostgresUrl } from '../../src/store/postgres-url.js';
import { describeStoreLocation, openStore } from '../../src/store/open-store.js';
import { query, requirePostgres, TEST_DATABASE_URL, TestSchemas } from '../helpers/postgres.js';

const schemas = new TestSchemas();
afterAll(() => schemas.dropAll());

describe('database settings', () => {
  it('default to SQLite: no URL, no schema', () => {
    const s = loadSettings({});
    expect(s.databaseUrl).toBeUndefined();
    expect(s.databaseSchema).toBeUndefined();
  });

  it('accept postgres:// and postgresql:// URLs as given', () => {
    expect(loadSettings({ GATEHOUSE_DATABASE_URL: 'postgres://u:p@db:5432/gh?sslmode=require' }).databaseUrl).toBe(
      'postgres://u:p@db:5432/gh?sslmode=require',
    );
    expect(loadSettings({ GATEHOUSE_DATABASE_URL: 'postgresql://db/gh' }).databaseUrl).toBe('postgresql://db/gh');
    expect(loadSettings({ GATEHOUSE_DATABASE_URL: '' }).databaseUrl).toBeUndefined();
  });

  it('refuse another scheme or a non-URL without echoing the value', () => {
    const mysql = settingsError({ GATEHOUSE_DATABASE_URL: 'mysql://root:hunter2hunter2@db/gh' });
    expect(mysql).toContain(
      'GATEHOUSE_DATABASE_URL: only postgres:// and postgresql:// URLs are supported (got mysql://...)',
    );
    expect(mysql).not.toContain('hunter2hunter2');
    const junk = settingsError({ GATEHOUSE_DATABASE_URL: 'host=db password=hunter2hunter2' });
    expect(junk).toContain('GATEHOUSE_DATABASE_URL: not a URL');
    expect(junk).not.toContain('hunter2hunter2');
  });

  it('read the URL from GATEHOUSE_DATABASE_URL_FILE, and refuse both at once', () => {
    const file = join(mkdtempSync(join(tmpdir(), 'gh-dburl-')), 'url');
    writeFileSync(file, 'postgres://gh:secret@db/gh\n');
    expect(loadSettings({ GATEHOUSE_DATABASE_URL_FILE: file }).databaseUrl).toBe('postgres://gh:secret@db/gh');
    expect(settingsError({ GATEHOUSE_DATABASE_URL: 'postgres://db/gh', GATEHOUSE_DATABASE_URL_FILE: file })).toContain(
      'GATEHOUSE_DATABASE_URL and GATEHOUSE_DATABASE_URL_FILE are both set; set one of them',
    );
  });

  it('accept a plain lowercase schema name and refuse anything else', () => {
    expect(
      loadSettings({ GATEHOUSE_DATABASE_URL: 'postgres://db/gh', GATEHOUSE_DATABASE_SCHEMA: 'gatehouse_2' })
        .databaseSchema,
    ).toBe('gatehouse_2');
    for (const bad of ['Gatehouse', '2fast', 'a-b', 'x"; drop table y; --', 'a'.repeat(41)]) {
      expect(settingsError({ GATEHOUSE_DATABASE_URL: 'postgres://db/gh', GATEHOUSE_DATABASE_SCHEMA: bad })).toContain(
        'GATEHOUSE_DATABASE_SCHEMA:',
      );
    }
  });

  it('refuse a schema without a URL: it would silently mean SQLite', () => {
    expect(settingsError({ GATEHOUSE_DATABASE_SCHEMA: 'gatehouse' })).toContain(
      'GATEHOUSE_DATABASE_SCHEMA is set but GATEHOUSE_DATABASE_URL is not',
    );
  });
});

describe('describing where the store is, for logs', () => {
  it('names host, port, database and schema, never user, password or query', () => {
    const text = describePostgresUrl(
      'postgres://gh:s3cret@db.internal:6432/gatehouse?sslmode=require&password=s3cret',
      'gh',
    );
    expect(text).toBe('postgres://db.internal:6432/gatehouse (schema gh)');
    expect(describeStoreLocation({ dataDir: '/srv/gh/data', databaseUrl: 'postgresql://u:p@db/x' })).toBe(
      'postgres://db/x (schema public)',
    );
    expect(describeStoreLocation({ dataDir: '/srv/gh/data', databaseUrl: undefined })).toBe('sqlite in /srv/gh/data');
  });

  it('copes with a socket URL and with an unparseable one', () => {
    expect(describePostgresUrl('postgres:///gatehouse?host=/var/run/postgresql')).toBe(
      'postgres:///var/run/postgresql/gatehouse (schema public)',
    );
    expect(describePostgresUrl('not a url :pw@')).toBe('postgres://(unparseable URL) (schema public)');
  });
});

describe('openStore with a database URL', () => {
  it('opens PostgreSQL in the configured schema, creating and migrating it', async () => {
    await requirePostgres();
    const schema = schemas.fresh('open');
    const store = await openStore({ dataDir: '/nonexistent', databaseUrl: TEST_DATABASE_URL, databaseSchema: schema });
    try {
      expect(store.kind).toBe('postgres');
      expect(store.migrationsApplied.length).toBeGreaterThan(0);
      const { rows } = await query<{ n: string }>(
        'select count(*) as n from information_schema.tables where table_schema = $1 and table_name = $2',
        [schema, 'api_keys'],
      );
      expect(rows[0]!.n).toBe('1');
    } finally {
      await store.close();
    }
  });

  it('works for a user that may not create schemas, once the schema exists', async () => {
    await requirePostgres();
    const schema = schemas.fresh('lowpriv');
    const role = `${schema}_user`;
    await query(`create schema "${schema}"`);
    await query(`create role "${role}" login`);
    try {
      await query(`grant usage, create on schema "${schema}" to "${role}"`);
      const url = new URL(TEST_DATABASE_URL);
      url.username = role;
      const store = await openStore({ dataDir: '/nonexistent', databaseUrl: url.toString(), databaseSchema: schema });
      try {
        expect(store.migrationsApplied.length).toBeGreaterThan(0);
        expect(await store.keys.count()).toBe(0);
      } finally {
        await store.close();
      }
    } finally {
      await query(`drop schema if exists "${schema}" cascade`);
      await query(`drop role if exists "${role}"`);
    }
  });
});
