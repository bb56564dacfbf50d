/**
 * The setup token, the passwords and the session tokens must never be readable in the
 * database files or the logs. The one exception is the setup link, printed once at start.
 */
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AdminAccount } from '../../src/auth/admin-account.js';
import { hashSessionToken } from '../../src/auth/admin-sessions.js';
import { SQLITE_FILE_NAME } from '../../src/store/sqlite.js';
import { startRecordingUpstream, type RecordingUpstream } from '../fakes/recording-upstream.js';
import type { TestGateway } from '../helpers/gateway.js';
import { api, completeSetup, login, PASSWORD, printedSetupToken, startAdminGateway } from '../helpers/admin.js';

const NEW_PASSWORD = 'the second admin password';
const ENV_PASSWORD = 'password given in the environment';
let upstream: RecordingUpstream;

beforeAll(async () => {
  upstream = await startRecordingUpstream();
});
afterAll(async () => {
  await upstream.close();
});

/** Every file SQLite keeps for the database, concatenated: main file, WAL, shared memory. */
function databaseBytes(dataDir: string): Buffer {
  const parts: Buffer[] = [];
  for (const suffix of ['', '-wal', '-shm', '-journal']) {
    const file = join(dataDir, SQLITE_FILE_NAME + suffix);
    if (existsSync(file)) parts.push(readFileSync(file));
  }
  return Buffer.concat(parts);
}

function expectAbsent(haystack: Buffer | string, secrets: Record<string, string>, where: string): void {
  const bytes = typeof haystack === 'string' ? Buffer.from(haystack) : haystack;
  for (const [name, secret] of Object.entries(secrets)) {
    for (const needle of [Buffer.from(secret), Buffer.from(secret, 'utf16le')]) {
      expect(bytes.includes(needle), `${where} contains the ${name}`).toBe(false);
    }
  }
}

describe('admin secrets at rest and in logs', () => {
  let gateway: TestGateway;
  let setupToken: string;
  let sessions: string[];

  beforeAll(async () => {
    gateway = await startAdminGateway(upstream.url);
    setupToken = printedSetupToken(gateway);
    const first = await completeSetup(gateway);
    const second = await login(gateway);
    expect(
      (
        await api(gateway, 'POST', '/api/password', {
          cookie: first,
          body: { currentPassword: PASSWORD, newPassword: NEW_PASSWORD },
        })
      ).status,
    ).toBe(200);
    expect((await api(gateway, 'POST', '/api/login', { body: { password: 'a wrong password guess' } })).status).toBe(
      401,
    );
    const third = await login(gateway, NEW_PASSWORD);
    sessions = [first, second, third];
  });
  afterAll(async () => {
    await gateway.close();
  });

  it('stores the password as scrypt with the cost it was given, and sessions as SHA-256 only', async () => {
    const { N, r, p } = gateway.settings.passwordHashCost;
    expect([N, r, p]).toEqual([1024, 8, 1]);
    expect((await new AdminAccount(gateway.store!).firstAdmin())?.passwordHash).toMatch(
      /^scrypt\$1024\$8\$1\$[A-Za-z0-9_-]{22}\$[A-Za-z0-9_-]{43}$/,
    );
    expect(await gateway.store!.sessions.findByTokenHash(hashSessionToken(sessions[2]!))).toBeDefined();
    // Sanity: the search below reads the right bytes; the hash of a live session is there.
    expect(databaseBytes(gateway.dataDir).includes(Buffer.from(hashSessionToken(sessions[2]!)))).toBe(true);
  });

  it('never writes the setup token, a password or a session token to the database files', async () => {
    const secrets = {
      'setup token': setupToken,
      password: PASSWORD,
      'new password': NEW_PASSWORD,
      'wrong guess': 'a wrong password guess',
    };
    const sessionSecrets = Object.fromEntries(sessions.map((s, i) => [`session token ${i}`, s]));
    expectAbsent(databaseBytes(gateway.dataDir), { ...secrets, ...sessionSecrets }, 'the database (open)');
    await gateway.close();
    expectAbsent(databaseBytes(gateway.dataDir), { ...secrets, ...sessionSecrets }, 'the database (closed)');
  });

  it('logs the setup token only in the one setup link at start, and never a password or session token', () => {
    const lines = gateway
      .logText()
      .split('\n')
      .filter((l) => l.includes(setupToken));
    expect(lines).toHaveLength(1);
    expect(JSON.parse(lines[0]!)).toMatchObject({ level: 40, admin: 'setup_required' });
    const sessionSecrets = Object.fromEntries(sessions.map((s, i) => [`session token ${i}`, s]));
    expectAbsent(
      gateway.logText(),
      { password: PASSWORD, 'new password': NEW_PASSWORD, 'wrong guess': 'a wrong password guess', ...sessionSecrets },
      'the log',
    );
  });
});

describe('GATEHOUSE_ADMIN_PASSWORD at rest and in logs', () => {
  it('is neither in the database files nor in the log', async () => {
    const gateway = await startAdminGateway(upstream.url, { adminPassword: ENV_PASSWORD });
    try {
      const cookie = await login(gateway, ENV_PASSWORD);
      expectAbsent(databaseBytes(gateway.dataDir), { password: ENV_PASSWORD, session: cookie }, 'the database');
      expectAbsent(gateway.logText(), { password: ENV_PASSWORD, session: cookie }, 'the log');
      expect(gateway.logText()).not.toContain('/setup#token=');
    } finally {
      await gateway.close();
    }
  });
});
