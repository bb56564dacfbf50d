/**
 * Two `gatehouse serve` processes on one data directory. With SQLite the second refuses to start,
 * naming the directory and the first process, and the first's spooled upload is untouched. With
 * PostgreSQL both run, each spooling into its own directory; a later start removes only the
 * directories of processes that have ended.
 *
 * Needs PostgreSQL (see test/helpers/postgres.ts): fails, never skips, without it.
 */
import { createHash } from 'node:crypto';
import { existsSync, mkdtempSync, readdirSync } from 'node:fs';
import { request, type IncomingMessage } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { startRecordingUpstream, type RecordingUpstream } from '../fakes/recording-upstream.js';
import { requirePostgres, TEST_DATABASE_URL, TestSchemas } from '../helpers/postgres.js';
import { spawnGateway, type GatewayProcess } from '../helpers/process.js';

const schemas = new TestSchemas();
let upstream: RecordingUpstream;
const running: GatewayProcess[] = [];

beforeAll(async () => {
  upstream = await startRecordingUpstream((_req, res) => void res.end('{}'));
});
afterEach(async () => {
  for (const gw of running.splice(0)) {
    gw.child.kill('SIGKILL');
    await gw.exited;
  }
});
afterAll(async () => {
  await upstream.close();
  await schemas.dropAll();
});

/** A body larger than the in-memory limit (256 KiB), so it is spooled to disk. */
const BODY = Buffer.from(JSON.stringify({ model: 'm', prompt: 'x'.repeat(600 * 1024) }));
const FIRST_PART = 400 * 1024;

/** Sends the first part of a spooled upload; `finish()` sends the rest and resolves with the answer. */
function startUpload(url: string): { finish(): Promise<{ status: number; body: string }> } {
  const req = request(`${url}/v1/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'content-length': BODY.length },
    agent: false,
  });
  const answered = new Promise<{ status: number; body: string }>((resolve, reject) => {
    req.on('response', (res: IncomingMessage) => {
      let body = '';
      res.on('data', (c: Buffer) => (body += c.toString()));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
    });
    req.on('error', reject);
  });
  // A process killed under it resets the upload: that is the answer `finish()` gives, not a crash.
  answered.catch(() => undefined);
  req.write(BODY.subarray(0, FIRST_PART));
  return {
    finish() {
      req.end(BODY.subarray(FIRST_PART));
      return answered;
    },
  };
}

/** The spool files under `dataDir/spool`, as paths relative to it. */
function spoolFiles(dataDir: string): string[] {
  const spool = join(dataDir, 'spool');
  if (!existsSync(spool)) return [];
  return (readdirSync(spool, { recursive: true }) as string[]).filter((p) => p.endsWith('.body'));
}

const sha256 = (b: Buffer) => createHash('sha256').update(b).digest('hex');

describe('two gatehouse serve processes on one data directory', () => {
  it('with SQLite, the second refuses to start, naming the directory and the first process', async () => {
    const dataDir = mkdtempSync(join(tmpdir(), 'gh-lock-'));
    const env = { GATEHOUSE_UPSTREAM_URL: upstream.url, GATEHOUSE_DATA_DIR: dataDir };
    const first = await spawnGateway(env);
    running.push(first);
    const upload = startUpload(first.url);
    await vi.waitFor(() => expect(spoolFiles(dataDir)).toHaveLength(1));

    const second = await spawnGateway(env).then(
      () => new Error('a second server started on the same SQLite data directory'),
      (error: unknown) => error as Error,
    );
    expect(second.message).toMatch(/exited with 1 before starting/);
    expect(second.message).toContain(dataDir);
    expect(second.message).toContain(`pid ${first.child.pid}`);
    expect(spoolFiles(dataDir)).toHaveLength(1);

    const answer = await upload.finish();
    expect(answer).toEqual({ status: 200, body: '{}' });
    const received = upstream.received.at(-1)!;
    expect(received.bodyBytes).toBe(BODY.length);
    expect(received.bodySha256).toBe(sha256(BODY));
  }, 60_000);

  it('with SQLite, a start after the first process was killed takes the directory over', async () => {
    const dataDir = mkdtempSync(join(tmpdir(), 'gh-lock-'));
    const env = { GATEHOUSE_UPSTREAM_URL: upstream.url, GATEHOUSE_DATA_DIR: dataDir };
    const first = await spawnGateway(env);
    first.child.kill('SIGKILL');
    await first.exited;
    const again = await spawnGateway(env);
    running.push(again);
    expect(again.output()).toContain('Gatehouse listening');
  }, 60_000);

  it('with PostgreSQL, each spools into its own directory, and a later start removes only a dead one', async () => {
    await requirePostgres();
    const dataDir = mkdtempSync(join(tmpdir(), 'gh-lock-pg-'));
    const env = {
      GATEHOUSE_UPSTREAM_URL: upstream.url,
      GATEHOUSE_DATA_DIR: dataDir,
      GATEHOUSE_DATABASE_URL: TEST_DATABASE_URL,
      GATEHOUSE_DATABASE_SCHEMA: schemas.fresh('spool'),
    };
    const first = await spawnGateway(env);
    running.push(first);
    const upload = startUpload(first.url);
    await vi.waitFor(() => expect(spoolFiles(dataDir)).toHaveLength(1));
    const firstDir = spoolFiles(dataDir)[0]!.split('/')[0]!;

    const second = await spawnGateway(env);
    running.push(second);
    expect(spoolFiles(dataDir)).toHaveLength(1);
    const answer = await upload.finish();
    expect(answer).toEqual({ status: 200, body: '{}' });
    expect(upstream.received.at(-1)!.bodySha256).toBe(sha256(BODY));

    const dirs = readdirSync(join(dataDir, 'spool'));
    expect(dirs).toHaveLength(2);
    expect(dirs).toContain(firstDir);
    const secondDir = dirs.find((d) => d !== firstDir)!;

    first.child.kill('SIGKILL');
    await first.exited;
    const third = await spawnGateway(env);
    running.push(third);
    const after = readdirSync(join(dataDir, 'spool'));
    expect(after).not.toContain(firstDir);
    expect(after).toContain(secondDir);
    expect(after).toHaveLength(2);
  }, 120_000);
});
