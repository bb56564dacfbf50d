/**
 * What `gatehouse serve` says at start about the API and the admin account: the protected line
 * counts only the keys that work, and the password line mentions signed-out sessions only
 * when there were some. Real SQLite store, real logger writing into memory.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import { afterAll, afterEach, beforeEach, describe, expect, it } from 'vitest';
import { prepareAdminAccess } from '../../src/auth/admin-bootstrap.js';
import { AdminAccount } from '../../src/auth/admin-account.js';
import { AdminSessions } from '../../src/auth/admin-sessions.js';
import { newKeyRecord } from '../../src/auth/api-keys.js';
import { authModeLine } from '../../src/auth/auth-mode.js';
import { KeyIndex } from '../../src/auth/key-index.js';
import { createLogger } from '../../src/logger.js';
import { openSqliteStore } from '../../src/store/sqlite.js';
import type { Store } from '../../src/store/store.js';
import { TEST_PASSWORD_HASH_COST as passwordHashCost } from '../helpers/password-cost.js';

const root = mkdtempSync(join(tmpdir(), 'gatehouse-start-up-lines-'));
afterAll(() => rmSync(root, { recursive: true, force: true }));

const NOW = Date.UTC(2031, 0, 1);
let n = 0;
let store: Store;
beforeEach(async () => {
  store = await openSqliteStore({ dataDir: join(root, `t${n++}`) });
});
afterEach(async () => {
  await store.close();
});

function memoryLogger() {
  let text = '';
  const sink = new Writable({
    write(chunk: Buffer, _enc, cb) {
      text += chunk.toString('utf8');
      cb();
    },
  });
  const messages = () =>
    text
      .split('\n')
      .filter(Boolean)
      .map((line) => (JSON.parse(line) as { msg: string }).msg);
  return { logger: createLogger('info', sink), messages };
}

describe('the API protection line', () => {
  it('counts only active keys: revoked and expired ones still protect the API but are not counted', async () => {
    const keys = [
      newKeyRecord({ name: 'live' }, NOW - 10).record,
      { ...newKeyRecord({ name: 'revoked' }, NOW - 10).record, revokedAt: NOW - 5 },
      { ...newKeyRecord({ name: 'expired' }, NOW - 10).record, expiresAt: NOW - 1 },
      { ...newKeyRecord({ name: 'later' }, NOW - 10).record, expiresAt: NOW + 60_000 },
    ];
    for (const key of keys) await store.keys.create(key);
    const index = await KeyIndex.open(store, { now: () => NOW });
    try {
      expect(index.activeCount()).toBe(2);
      const line = authModeLine({ anyKeys: index.hasAnyKeys(), activeKeys: index.activeCount(), host: '0.0.0.0' });
      expect(line).toEqual({
        level: 'info',
        fields: { auth: 'protected', keys: 2 },
        message: 'API is PROTECTED: every /v1 call needs one of the 2 active API key(s).',
      });
    } finally {
      await index.close();
    }
  });

  it('warns when keys exist but none is active: every call is refused', () => {
    expect(authModeLine({ anyKeys: true, activeKeys: 0, host: '127.0.0.1' })).toMatchObject({
      level: 'warn',
      fields: { auth: 'protected', keys: 0 },
      message: expect.stringContaining('no API key is active') as unknown,
    });
  });

  it('says the API is open without keys, and warns when the gateway listens beyond loopback', () => {
    expect(authModeLine({ anyKeys: false, activeKeys: 0, host: '127.0.0.1' }).level).toBe('info');
    const wide = authModeLine({ anyKeys: false, activeKeys: 0, host: '0.0.0.0' });
    expect(wide.level).toBe('warn');
    expect(wide.message).toMatch(/^API is OPEN: .* WARNING: listening on 0\.0\.0\.0/);
  });
});

describe('the admin password line', () => {
  it('does not claim sessions were signed out when there were none', async () => {
    const { logger, messages } = memoryLogger();
    await prepareAdminAccess({ store, adminPassword: 'first password of twenty', passwordHashCost, logger });
    expect(messages()).toEqual(['Admin password set from GATEHOUSE_ADMIN_PASSWORD.']);
  });

  it('says how many sessions a changed password signed out', async () => {
    const { logger, messages } = memoryLogger();
    await prepareAdminAccess({ store, adminPassword: 'first password of twenty', passwordHashCost, logger });
    const sessions = new AdminSessions({ store: store.sessions, ttlMs: 3_600_000 });
    const admin = (await new AdminAccount(store).firstAdmin())!;
    await sessions.start(admin.id);
    await sessions.start(admin.id);
    await prepareAdminAccess({ store, adminPassword: 'second password of twenty', passwordHashCost, logger });
    // The same password again changes nothing and says nothing.
    await prepareAdminAccess({ store, adminPassword: 'second password of twenty', passwordHashCost, logger });
    expect(messages()).toEqual([
      'Admin password set from GATEHOUSE_ADMIN_PASSWORD.',
      'Admin password set from GATEHOUSE_ADMIN_PASSWORD; 2 dashboard session(s) were signed out.',
    ]);
  });
});
