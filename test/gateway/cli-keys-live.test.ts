/**
 * The keys CLI used as an operator would: a separate process changing keys while the server
 * process runs, with no restart.
 */
import { mkdtempSync, readFileSync, readdirSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startRecordingUpstream, type RecordingUpstream } from '../fakes/recording-upstream.js';
import { rawRequest } from '../helpers/http.js';
import { runCli, spawnGateway, type GatewayProcess } from '../helpers/process.js';

let upstream: RecordingUpstream;
let gw: GatewayProcess;
const dataDir = mkdtempSync(join(tmpdir(), 'gh-cli-live-'));
const env = () => ({ GATEHOUSE_DATA_DIR: dataDir, GATEHOUSE_UPSTREAM_URL: upstream.url });

beforeAll(async () => {
  upstream = await startRecordingUpstream((_req, res) => void res.end('{}'));
  gw = await spawnGateway(env());
});
afterAll(async () => {
  gw.child.kill('SIGTERM');
  await gw.exited;
  await upstream.close();
});

const call = (key?: string) =>
  rawRequest(`${gw.url}/v1/models`, { headers: key ? { authorization: `Bearer ${key}` } : {} });

async function within(ms: number, check: () => Promise<boolean>): Promise<number> {
  const started = performance.now();
  while (performance.now() - started < ms) {
    if (await check()) return performance.now() - started;
    await new Promise((r) => setTimeout(r, 25));
  }
  throw new Error(`condition not met within ${ms} ms`);
}

describe('managing keys from the CLI while the server runs', () => {
  let secret = '';

  it('starts open on a fresh data dir with no manual step, and says so in its log', async () => {
    expect((await call()).status).toBe(200);
    expect(gw.output()).toMatch(/API is OPEN/);
  });

  it('protects the API within 1 s of `keys create`, and the printed key works', async () => {
    const created = await runCli(['keys', 'create', '--name', 'ci-bot', '--quiet'], env());
    expect(created.code).toBe(0);
    secret = created.stdout.trim();
    expect(secret).toMatch(/^sk-[0-9A-Za-z]{43}$/);
    await within(1000, async () => (await call()).status === 401);
    expect((await call(secret)).status).toBe(200);
  });

  it('never prints the secret in `keys list`, and never writes it to the database or the server log', async () => {
    const list = await runCli(['keys', 'list'], env());
    expect(list.code).toBe(0);
    expect(list.stdout).toContain('ci-bot');
    expect(list.stdout).not.toContain(secret);
    for (const file of readdirSync(dataDir, { recursive: true, withFileTypes: true })) {
      if (!file.isFile()) continue;
      expect(readFileSync(join(file.parentPath, file.name)).includes(Buffer.from(secret)), file.name).toBe(false);
    }
    expect(gw.output()).not.toContain(secret);
  });

  it('refuses the key within 1 s of `keys revoke`', async () => {
    const prefix = secret.slice(0, 9);
    const revoked = await runCli(['keys', 'revoke', prefix], env());
    expect(revoked.code).toBe(0);
    await within(1000, async () => (await call(secret)).status === 401);
  });

  it('reopens the API only after `keys delete --yes` removed the last key', async () => {
    const deleted = await runCli(['keys', 'delete', secret.slice(0, 9), '--yes'], env());
    expect(deleted.code).toBe(0);
    expect(deleted.stdout + deleted.stderr).toMatch(/open/i);
    await within(1000, async () => (await call()).status === 200);
  });
});
