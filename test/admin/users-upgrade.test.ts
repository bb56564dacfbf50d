/**
 * Upgrading from the one-password versions: the admin password becomes the first admin user,
 * the browsers signed in before the upgrade stay signed in, and GATEHOUSE_ADMIN_PASSWORD keeps
 * meaning that user's password.
 */
import { mkdirSync, mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import BetterSqlite3 from 'better-sqlite3';
import { Kysely, SqliteDialect } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SQLITE_FILE_NAME } from '../../src/store/sqlite.js';
import { startRecordingUpstream, type RecordingUpstream } from '../fakes/recording-upstream.js';
import { api, login, startAdminGateway } from '../helpers/admin.js';
import type { TestGateway } from '../helpers/gateway.js';
import { json } from '../helpers/http.js';
import {
  expectOneAdminMigrated,
  OLD_KEY_ID,
  OLD_PASSWORD,
  OLD_SESSION_TOKEN,
  writeOneAdminDatabase,
} from '../store/users-migration.js';

let upstream: RecordingUpstream;
const gateways: TestGateway[] = [];
beforeAll(async () => {
  upstream = await startRecordingUpstream();
});
afterAll(async () => {
  await Promise.all(gateways.map((g) => g.close()));
  await upstream?.close();
});

async function oldDataDir(): Promise<string> {
  const dataDir = join(mkdtempSync(join(tmpdir(), 'gh-upgrade-')), 'data');
  mkdirSync(dataDir);
  const old = new Kysely<unknown>({
    dialect: new SqliteDialect({ database: new BetterSqlite3(join(dataDir, SQLITE_FILE_NAME)) }),
  });
  await writeOneAdminDatabase(old, { disableTransactions: true });
  await old.destroy();
  return dataDir;
}

describe('upgrading a one-password gateway to users', () => {
  it('keeps the signed-in browser signed in, as the first admin, and the password signs in as before', async () => {
    const gateway = await startAdminGateway(upstream.url, {}, {}, { dataDir: await oldDataDir() });
    gateways.push(gateway);
    await expectOneAdminMigrated(gateway.store!);
    const session = await api(gateway, 'GET', '/api/session', { cookie: OLD_SESSION_TOKEN });
    expect(json(session.body)).toMatchObject({
      authenticated: true,
      via: 'session',
      role: 'admin',
      user: { name: 'admin', role: 'admin', status: 'active' },
    });
    const keys = await api(gateway, 'GET', '/api/keys', { cookie: OLD_SESSION_TOKEN });
    expect(json(keys.body)).toMatchObject({ keys: [{ id: OLD_KEY_ID, ownerId: null, ownerName: null }] });
    await login(gateway, OLD_PASSWORD);
    await login(gateway, OLD_PASSWORD, 'admin');
  });

  it('applies GATEHOUSE_ADMIN_PASSWORD to that user: the same password keeps sessions, a new one ends them', async () => {
    const dataDir = await oldDataDir();
    const same = await startAdminGateway(upstream.url, { adminPassword: OLD_PASSWORD }, {}, { dataDir });
    gateways.push(same);
    expect((await api(same, 'GET', '/api/keys', { cookie: OLD_SESSION_TOKEN })).status).toBe(200);
    await same.close();

    const changed = await startAdminGateway(
      upstream.url,
      { adminPassword: 'a new password from settings' },
      {},
      { dataDir },
    );
    gateways.push(changed);
    expect((await api(changed, 'GET', '/api/keys', { cookie: OLD_SESSION_TOKEN })).status).toBe(401);
    await login(changed, 'a new password from settings', 'admin');
    expect(await changed.store!.users.count()).toBe(1);
  });
});
