import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { PassThrough, Writable } from 'node:stream';
import { afterAll, beforeEach, describe, expect, it } from 'vitest';
import { hashApiKey } from '../../src/auth/api-keys.js';
import { runKeysCommand, type KeysCliIo } from '../../src/cli/keys.js';
import { openSqliteStore } from '../../src/store/sqlite.js';
import { keyRecord, waitFor } from '../store/store-contract.js';

const root = mkdtempSync(join(tmpdir(), 'gatehouse-keys-cli-'));
afterAll(() => rmSync(root, { recursive: true, force: true }));

let n = 0;
let dataDir: string;
beforeEach(() => {
  dataDir = join(root, `t${n++}`);
});

interface Run {
  code: number;
  stdout: string;
  stderr: string;
}

function collector(): { stream: Writable; text: () => string } {
  let text = '';
  return {
    stream: new Writable({ write: (chunk: Buffer, _e, done) => ((text += chunk.toString()), done()) }),
    text: () => text,
  };
}

/** Runs `gatehouse keys <args>`; `answer` is typed at the confirmation prompt on a TTY. */
async function keys(args: string[], options: { tty?: boolean; answer?: string } = {}): Promise<Run> {
  const out = collector();
  const err = collector();
  const io: KeysCliIo = { stdout: out.stream, stderr: err.stream, isTTY: options.tty ?? false };
  if (options.answer !== undefined) {
    const stdin = new PassThrough();
    stdin.end(options.answer);
    io.stdin = stdin;
  }
  const code = await runKeysCommand(args, io, { dataDir, databaseUrl: undefined });
  return { code, stdout: out.text(), stderr: err.text() };
}

async function createQuiet(...extra: string[]): Promise<string> {
  const run = await keys(['create', '--name', 'k', '--quiet', ...extra]);
  expect(run.code).toBe(0);
  return run.stdout.trim();
}

async function storedKeys() {
  const store = await openSqliteStore({ dataDir });
  try {
    return await store.keys.list();
  } finally {
    await store.close();
  }
}

describe('gatehouse keys create', () => {
  it('prints the new key once with a warning to store it now', async () => {
    const run = await keys([
      'create',
      '--name',
      'laptop',
      '--models',
      'qwen, llama ,',
      '--note',
      'for me',
      '--rpm',
      '60',
      '--concurrent',
      '2',
    ]);
    expect(run.code).toBe(0);
    expect(run.stderr).toBe('');
    const secrets = run.stdout.match(/sk-[0-9A-Za-z]{43}/g);
    expect(secrets).toHaveLength(1);
    expect(run.stdout).toContain('Store it now: it will not be shown again.');
    const [stored] = await storedKeys();
    expect(stored).toMatchObject({
      name: 'laptop',
      models: ['qwen', 'llama'],
      note: 'for me',
      limits: { rpm: 60, tpm: null, concurrent: 2 },
      expiresAt: null,
    });
    expect(stored!.hash).toBe(hashApiKey(secrets![0]));
    expect(run.stdout).toBe(
      [
        `Created API key ${stored!.id} "laptop"`,
        `  prefix   ${stored!.prefix}`,
        '  models   qwen,llama',
        '  expires  never',
        '  limits   rpm 60, concurrent 2',
        '',
        `  ${secrets![0]}`,
        '',
        'Store it now: it will not be shown again.',
        '',
      ].join('\n'),
    );
  });

  it('stores --priority for the admission queue and refuses one outside -10..10', async () => {
    const run = await keys(['create', '--name', 'ci-agent', '--priority=-3']);
    expect(run.code).toBe(0);
    expect(run.stdout).toContain('priority -3');
    expect((await storedKeys()).find((k) => k.name === 'ci-agent')?.priority).toBe(-3);
    const refused = await keys(['create', '--name', 'too-eager', '--priority', '11']);
    expect(refused.code).toBe(2);
    expect(refused.stderr).toContain('--priority');
    expect((await storedKeys()).some((k) => k.name === 'too-eager')).toBe(false);
  });

  it('gives a key the manage scope with --manage, and none without it', async () => {
    const run = await keys(['create', '--name', 'open-webui', '--manage']);
    expect(run.code).toBe(0);
    expect((await keys(['create', '--name', 'ci-agent'])).code).toBe(0);
    expect(run.stdout).toContain('manage   may list, load and unload models');
    const stored = await storedKeys();
    expect(stored.find((k) => k.name === 'open-webui')?.manage).toBe(true);
    expect(stored.find((k) => k.name === 'ci-agent')?.manage).toBe(false);
  });

  it('prints only the key and a newline with --quiet', async () => {
    const run = await keys(['create', '--name', 'ci', '--quiet']);
    expect(run.code).toBe(0);
    expect(run.stdout).toMatch(/^sk-[0-9A-Za-z]{43}\n$/);
    expect(run.stderr).toBe('');
  });

  it('takes --expires as a duration from now or as an ISO date', async () => {
    const before = Date.now();
    await createQuiet('--expires', '30d');
    await createQuiet('--expires', '2099-12-31');
    // Created within the same millisecond perhaps: tell them apart by content, not order.
    const stored = await storedKeys();
    const byDate = stored.find((k) => k.expiresAt === Date.UTC(2099, 11, 31));
    const byDuration = stored.find((k) => k !== byDate);
    expect(byDuration!.expiresAt! - before).toBeGreaterThanOrEqual(30 * 86_400_000);
    expect(byDuration!.expiresAt! - Date.now()).toBeLessThanOrEqual(30 * 86_400_000);
    expect(byDate!.expiresAt).toBe(Date.UTC(2099, 11, 31));
  });

  it('refuses bad arguments with exit code 2 and creates nothing, not even the data dir', async () => {
    for (const args of [
      ['create'],
      ['create', '--name', ''],
      ['create', '--name', 'x', '--expires', 'soon'],
      ['create', '--name', 'x', '--expires', '2000-01-01'],
      ['create', '--name', 'x', '--rpm', '0'],
      ['create', '--name', 'x', '--rpm', '1.5'],
      ['create', '--name', 'x', '--colour', 'red'],
      ['create', '--name', 'x', 'extra'],
    ]) {
      const run = await keys(args);
      expect(run.code, args.join(' ')).toBe(2);
      expect(run.stdout, args.join(' ')).toBe('');
      expect(run.stderr, args.join(' ')).toMatch(
        /^gatehouse keys create: .+\nRun "gatehouse keys --help" for usage\.\n$/,
      );
    }
    expect(existsSync(dataDir)).toBe(false);
  });
});

describe('gatehouse keys budgets', () => {
  it('creates a key with a budget, prints it, and refuses a bad amount or period with exit code 2', async () => {
    const run = await keys(['create', '--name', 'kids', '--budget-tokens', '200000', '--budget-period', 'day']);
    expect(run.code).toBe(0);
    expect(run.stdout).toContain('  budget   tokens 200000 per day\n');
    expect((await storedKeys())[0]!.budget).toEqual({
      tokens: 200000,
      requests: null,
      gpuSeconds: null,
      period: 'day',
    });
    for (const bad of [
      ['--budget-tokens', '0'],
      ['--budget-gpu-seconds', '1.5'],
      ['--budget-period', 'year'],
    ]) {
      const refused = await keys(['create', '--name', 'x', ...bad]);
      expect(refused.code, bad.join(' ')).toBe(2);
    }
    expect(await storedKeys()).toHaveLength(1);
  });

  it('updates a key found by id or by name: budget amounts, none to clear one, and the period', async () => {
    await keys(['create', '--name', 'ci-agent', '--budget-requests', '50', '--budget-period', 'week']);
    const [created] = await storedKeys();
    const byName = await keys([
      'update',
      'ci-agent',
      '--budget-gpu-seconds',
      '7200',
      '--budget-requests',
      'none',
      '--budget-period',
      'month',
    ]);
    expect(byName.code, byName.stderr).toBe(0);
    expect(byName.stdout).toContain(`Updated ${created!.id}`);
    expect(byName.stdout).toContain('  budget   gpu-seconds 7200 per month\n');
    const byId = await keys(['update', created!.id, '--name', 'ci', '--rpm', '30', '--budget-tokens', '1000000']);
    expect(byId.code, byId.stderr).toBe(0);
    const [updated] = await storedKeys();
    expect(updated).toMatchObject({
      name: 'ci',
      limits: { rpm: 30, tpm: null, concurrent: null },
      budget: { tokens: 1_000_000, requests: null, gpuSeconds: 7200, period: 'month' },
      // The operator is an admin: what they set binds a member owning the key.
      ceilings: { rpm: 30, tpm: null, concurrent: null, expiresAt: null },
    });
    expect((await keys(['update', 'ci'])).code).toBe(2);
    expect((await keys(['update', 'nobody', '--budget-tokens', '5'])).code).toBe(1);
  });
});

describe('gatehouse keys list', () => {
  it('says the API is open when there are no keys', async () => {
    const run = await keys(['list']);
    expect(run.code).toBe(0);
    expect(run.stdout).toContain('No API keys: the API is open');
  });

  it('shows a table of keys and never a secret or hash', async () => {
    const a = await createQuiet('--models', 'qwen');
    const b = await createQuiet('--expires', '2099-01-01T00:00Z');
    const stored = await storedKeys();
    const ka = stored.find((k) => k.models.includes('qwen'));
    const kb = stored.find((k) => k !== ka);
    expect((await keys(['revoke', ka!.id])).code).toBe(0);
    const run = await keys(['list']);
    expect(run.code).toBe(0);
    const [header, ...rows] = run.stdout.trimEnd().split('\n');
    expect(header).toMatch(/^ID\s+PREFIX\s+NAME\s+STATUS\s+CREATED\s+LAST USED\s+EXPIRES\s+MODELS$/);
    expect(rows).toHaveLength(2);
    const rowOf = (id: string) => rows.find((row) => row.startsWith(`${id} `));
    expect(rowOf(ka!.id)).toMatch(
      new RegExp(
        `^${ka!.id}\\s+${ka!.prefix}\\s+k\\s+revoked\\s+\\d{4}-\\d\\d-\\d\\d \\d\\d:\\d\\dZ\\s+never\\s+never\\s+qwen$`,
      ),
    );
    expect(rowOf(kb!.id)).toMatch(
      new RegExp(`^${kb!.id}\\s+${kb!.prefix}\\s+k\\s+active\\s+.+\\s+never\\s+2099-01-01 00:00Z\\s+all$`),
    );
    for (const secret of [a, b]) {
      expect(run.stdout).not.toContain(secret);
      expect(run.stdout).not.toContain(secret.slice(9));
      expect(run.stdout).not.toContain(hashApiKey(secret));
    }
  });

  it('prints the same records as the admin API with --json, without secrets', async () => {
    const secret = await createQuiet();
    const run = await keys(['list', '--json']);
    expect(run.code).toBe(0);
    const { keys: listed } = JSON.parse(run.stdout) as { keys: Array<Record<string, unknown>> };
    expect(listed).toHaveLength(1);
    expect(Object.keys(listed[0]!).sort()).toEqual([
      'budget',
      'createdAt',
      'expiresAt',
      'id',
      'lastUsedAt',
      'limits',
      'manage',
      'models',
      'name',
      'note',
      'ownerId',
      'ownerName',
      'prefix',
      'priority',
      'revokedAt',
      'status',
    ]);
    expect(run.stdout).not.toContain(secret);
    expect(run.stdout).not.toContain(hashApiKey(secret));
  });
});

describe('gatehouse keys revoke', () => {
  it('revokes by id or by display prefix', async () => {
    await createQuiet();
    await createQuiet();
    const [a, b] = await storedKeys();
    const byId = await keys(['revoke', a!.id]);
    expect(byId).toMatchObject({
      code: 0,
      stdout: `Revoked ${a!.id} (${a!.prefix}, "k"). Clients using it are refused from now on.\n`,
    });
    const byPrefix = await keys(['revoke', b!.prefix]);
    expect(byPrefix.code).toBe(0);
    expect((await storedKeys()).every((k) => k.revokedAt !== null)).toBe(true);
    const again = await keys(['revoke', a!.id]);
    expect(again.code).toBe(0);
    expect(again.stdout).toContain('was already revoked');
  });

  it('finds a key from the whole secret, e.g. one found in a log', async () => {
    const secret = await createQuiet();
    await createQuiet();
    const run = await keys(['revoke', secret]);
    expect(run.code).toBe(0);
    expect(run.stdout).not.toContain(secret);
    const revoked = (await storedKeys()).filter((k) => k.revokedAt !== null);
    expect(revoked.map((k) => k.hash)).toEqual([hashApiKey(secret)]);
  });

  it('fails with exit code 1 for an unknown or ambiguous reference', async () => {
    await createQuiet();
    await createQuiet();
    const unknown = await keys(['revoke', 'key_nope']);
    expect(unknown.code).toBe(1);
    expect(unknown.stderr).toBe('No API key matches "key_nope". "gatehouse keys list" shows ids and prefixes.\n');
    const ambiguous = await keys(['revoke', 'key_']);
    expect(ambiguous.code).toBe(1);
    const both = await keys(['revoke', 'sk-']);
    expect(both.code).toBe(1);
    expect((await storedKeys()).every((k) => k.revokedAt === null)).toBe(true);
  });

  it('explains an ambiguous prefix by listing the matches', async () => {
    const store = await openSqliteStore({ dataDir });
    try {
      await store.keys.create(keyRecord({ name: 'one' }, { prefix: 'sk-AbCde1' }));
      await store.keys.create(keyRecord({ name: 'two' }, { prefix: 'sk-AbCde2' }));
    } finally {
      await store.close();
    }
    const run = await keys(['revoke', 'sk-AbC']);
    expect(run.code).toBe(1);
    expect(run.stderr).toMatch(
      /^"sk-AbC" matches 2 keys \(key_\w+ sk-AbCde1 "one", key_\w+ sk-AbCde2 "two"\); use the full id\n$/,
    );
    expect((await storedKeys()).every((k) => k.revokedAt === null)).toBe(true);
  });

  it('requires exactly one reference', async () => {
    expect((await keys(['revoke'])).code).toBe(2);
    expect((await keys(['revoke', 'a', 'b'])).code).toBe(2);
  });
});

describe('gatehouse keys delete', () => {
  it('refuses without --yes when not on a terminal', async () => {
    await createQuiet();
    await createQuiet();
    const [a] = await storedKeys();
    const run = await keys(['delete', a!.id]);
    expect(run.code).toBe(1);
    expect(run.stderr).toContain('not on a terminal');
    expect(run.stderr).toContain('--yes');
    expect(await storedKeys()).toHaveLength(2);
  });

  it('deletes with --yes', async () => {
    await createQuiet();
    await createQuiet();
    const [a] = await storedKeys();
    const run = await keys(['delete', a!.prefix, '--yes']);
    expect(run).toEqual({ code: 0, stdout: `Deleted ${a!.id} (${a!.prefix}, "k"). 1 key remains.\n`, stderr: '' });
    expect(await storedKeys()).toHaveLength(1);
  });

  it('asks on a terminal and deletes only after yes', async () => {
    await createQuiet();
    await createQuiet();
    const [a] = await storedKeys();
    const no = await keys(['delete', a!.id], { tty: true, answer: 'n\n' });
    expect(no.code).toBe(1);
    expect(no.stdout).toContain(`Delete ${a!.id}`);
    expect(no.stdout).toContain('[y/N]');
    expect(await storedKeys()).toHaveLength(2);
    const eof = await keys(['delete', a!.id], { tty: true, answer: '' });
    expect(eof.code).toBe(1);
    expect(await storedKeys()).toHaveLength(2);
    const yes = await keys(['delete', a!.id], { tty: true, answer: 'y\n' });
    expect(yes.code).toBe(0);
    expect(await storedKeys()).toHaveLength(1);
  });

  it('warns that deleting the last key opens the API, before and after', async () => {
    await createQuiet();
    const [only] = await storedKeys();
    const asked = await keys(['delete', only!.id], { tty: true, answer: 'no\n' });
    expect(asked.stderr).toContain('is the last API key');
    expect(asked.stderr).toContain('the API is OPEN');
    expect(asked.stdout).toContain('and open the API? [y/N]');
    const run = await keys(['delete', only!.id, '--yes']);
    expect(run.code).toBe(0);
    expect(run.stderr).toContain('is the last API key');
    expect(run.stderr).toContain('the API is now open');
    expect(await storedKeys()).toHaveLength(0);
  });
});

describe('gatehouse keys (general)', () => {
  it('prints help with --help and exits 0', async () => {
    for (const args of [['--help'], ['help'], ['create', '--help']]) {
      const run = await keys(args);
      expect(run.code).toBe(0);
      expect(run.stdout).toContain('Usage: gatehouse keys <command>');
    }
  });

  it('exits 2 with usage for a missing or unknown command', async () => {
    const none = await keys([]);
    expect(none.code).toBe(2);
    expect(none.stderr).toContain('Usage: gatehouse keys');
    const unknown = await keys(['rotate']);
    expect(unknown.code).toBe(2);
    expect(unknown.stderr).toContain('unknown command "rotate"');
  });

  it("reaches a running server's key index within a second", async () => {
    const server = await openSqliteStore({ dataDir });
    try {
      let changes = 0;
      const stop = server.watchKeys(() => changes++);
      const secret = await createQuiet();
      await waitFor(() => changes > 0, 1000, 'the server store to notice the CLI');
      stop();
      expect((await server.keys.list()).map((k) => k.hash)).toEqual([hashApiKey(secret)]);
    } finally {
      await server.close();
    }
  });
});
