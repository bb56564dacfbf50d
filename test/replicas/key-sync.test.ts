/**
 * Two real `gatehouse serve` processes on one PostgreSQL schema, as behind a load balancer:
 * what one replica (or the CLI) changes, the other enforces within a second, and an admin
 * signed in on one replica is signed in on both.
 *
 * Needs PostgreSQL (see test/helpers/postgres.ts): fails, never skips, without it.
 */
import { existsSync, mkdtempSync, readdirSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { startRecordingUpstream, type RecordingUpstream } from '../fakes/recording-upstream.js';
import { json, rawRequest, type RawResponse } from '../helpers/http.js';
import { requirePostgres, TestSchemas, urlWithPassword } from '../helpers/postgres.js';
import { runCli, spawnGateway, type GatewayProcess } from '../helpers/process.js';

const ADMIN_TOKEN = 'replica-test-admin-token-0123456789';
const ADMIN_PASSWORD = 'replicas share one password';
const DB_PASSWORD = 'db-password-never-logged-7f3a';

const schemas = new TestSchemas();
const schema = schemas.fresh('sync');
const databaseUrl = urlWithPassword(DB_PASSWORD);
let upstream: RecordingUpstream;
let a: GatewayProcess;
let b: GatewayProcess;
const dataDirs: string[] = [];

function env(): Record<string, string> {
  const dataDir = mkdtempSync(join(tmpdir(), 'gh-replica-'));
  dataDirs.push(dataDir);
  return {
    GATEHOUSE_DATA_DIR: dataDir,
    GATEHOUSE_UPSTREAM_URL: upstream.url,
    GATEHOUSE_DATABASE_URL: databaseUrl,
    GATEHOUSE_DATABASE_SCHEMA: schema,
    GATEHOUSE_ADMIN_TOKEN: ADMIN_TOKEN,
    GATEHOUSE_ADMIN_PASSWORD: ADMIN_PASSWORD,
  };
}

beforeAll(async () => {
  await requirePostgres();
  upstream = await startRecordingUpstream((_req, res) => void res.end('{"object":"list","data":[]}'));
  a = await spawnGateway(env());
  b = await spawnGateway(env());
});

afterAll(async () => {
  for (const gw of [a, b]) {
    if (!gw) continue;
    gw.child.kill('SIGTERM');
    await gw.exited;
  }
  await upstream?.close();
  await schemas.dropAll();
});

beforeEach(requirePostgres);

const v1 = (gw: GatewayProcess, key?: string) =>
  rawRequest(`${gw.url}/v1/models`, { headers: key ? { authorization: `Bearer ${key}` } : {} });

/** A script calling the admin API with the token (no browser headers). */
function admin(gw: GatewayProcess, method: string, path: string, body?: unknown): Promise<RawResponse> {
  const headers: Record<string, string> = { authorization: `Bearer ${ADMIN_TOKEN}` };
  if (body !== undefined) headers['content-type'] = 'application/json';
  return rawRequest(`${gw.url}${path}`, {
    method,
    headers,
    body: body === undefined ? undefined : JSON.stringify(body),
  });
}

/** As the dashboard sends it: same-origin, JSON, the session cookie. */
function browser(
  gw: GatewayProcess,
  method: string,
  path: string,
  cookie: string | undefined,
  body?: unknown,
): Promise<RawResponse> {
  const headers: Record<string, string> = { 'sec-fetch-site': 'same-origin' };
  if (method !== 'GET') headers.origin = gw.url;
  if (cookie) headers.cookie = `gatehouse_session=${cookie}`;
  if (body !== undefined) headers['content-type'] = 'application/json';
  return rawRequest(`${gw.url}${path}`, {
    method,
    headers,
    body: body === undefined ? undefined : JSON.stringify(body),
  });
}

/** Signs in on one replica; returns the session cookie's value. */
async function signIn(gw: GatewayProcess, body: { name?: string; password: string }): Promise<string> {
  const res = await browser(gw, 'POST', '/api/login', undefined, body);
  expect(res.status, res.body.toString()).toBe(200);
  const cookie = /^gatehouse_session=([^;]+)/.exec(
    res.headers['set-cookie']?.find((l) => l.startsWith('gatehouse_session=')) ?? '',
  )?.[1];
  expect(cookie).toMatch(/^[A-Za-z0-9_-]{43}$/);
  return cookie!;
}

/**
 * Polls the other replica (a separate process: nothing to subscribe to) until `check` holds;
 * throws after `ms`, the sync delay the replicas promise.
 */
async function within(ms: number, what: string, check: () => Promise<boolean>): Promise<void> {
  const started = performance.now();
  while (performance.now() - started < ms) {
    if (await check()) return;
    await new Promise((r) => setTimeout(r, 20));
  }
  throw new Error(`${what}: not within ${ms} ms`);
}

describe('two replicas on one PostgreSQL database', () => {
  it('both start on a fresh schema, open, and log where the store is without the password', async () => {
    expect((await v1(a)).status).toBe(200);
    expect((await v1(b)).status).toBe(200);
    for (const gw of [a, b]) {
      const line = gw
        .output()
        .split('\n')
        .find((l) => l.includes('"location"'));
      expect(line, gw.output()).toBeDefined();
      expect(JSON.parse(line!)).toMatchObject({
        store: 'postgres',
        location: expect.stringMatching(new RegExp(`^postgres://[^@/]+/[^ ]+ \\(schema ${schema}\\)$`)),
      });
      expect(gw.output()).not.toContain(DB_PASSWORD);
    }
    // PostgreSQL holds everything: no SQLite file appears in either data dir.
    for (const dir of dataDirs) expect(readdirSync(dir).filter((f) => f.includes('.db'))).toEqual([]);
  });

  let first = { id: '', secret: '' };

  it('a key created on A authenticates on B within 1 s (B leaves open mode)', async () => {
    const created = await admin(a, 'POST', '/api/keys', { name: 'made on A' });
    expect(created.status, created.body.toString()).toBe(201);
    const body = json(created.body) as { key: { id: string }; secret: string };
    first = { id: body.key.id, secret: body.secret };
    expect((await v1(a, first.secret)).status).toBe(200);
    await within(
      1000,
      'B accepting the new key',
      async () => (await v1(b, first.secret)).status === 200 && (await v1(b)).status === 401,
    );
  });

  it('a key revoked on B is refused on A within 1 s', async () => {
    const revoked = await admin(b, 'PATCH', `/api/keys/${first.id}`, { revoked: true });
    expect(revoked.status, revoked.body.toString()).toBe(200);
    expect((await v1(b, first.secret)).status).toBe(401);
    await within(1000, 'A refusing the revoked key', async () => (await v1(a, first.secret)).status === 401);
  });

  let second = { prefix: '', secret: '' };

  it('a key made with the keys CLI (same settings) works on both replicas within 1 s', async () => {
    const created = await runCli(['keys', 'create', '--name', 'made by the CLI', '--quiet'], env());
    expect(created.code, created.stderr).toBe(0);
    second = { secret: created.stdout.trim(), prefix: created.stdout.trim().slice(0, 9) };
    expect(second.secret).toMatch(/^sk-[0-9A-Za-z]{43}$/);
    await within(
      1000,
      'both replicas accepting the CLI key',
      async () => (await v1(a, second.secret)).status === 200 && (await v1(b, second.secret)).status === 200,
    );
    const list = await runCli(['keys', 'list', '--json'], env());
    expect(list.code, list.stderr).toBe(0);
    expect((JSON.parse(list.stdout) as { keys: Array<{ name: string }> }).keys.map((k) => k.name).sort()).toEqual([
      'made by the CLI',
      'made on A',
    ]);
    expect(list.stdout + list.stderr).not.toContain(DB_PASSWORD);
  });

  it('a key deleted on A is refused on B within 1 s', async () => {
    const listed = json((await admin(a, 'GET', '/api/keys')).body) as { keys: Array<{ id: string; name: string }> };
    const id = listed.keys.find((k) => k.name === 'made by the CLI')!.id;
    const deleted = await admin(a, 'DELETE', `/api/keys/${id}`);
    expect(deleted.status, deleted.body.toString()).toBe(200);
    expect((await v1(a, second.secret)).status).toBe(401);
    await within(1000, 'B refusing the deleted key', async () => (await v1(b, second.secret)).status === 401);
  });

  it('an admin signed in on A is signed in on B, and signing out on B ends it on A', async () => {
    const cookie = await signIn(a, { password: ADMIN_PASSWORD });
    const session = await browser(b, 'GET', '/api/session', cookie);
    expect(json(session.body)).toMatchObject({
      authenticated: true,
      setupRequired: false,
      via: 'session',
      user: { name: 'admin', role: 'admin' },
      role: 'admin',
    });
    const keysOnB = await browser(b, 'GET', '/api/keys', cookie);
    expect(keysOnB.status).toBe(200);
    expect((json(keysOnB.body) as { keys: unknown[] }).keys).toHaveLength(1);

    const signOut = await browser(b, 'POST', '/api/logout', cookie, {});
    expect(signOut.status, signOut.body.toString()).toBe(200);
    expect((await browser(a, 'GET', '/api/keys', cookie)).status).toBe(401);
  });

  it('a member disabled on A is signed out and their key refused on B within 1 s', async () => {
    const password = 'a member password for replicas';
    const created = await admin(a, 'POST', '/api/users', { name: 'mia', role: 'member', password });
    expect(created.status, created.body.toString()).toBe(201);
    const userId = (json(created.body) as { user: { id: string } }).user.id;
    const cookie = await signIn(b, { name: 'mia', password });
    const made = await browser(b, 'POST', '/api/keys', cookie, { name: 'mia laptop' });
    expect(made.status, made.body.toString()).toBe(201);
    const secret = (json(made.body) as { secret: string }).secret;
    await within(1000, 'A accepting the member key', async () => (await v1(a, secret)).status === 200);

    const disabled = await admin(a, 'PATCH', `/api/users/${userId}`, { disabled: true });
    expect(disabled.status, disabled.body.toString()).toBe(200);
    expect((await v1(a, secret)).status).toBe(401);
    await within(1000, 'B refusing the disabled member key', async () => (await v1(b, secret)).status === 401);
    expect((await browser(b, 'GET', '/api/keys', cookie)).status).toBe(401);
    const again = await browser(b, 'POST', '/api/login', undefined, { name: 'mia', password });
    expect(again.status).toBe(401);
  });

  it('never wrote the database password to either log', () => {
    for (const gw of [a, b]) expect(gw.output()).not.toContain(DB_PASSWORD);
    for (const dir of dataDirs) expect(existsSync(join(dir, 'gatehouse.db'))).toBe(false);
  });
});
