/**
 * The audit log through the real gateway (route table, admin chain, real SQLite store) in front
 * of the llama-swap simulator, with the config editor on a real file: every audited action leaves
 * its entry, no entry holds a secret, an entry that cannot be written fails its action, and the
 * log pages, filters and is pruned.
 */
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import BetterSqlite3 from 'better-sqlite3';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { AuditEntry, AuditPage } from '../../src/admin-api/types.js';
import { AuditRetention } from '../../src/audit/retention.js';
import { runKeysCommand } from '../../src/cli/keys.js';
import { ConfigEditor } from '../../src/config-editor/config-editor.js';
import { loadSettings } from '../../src/settings/index.js';
import { sqliteFileIn } from '../../src/store/sqlite.js';
import { createLlamaSwapClient } from '../../src/management-client/llama-swap-client.js';
import { SCHEMA_PATH, tempDir, V1, V2 } from '../config-editor/helpers.js';
import { startSimulator, type Simulator } from '../fakes/llama-swap/index.js';
import {
  api,
  DAY,
  errorCode,
  manualClock,
  PASSWORD,
  printedSetupToken,
  sessionSetCookie,
  sessionToken,
  startAdminGateway,
} from '../helpers/admin.js';
import type { TestGateway } from '../helpers/gateway.js';
import { json, type RawResponse } from '../helpers/http.js';

const ADMIN_TOKEN = 'audit-admin-token-0123456789';
const NEW_PASSWORD = 'a second passphrase for the audit test';
const WRONG_PASSWORD = 'not the right passphrase at all';
const clock = manualClock(Date.UTC(2031, 2, 1, 12));

let sim: Simulator;
let gateway: TestGateway;
let configFile: string;
/** Every secret the actions below handle; none may reach the audit log. */
const secrets: string[] = [PASSWORD, NEW_PASSWORD, WRONG_PASSWORD, ADMIN_TOKEN];

beforeAll(async () => {
  const dir = await tempDir('gh-audit-');
  configFile = join(dir, 'config.yaml');
  await writeFile(configFile, V1);
  sim = await startSimulator({ configFile, knobs: { loadDelayMs: 20 } });
  const llamaSwap = createLlamaSwapClient({ baseUrl: new URL(sim.url) });
  const editor = new ConfigEditor({ configFile, schemaSource: SCHEMA_PATH(), dataDir: dir, proxyLog: llamaSwap });
  gateway = await startAdminGateway(
    sim.url,
    { adminToken: ADMIN_TOKEN },
    { configEditor: editor, closeables: [editor, llamaSwap], now: clock.now },
  );
}, 60_000);

afterAll(async () => {
  await gateway?.close();
  await sim?.close();
});

const token = { authorization: `Bearer ${ADMIN_TOKEN}` };
const asToken = (method: string, path: string, body?: unknown) =>
  api(gateway, method, path, { headers: { ...token }, ...(body === undefined ? {} : { body }) });

async function auditPage(query = ''): Promise<AuditPage> {
  const res = await asToken('GET', `/api/audit${query}`);
  expect(res.status, res.body.toString()).toBe(200);
  return json(res.body) as AuditPage;
}

/** The entries written since `count` entries existed, oldest first. */
async function entriesSince(count: number): Promise<AuditEntry[]> {
  const { entries } = await auditPage('?limit=500');
  return entries.slice(0, entries.length - count).reverse();
}

async function entryCount(): Promise<number> {
  return (await auditPage('?limit=500')).entries.length;
}

/** Every row of the table as the database holds it. */
function rawAuditRows(): string {
  const db = new BetterSqlite3(sqliteFileIn(gateway.dataDir), { readonly: true });
  try {
    return JSON.stringify(db.prepare('select * from audit_log').all());
  } finally {
    db.close();
  }
}

function expectOk(res: RawResponse, status = 200): void {
  expect(res.status, res.body.toString()).toBe(status);
}

const browser = { kind: 'session', name: null } as const;
/** A signed-in actor is their user: here the first admin, whom setup created. */
async function firstAdmin() {
  const user = await gateway.store!.users.findByName('admin');
  return { kind: 'user', id: user!.id, name: 'admin' };
}
const scriptActor = { kind: 'admin-token', id: null, name: null } as const;

describe('the audit entry of every admin action', () => {
  let sessionA = '';
  let sessionB = '';
  let keyId = '';

  it('records setup, its refusal, sign-in and a failed sign-in, naming the user each signed in', async () => {
    const before = await entryCount();
    const wrong = await api(gateway, 'POST', '/api/setup', {
      body: { token: 'A'.repeat(43), password: PASSWORD },
    });
    expect(wrong.status).toBe(403);
    secrets.push(printedSetupToken(gateway));
    const setup = await api(gateway, 'POST', '/api/setup', {
      body: { token: printedSetupToken(gateway), password: PASSWORD },
    });
    expectOk(setup);
    sessionA = sessionToken(setup);
    const failed = await api(gateway, 'POST', '/api/login', { body: { password: WRONG_PASSWORD } });
    expect(failed.status).toBe(401);
    const signIn = await api(gateway, 'POST', '/api/login', { body: { password: PASSWORD } });
    expectOk(signIn);
    sessionB = sessionToken(signIn);
    secrets.push(sessionA, sessionB);

    const at = new Date(clock.now()).toISOString();
    const common = { at, client: '127.0.0.1', target: null, changes: null };
    expect((await entriesSince(before)).map(({ id: _id, ...rest }) => rest)).toEqual([
      {
        ...common,
        action: 'setup.complete',
        actor: { ...browser, id: null },
        outcome: 'failure',
        reason: 'admin_forbidden',
      },
      {
        ...common,
        action: 'setup.complete',
        actor: await firstAdmin(),
        outcome: 'success',
        reason: null,
      },
      {
        ...common,
        action: 'session.sign_in_failed',
        actor: { ...browser, id: null },
        outcome: 'failure',
        reason: 'admin_unauthorized',
      },
      {
        ...common,
        action: 'session.sign_in',
        actor: await firstAdmin(),
        outcome: 'success',
        reason: null,
      },
    ]);
  });

  it('records key create, update, revoke and delete with the key id and name, and a refused delete', async () => {
    const before = await entryCount();
    const created = await api(gateway, 'POST', '/api/keys', { cookie: sessionB, body: { name: 'laptop' } });
    expectOk(created, 201);
    const body = json(created.body) as { key: { id: string; hash?: string }; secret: string };
    keyId = body.key.id;
    secrets.push(body.secret, (await gateway.store!.keys.get(keyId))!.hash);
    expectOk(await api(gateway, 'PATCH', `/api/keys/${keyId}`, { cookie: sessionB, body: { name: 'old laptop' } }));
    expectOk(await api(gateway, 'PATCH', `/api/keys/${keyId}`, { cookie: sessionB, body: { revoked: true } }));
    const lastKey = await api(gateway, 'DELETE', `/api/keys/${keyId}`, { cookie: sessionB });
    expect(lastKey.status).toBe(409);
    expectOk(await asToken('DELETE', `/api/keys/${keyId}?confirm=last`));

    const session = await firstAdmin();
    const key = (name: string) => ({ kind: 'key', id: keyId, name, version: null });
    expect(
      (await entriesSince(before)).map((e) => [e.action, e.actor, e.target, e.outcome, e.reason, e.client]),
    ).toEqual([
      ['key.create', session, key('laptop'), 'success', null, '127.0.0.1'],
      ['key.update', session, key('old laptop'), 'success', null, '127.0.0.1'],
      ['key.revoke', session, key('old laptop'), 'success', null, '127.0.0.1'],
      ['key.delete', session, key('old laptop'), 'failure', 'conflict', '127.0.0.1'],
      ['key.delete', scriptActor, key('old laptop'), 'success', null, '127.0.0.1'],
    ]);
  });

  it('records a request the route schema refuses as a failure of its action, validation_failed', async () => {
    const before = await entryCount();
    const badKey = await api(gateway, 'POST', '/api/keys', {
      cookie: sessionB,
      body: { name: 'x', limits: { rpm: -1 } },
    });
    expect([badKey.status, errorCode(badKey)]).toEqual([422, 'validation_failed']);
    const badUser = await api(gateway, 'POST', '/api/users', { cookie: sessionB, body: { name: '', role: 'owner' } });
    expect([badUser.status, errorCode(badUser)]).toEqual([422, 'validation_failed']);

    const session = await firstAdmin();
    expect((await entriesSince(before)).map((e) => [e.action, e.actor, e.target, e.outcome, e.reason])).toEqual([
      ['key.create', session, null, 'failure', 'validation_failed'],
      ['user.create', session, null, 'failure', 'validation_failed'],
    ]);
  });

  it('records config format and save with the file and the version written, and a stale save', async () => {
    const before = await entryCount();
    const loaded = json((await asToken('GET', '/api/config')).body) as { version: string };
    expectOk(await asToken('POST', '/api/config/format', { text: V2 }));
    const saved = await asToken('PUT', '/api/config', { text: V2, version: loaded.version });
    expectOk(saved);
    const { version } = json(saved.body) as { version: string };
    const stale = await asToken('PUT', '/api/config', { text: V1, version: loaded.version });
    expect(stale.status).toBe(409);

    const config = (v: string | null) => ({ kind: 'config', id: configFile, name: null, version: v });
    expect((await entriesSince(before)).map((e) => [e.action, e.actor, e.target, e.outcome, e.reason])).toEqual([
      ['config.format', scriptActor, config(null), 'success', null],
      ['config.save', scriptActor, config(version), 'success', null],
      ['config.save', scriptActor, config(null), 'failure', 'config_conflict'],
    ]);
  });

  it('records model load, unload, unload-all, and an unload llama-swap refused', async () => {
    const before = await entryCount();
    expectOk(await api(gateway, 'POST', '/api/models/qwen/load', { cookie: sessionB, body: {} }), 202);
    await sim.load('qwen');
    expectOk(await api(gateway, 'POST', '/api/models/qwen/unload', { cookie: sessionB, body: {} }));
    expect((await api(gateway, 'POST', '/api/models/nope/unload', { cookie: sessionB, body: {} })).status).toBe(404);
    expectOk(await asToken('POST', '/api/models/unload-all', {}));

    const session = await firstAdmin();
    const model = (id: string) => ({ kind: 'model', id, name: null, version: null });
    expect((await entriesSince(before)).map((e) => [e.action, e.actor, e.target, e.outcome, e.reason])).toEqual([
      ['model.load', session, model('qwen'), 'success', null],
      ['model.unload', session, model('qwen'), 'success', null],
      ['model.unload', session, model('nope'), 'failure', 'not_found'],
      ['model.unload_all', scriptActor, null, 'success', null],
    ]);
  });

  it('records a password change, a wrong current password, and sign-out', async () => {
    const before = await entryCount();
    const wrong = await api(gateway, 'POST', '/api/password', {
      cookie: sessionB,
      body: { currentPassword: WRONG_PASSWORD, newPassword: NEW_PASSWORD },
    });
    expect(wrong.status).toBe(401);
    const changed = await api(gateway, 'POST', '/api/password', {
      cookie: sessionB,
      body: { currentPassword: PASSWORD, newPassword: NEW_PASSWORD },
    });
    expectOk(changed);
    expectOk(await api(gateway, 'POST', '/api/logout', { cookie: sessionB, body: {} }));

    const session = await firstAdmin();
    expect((await entriesSince(before)).map((e) => [e.action, e.actor, e.outcome, e.reason])).toEqual([
      ['password.change', session, 'failure', 'admin_unauthorized'],
      ['password.change', session, 'success', null],
      ['session.sign_out', session, 'success', null],
    ]);
  });

  it('records key changes made with gatehouse keys as the cli, without a client address', async () => {
    let out = '';
    const sink = new Writable({
      write(chunk: Buffer, _enc, cb) {
        out += chunk.toString();
        cb();
      },
    });
    const keys = (...argv: string[]) =>
      runKeysCommand(argv, { stdout: sink, stderr: sink }, { dataDir: gateway.dataDir, databaseUrl: undefined });
    expect(await keys('create', '--name', 'ci runner', '--quiet'), out).toBe(0);
    const secret = out.trim();
    secrets.push(secret);
    const key = (await gateway.store!.keys.list()).find((k) => k.name === 'ci runner')!;
    expect(await keys('limits', key.id, '--rpm', '5'), out).toBe(0);
    expect(await keys('revoke', secret), out).toBe(0);
    expect(await keys('delete', key.id, '--yes'), out).toBe(0);

    // Written on the CLI's own (system) clock, so found by their actor rather than their place.
    const cli = (await auditPage('?limit=500')).entries.filter((e) => e.actor.kind === 'cli').reverse();
    expect(cli.map((e) => [e.action, e.client, e.target, e.outcome])).toEqual(
      ['key.create', 'key.update', 'key.revoke', 'key.delete'].map((action) => [
        action,
        null,
        { kind: 'key', id: key.id, name: 'ci runner', version: null },
        'success',
      ]),
    );
  });

  it('keeps every secret out of every stored entry: passwords, tokens, keys, hashes and config text', () => {
    const rows = rawAuditRows();
    expect(rows).toContain('key.create');
    expect(secrets.length).toBeGreaterThanOrEqual(10);
    for (const secret of secrets) expect(rows.includes(secret), `a secret is in the audit log`).toBe(false);
    // The config text: a line only the saved text has, and the model command in both versions.
    expect(rows).not.toContain('llama.gguf');
    expect(rows).not.toContain('llama-server');
  });
});

describe('an entry that cannot be written', () => {
  /** Makes the database refuse audit entries until the returned function is called. */
  function refuseAuditWrites(): () => void {
    const db = new BetterSqlite3(sqliteFileIn(gateway.dataDir));
    db.pragma('busy_timeout = 5000');
    db.exec(`create trigger refuse_audit before insert on audit_log begin select raise(abort, 'audit refused'); end`);
    return () => {
      db.exec('drop trigger refuse_audit');
      db.close();
    };
  }

  it('fails a key creation with 500 audit_write_failed and leaves no key behind', async () => {
    const keysBefore = await gateway.store!.keys.count();
    const restore = refuseAuditWrites();
    try {
      const res = await asToken('POST', '/api/keys', { name: 'unrecorded' });
      expect(res.status).toBe(500);
      expect(errorCode(res)).toBe('audit_write_failed');
      expect((json(res.body) as { error: { message: string } }).error.message).toContain('Nothing was changed');
      expect(JSON.stringify(json(res.body))).not.toMatch(/sk-/);
    } finally {
      restore();
    }
    expect(await gateway.store!.keys.count()).toBe(keysBefore);
    expect((await gateway.store!.keys.list()).map((k) => k.name)).not.toContain('unrecorded');
  });

  it('fails a sign-in without opening a session or setting a cookie', async () => {
    const sessionsBefore = await gateway.store!.sessions.count();
    const restore = refuseAuditWrites();
    let res: RawResponse;
    try {
      res = await api(gateway, 'POST', '/api/login', { body: { password: NEW_PASSWORD } });
    } finally {
      restore();
    }
    expect(res.status).toBe(500);
    expect(errorCode(res)).toBe('audit_write_failed');
    expect(sessionSetCookie(res)).toBeUndefined();
    expect(await gateway.store!.sessions.count()).toBe(sessionsBefore);
  });

  it('fails a model unload that llama-swap already did, and says it was done', async () => {
    await sim.load('qwen');
    const restore = refuseAuditWrites();
    let res: RawResponse;
    try {
      res = await asToken('POST', '/api/models/qwen/unload', {});
    } finally {
      restore();
    }
    expect(res.status).toBe(500);
    expect(errorCode(res)).toBe('audit_write_failed');
    expect((json(res.body) as { error: { message: string } }).error.message).toContain('The action was done');
    expect(sim.state('qwen')).toBe('stopped');
    const line = gateway
      .logLines()
      .find((l) => l.event === 'audit_write_failed' && (l.audit as { action?: string }).action === 'model.unload');
    expect(line).toMatchObject({ level: 50, audit: { action: 'model.unload', outcome: 'success' } });
  });

  it('fails a refused action too: a wrong password whose attempt cannot be recorded is a 500', async () => {
    const restore = refuseAuditWrites();
    try {
      const res = await api(gateway, 'POST', '/api/login', { body: { password: WRONG_PASSWORD } });
      expect(res.status).toBe(500);
      expect(errorCode(res)).toBe('audit_write_failed');
    } finally {
      restore();
    }
  });
});

describe('GET /api/audit', () => {
  it('pages newest first with nextBefore until the oldest entry, and filters by action', async () => {
    const all = (await auditPage('?limit=500')).entries;
    expect(all.length).toBeGreaterThan(5);
    const seen: AuditEntry[] = [];
    let before: string | null = '';
    while (before !== null) {
      const page: AuditPage = await auditPage(`?limit=2${before ? `&before=${encodeURIComponent(before)}` : ''}`);
      expect(page.entries.length).toBeLessThanOrEqual(2);
      seen.push(...page.entries);
      before = page.nextBefore;
    }
    expect(seen).toEqual(all);

    const creates = await auditPage('?action=key.create');
    expect(creates.entries.length).toBeGreaterThanOrEqual(2);
    expect(creates.entries.every((e) => e.action === 'key.create')).toBe(true);
    expect(creates.entries).toEqual(all.filter((e) => e.action === 'key.create'));
  });

  it('lists entries strictly before an ISO time', async () => {
    clock.advance(60_000);
    expectOk(await asToken('POST', '/api/models/unload-all', {}));
    const cut = new Date(clock.now()).toISOString();
    const older = await auditPage(`?limit=500&before=${encodeURIComponent(cut)}`);
    const all = await auditPage('?limit=500');
    expect(all.entries[0]!.at).toBe(cut);
    expect(older.entries).toEqual(all.entries.filter((e) => e.at < cut));
  });

  it('refuses an unknown action, a bad limit or before, and unknown parameters with 422', async () => {
    const res = await asToken('GET', '/api/audit?action=key.steal&limit=0&before=yesterday&page=2');
    expect(res.status).toBe(422);
    expect(
      (json(res.body) as { error: { details: Array<{ path: string }> } }).error.details.map((d) => d.path).sort(),
    ).toEqual(['/action', '/before', '/limit', '/page']);
  });

  it('is an admin route: 401 without a session or the admin token', async () => {
    const res = await api(gateway, 'GET', '/api/audit');
    expect(res.status).toBe(401);
  });
});

describe('retention', () => {
  it('defaults to 365 days, parses like the usage retention and refuses less than an hour', () => {
    expect(loadSettings({}).auditRetentionMs).toBe(365 * DAY);
    expect(loadSettings({ GATEHOUSE_AUDIT_RETENTION: '90d' }).auditRetentionMs).toBe(90 * DAY);
    expect(() => loadSettings({ GATEHOUSE_AUDIT_RETENTION: '30m' })).toThrow(/GATEHOUSE_AUDIT_RETENTION.*at least 1h/);
    expect(() => loadSettings({ GATEHOUSE_AUDIT_RETENTION: '90' })).toThrow(/GATEHOUSE_AUDIT_RETENTION/);
  });

  it('prunes entries older than the retention on its clock, in batches, and keeps the rest', async () => {
    const oldCount = await entryCount();
    clock.advance(10 * DAY);
    expectOk(await asToken('POST', '/api/models/unload-all', {}));
    const retention = new AuditRetention(gateway.store!.audit, {
      retentionMs: 5 * DAY,
      batchSize: 3,
      now: clock.now,
      firstRunMs: 3_600_000,
    });
    try {
      expect(await retention.prune()).toBe(oldCount);
    } finally {
      await retention.close();
    }
    const left = (await auditPage('?limit=500')).entries;
    expect(left.map((e) => [e.action, e.at])).toEqual([['model.unload_all', new Date(clock.now()).toISOString()]]);
  });
});
