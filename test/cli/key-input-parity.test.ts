/**
 * The CLI and the admin API refuse the same key inputs: one table of bad inputs, each written
 * once as a JSON body and once as `gatehouse keys` flags, fed to both (`auth/key-input.ts`).
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runKeysCommand } from '../../src/cli/keys.js';
import { api, startAdminGateway } from '../helpers/admin.js';
import type { TestGateway } from '../helpers/gateway.js';
import { json } from '../helpers/http.js';

const ADMIN_TOKEN = 'key-input-parity-admin-token';
const many = (n: number, item: (i: number) => string) => Array.from({ length: n }, (_, i) => item(i));

interface BadInput {
  what: string;
  /** The JSON pointer the API names. */
  path: string;
  body: Record<string, unknown>;
  flags: string[];
}

const CREATE: BadInput[] = [
  {
    what: 'an rpm limit over 1e9',
    path: '/limits/rpm',
    body: { limits: { rpm: 1e9 + 1 } },
    flags: ['--rpm', '1000000001'],
  },
  {
    what: 'a concurrency limit over 1e9',
    path: '/limits/concurrent',
    body: { limits: { concurrent: 2e9 } },
    flags: ['--concurrent', '2000000000'],
  },
  { what: 'a bell in the name', path: '/name', body: { name: 'ring\u0007' }, flags: ['--name', 'ring\u0007'] },
  { what: 'a line break in the name', path: '/name', body: { name: 'a\nb' }, flags: ['--name', 'a\nb'] },
  {
    what: 'a name over 100 characters',
    path: '/name',
    body: { name: 'n'.repeat(101) },
    flags: ['--name', 'n'.repeat(101)],
  },
  {
    what: 'a note over 2000 characters',
    path: '/note',
    body: { note: 'x'.repeat(2001) },
    flags: ['--note', 'x'.repeat(2001)],
  },
  {
    what: 'more than 500 models',
    path: '/models',
    body: { models: many(501, (i) => `m${i}`) },
    flags: ['--models', many(501, (i) => `m${i}`).join(',')],
  },
  {
    what: 'a model id over 256 characters',
    path: '/models/0',
    body: { models: ['m'.repeat(257)] },
    flags: ['--models', 'm'.repeat(257)],
  },
  {
    what: 'a token budget over 1e12',
    path: '/budget/tokens',
    body: { budget: { tokens: 1e12 + 1 } },
    flags: ['--budget-tokens', '1000000000001'],
  },
  { what: 'a priority above 10', path: '/priority', body: { priority: 11 }, flags: ['--priority', '11'] },
];

describe('the CLI and the admin API refuse the same key inputs', () => {
  let gateway: TestGateway;
  const root = mkdtempSync(join(tmpdir(), 'gatehouse-key-parity-'));
  beforeAll(async () => {
    gateway = await startAdminGateway('http://127.0.0.1:9', { adminToken: ADMIN_TOKEN });
  });
  afterAll(async () => {
    await gateway?.close();
    rmSync(root, { recursive: true, force: true });
  });

  const cli = async (args: string[]) => {
    let stderr = '';
    const sink = (text: (s: string) => void) =>
      new Writable({ write: (chunk: Buffer, _e, done) => (text(chunk.toString()), done()) });
    const code = await runKeysCommand(
      args,
      { stdout: sink(() => {}), stderr: sink((s) => (stderr += s)) },
      { dataDir: join(root, 'cli'), databaseUrl: undefined },
    );
    return { code, stderr };
  };

  it.each(CREATE)('refuses $what', async ({ path, body, flags }) => {
    const res = await api(gateway, 'POST', '/api/keys', {
      headers: { authorization: `Bearer ${ADMIN_TOKEN}`, 'content-type': 'application/json' },
      body: { name: 'k', ...body },
    });
    expect(res.status, res.body.toString()).toBe(422);
    const error = (json(res.body) as { error: { code: string; details: Array<{ path: string }> } }).error;
    expect(error.code).toBe('validation_failed');
    expect(error.details.map((d) => d.path)).toEqual([path]);

    const created = await cli(['create', '--name', 'k', ...flags]);
    expect(created.code, created.stderr).toBe(2);
    expect(created.stderr).toMatch(/^gatehouse keys create: --/);

    const updated = await cli(['update', 'gh-any', ...flags]);
    expect(updated.code, updated.stderr).toBe(2);
    expect(updated.stderr).toMatch(/^gatehouse keys update: --/);
  });
});
