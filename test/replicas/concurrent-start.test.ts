/**
 * Replicas starting together on an empty PostgreSQL schema: migrations apply at start with no
 * manual step, exactly once (advisory lock), and every replica serves. And a database that
 * cannot be reached stops the start with a message that names where, never the password.
 *
 * Needs PostgreSQL (see test/helpers/postgres.ts): fails, never skips, without it.
 */
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { MIGRATIONS } from '../../src/store/migrations.js';
import { startRecordingUpstream, type RecordingUpstream } from '../fakes/recording-upstream.js';
import { json, rawRequest } from '../helpers/http.js';
import { query, requirePostgres, TEST_DATABASE_URL, TestSchemas } from '../helpers/postgres.js';
import { runCli, spawnGateway, type GatewayProcess } from '../helpers/process.js';

const schemas = new TestSchemas();
let upstream: RecordingUpstream;
const running: GatewayProcess[] = [];

beforeAll(async () => {
  upstream = await startRecordingUpstream((_req, res) => void res.end('{"object":"list","data":[]}'));
});
afterAll(async () => {
  for (const gw of running) {
    gw.child.kill('SIGTERM');
    await gw.exited;
  }
  await upstream.close();
  await schemas.dropAll();
});
beforeEach(requirePostgres);

const envFor = (schema: string, url = TEST_DATABASE_URL): Record<string, string> => ({
  GATEHOUSE_DATA_DIR: mkdtempSync(join(tmpdir(), 'gh-replica-start-')),
  GATEHOUSE_UPSTREAM_URL: upstream.url,
  GATEHOUSE_DATABASE_URL: url,
  GATEHOUSE_DATABASE_SCHEMA: schema,
  GATEHOUSE_ADMIN_PASSWORD: 'three replicas, one password',
});

/** The `store: ...` start-up line of a gateway's log. */
function storeLine(gw: GatewayProcess): { store: string; location: string; migrations_applied: string[] } {
  const line = gw
    .output()
    .split('\n')
    .find((l) => l.includes('"location"'));
  if (!line) throw new Error(`no store line in the log:\n${gw.output()}`);
  return JSON.parse(line) as { store: string; location: string; migrations_applied: string[] };
}

describe('replicas starting at once on a fresh schema', () => {
  it('migrate it exactly once, and all three serve', async () => {
    const schema = schemas.fresh('start3');
    const gateways = await Promise.all([0, 1, 2].map(() => spawnGateway(envFor(schema))));
    running.push(...gateways);

    const names = Object.keys(MIGRATIONS);
    const { rows } = await query<{ name: string }>(`select name from "${schema}".kysely_migration order by name`);
    expect(rows.map((r) => r.name)).toEqual(names);

    // One replica applied every migration; the others found the schema current.
    const applied = gateways.map((gw) => storeLine(gw).migrations_applied).sort((x, y) => y.length - x.length);
    expect(applied).toEqual([names, [], []]);

    for (const gw of gateways) {
      const health = await rawRequest(`${gw.url}/healthz`);
      expect(health.status).toBe(200);
      expect(json(health.body)).toEqual({ status: 'ok' });
      expect((await rawRequest(`${gw.url}/v1/models`)).status).toBe(200);
    }
  });

  it('a later start finds the schema current and applies nothing', async () => {
    const schema = schemas.fresh('later');
    const first = await spawnGateway(envFor(schema));
    running.push(first);
    expect(storeLine(first).migrations_applied).toEqual(Object.keys(MIGRATIONS));
    const second = await spawnGateway(envFor(schema));
    running.push(second);
    expect(storeLine(second).migrations_applied).toEqual([]);
    expect(second.output()).toMatch(new RegExp(`"msg":"store: postgres://[^"]+ \\(schema ${schema}\\)"`));
  });
});

describe('a PostgreSQL server that cannot be reached', () => {
  it('stops the start with a non-zero exit naming host and database, never the password', async () => {
    const secret = 'unreachable-db-password-5d1e';
    const url = `postgres://gatehouse:${secret}@127.0.0.1:1/gatehouse_prod?application_name=x&password=${secret}`;
    const start = spawnGateway(envFor(schemas.fresh('unreach'), url));
    const error = await start.then(
      () => new Error('the gateway started without its database'),
      (e: unknown) => e as Error,
    );
    expect(error.message).toMatch(/exited with 1 before starting/);
    expect(error.message).toContain('opening the PostgreSQL store at postgres://127.0.0.1:1/gatehouse_prod');
    expect(error.message).toMatch(/ECONNREFUSED/);
    expect(error.message).not.toContain(secret);
  });

  it('makes the keys CLI fail with exit 1 and the same redacted message', async () => {
    const secret = 'cli-db-password-88a0';
    const result = await runCli(
      ['keys', 'list'],
      envFor(schemas.fresh('unreach_cli'), `postgresql://gatehouse:${secret}@127.0.0.1:1/gh`),
    );
    expect(result.code).toBe(1);
    expect(result.stderr).toContain(
      'gatehouse keys list failed: opening the PostgreSQL store at postgres://127.0.0.1:1/gh',
    );
    expect(result.stdout + result.stderr).not.toContain(secret);
  });
});
