/**
 * Bodies spooled to disk at once are capped in bytes (GATEHOUSE_SPOOL_MAX_BYTES) and per key
 * (GATEHOUSE_SPOOL_MAX_PER_KEY): a call over a cap gets 503 `spool_full` in its own wire format
 * with Retry-After, decided from Content-Length before its body is read, or as soon as its running
 * total would pass the cap; the calls already spooled go on untouched.
 */
import { createHash } from 'node:crypto';
import { existsSync, readdirSync } from 'node:fs';
import { request, type IncomingHttpHeaders } from 'node:http';
import { join } from 'node:path';
import { afterEach, beforeAll, afterAll, describe, expect, it, vi } from 'vitest';
import { loadSettings, SettingsError, type Settings } from '../../src/settings/index.js';
import { startRecordingUpstream, type RecordingUpstream } from '../fakes/recording-upstream.js';
import { startTestGateway, type TestGateway } from '../helpers/gateway.js';
import { json } from '../helpers/http.js';
import { ADMIN_TOKEN, createKey } from '../usage/usage-helpers.js';

const KiB = 1024;
let upstream: RecordingUpstream;
const gateways: TestGateway[] = [];

beforeAll(async () => {
  upstream = await startRecordingUpstream((_req, res, body) => {
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end(JSON.stringify({ bytes: body.length, sha256: sha256(body) }));
  });
});
afterEach(async () => {
  for (const gw of gateways.splice(0)) await gw.close();
});
afterAll(() => upstream.close());

const sha256 = (b: Buffer) => createHash('sha256').update(b).digest('hex');

async function gateway(overrides: Partial<Settings>, withStore = false): Promise<TestGateway> {
  const gw = await startTestGateway(
    upstream.url,
    { adminToken: ADMIN_TOKEN, logLevel: 'warn', ...overrides },
    {},
    { withStore },
  );
  gateways.push(gw);
  return gw;
}

/** A JSON body of about `size` bytes. */
const bodyOf = (size: number, tag = 'a') => Buffer.from(JSON.stringify({ model: 'm', prompt: tag.repeat(size) }));

interface Answer {
  status: number;
  headers: IncomingHttpHeaders;
  body: Buffer;
}

/**
 * An upload that sends `body` up to `firstPart` bytes and holds the rest until `finish()`.
 * Content-Length is declared unless `chunked`.
 */
function upload(
  gw: TestGateway,
  path: string,
  body: Buffer,
  options: { firstPart?: number; chunked?: boolean; key?: string; headers?: Record<string, string> } = {},
) {
  const req = request(`${gw.url}${path}`, {
    method: 'POST',
    agent: false,
    headers: {
      'content-type': 'application/json',
      ...(options.chunked ? { 'transfer-encoding': 'chunked' } : { 'content-length': String(body.length) }),
      ...(options.key ? { authorization: `Bearer ${options.key}` } : {}),
      ...options.headers,
    },
  });
  const answer = new Promise<Answer>((resolve, reject) => {
    req.on('response', (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body: Buffer.concat(chunks) }));
    });
    req.on('error', reject);
  });
  answer.catch(() => undefined);
  const firstPart = options.firstPart ?? body.length;
  req.write(body.subarray(0, firstPart));
  if (firstPart >= body.length) req.end();
  return {
    answer,
    finish(): Promise<Answer> {
      req.end(body.subarray(firstPart));
      return answer;
    },
  };
}

/** The spooled body files of a gateway right now. */
function spooled(gw: TestGateway): string[] {
  const spool = join(gw.dataDir, 'spool');
  if (!existsSync(spool)) return [];
  return (readdirSync(spool, { recursive: true }) as string[]).filter((p) => p.endsWith('.body'));
}

const openaiSpoolFull = {
  error: {
    message: expect.stringContaining('GATEHOUSE_SPOOL_MAX_BYTES'),
    type: 'server_error',
    param: null,
    code: 'spool_full',
  },
};

describe('GATEHOUSE_SPOOL_MAX_BYTES and GATEHOUSE_SPOOL_MAX_PER_KEY', () => {
  it('default to 1 GiB and 8 bodies per key, and take sizes and whole numbers', () => {
    const defaults = loadSettings({});
    expect(defaults.spoolMaxBytes).toBe(1024 * 1024 * 1024);
    expect(defaults.spoolMaxPerKey).toBe(8);
    const set = loadSettings({ GATEHOUSE_SPOOL_MAX_BYTES: '64MiB', GATEHOUSE_SPOOL_MAX_PER_KEY: '0' });
    expect(set.spoolMaxBytes).toBe(64 * 1024 * 1024);
    expect(set.spoolMaxPerKey).toBe(0);
    expect(() => loadSettings({ GATEHOUSE_SPOOL_MAX_BYTES: 'lots' })).toThrowError(SettingsError);
    expect(() => loadSettings({ GATEHOUSE_SPOOL_MAX_PER_KEY: '-1' })).toThrowError(SettingsError);
  });

  it('refuses a call whose declared body would pass the total, before reading it, and the spooled one goes on', async () => {
    const gw = await gateway({ spoolMaxBytes: 1024 * KiB });
    const first = bodyOf(600 * KiB, 'f');
    const held = upload(gw, '/v1/completions', first, { firstPart: 300 * KiB });
    await vi.waitFor(() => expect(spooled(gw)).toHaveLength(1));

    const refused = await upload(gw, '/v1/completions', bodyOf(600 * KiB, 's')).answer;
    expect(refused.status).toBe(503);
    expect(refused.headers['retry-after']).toMatch(/^\d+$/);
    expect(json(refused.body)).toEqual(openaiSpoolFull);
    expect(spooled(gw)).toHaveLength(1);

    const done = await held.finish();
    expect(done.status).toBe(200);
    expect(json(done.body)).toEqual({ bytes: first.length, sha256: sha256(first) });
    expect(upstream.received.filter((r) => r.bodySha256 === sha256(first))).toHaveLength(1);
    expect(spooled(gw)).toEqual([]);
  });

  it('answers an Anthropic call over the total in the Anthropic shape, with Retry-After', async () => {
    const gw = await gateway({ spoolMaxBytes: 1024 * KiB });
    const held = upload(gw, '/v1/messages', bodyOf(600 * KiB), { firstPart: 300 * KiB });
    await vi.waitFor(() => expect(spooled(gw)).toHaveLength(1));
    const refused = await upload(gw, '/v1/messages', bodyOf(600 * KiB)).answer;
    expect(refused.status).toBe(503);
    expect(refused.headers['retry-after']).toMatch(/^\d+$/);
    expect(json(refused.body)).toEqual({
      type: 'error',
      error: { type: 'overloaded_error', message: expect.stringContaining('GATEHOUSE_SPOOL_MAX_BYTES') },
    });
    expect((await held.finish()).status).toBe(200);
  });

  it('cuts a chunked body off as soon as its running total would pass the total, keeping the other', async () => {
    const gw = await gateway({ spoolMaxBytes: 1024 * KiB });
    const first = bodyOf(600 * KiB, 'f');
    const held = upload(gw, '/v1/completions', first, { firstPart: 300 * KiB, chunked: true });
    await vi.waitFor(() => expect(spooled(gw)).toHaveLength(1));

    const growing = upload(gw, '/v1/completions', bodyOf(900 * KiB, 'g'), { firstPart: 300 * KiB, chunked: true });
    await vi.waitFor(() => expect(spooled(gw)).toHaveLength(2));
    const refused = await growing.finish();
    expect(refused.status).toBe(503);
    expect(json(refused.body)).toEqual(openaiSpoolFull);
    expect(spooled(gw)).toHaveLength(1);

    const done = await held.finish();
    expect(json(done.body)).toEqual({ bytes: first.length, sha256: sha256(first) });
    expect(upstream.received.some((r) => r.bodyBytes > 800 * KiB)).toBe(false);
  });

  it('answers 413 at once for a declared body larger than the whole spool could ever hold', async () => {
    const gw = await gateway({ spoolMaxBytes: 512 * KiB });
    const refused = await upload(gw, '/v1/completions', bodyOf(600 * KiB)).answer;
    expect(refused.status).toBe(413);
    expect(json(refused.body)).toMatchObject({
      error: { code: 'body_too_large', message: expect.stringContaining('GATEHOUSE_SPOOL_MAX_BYTES') },
    });
  });

  it("gives each key its own count: a key over its share is refused while another key's call is spooled", async () => {
    const gw = await gateway({ spoolMaxPerKey: 1 }, true);
    const greedy = (await createKey(gw, { name: 'greedy' })).secret;
    const other = (await createKey(gw, { name: 'other' })).secret;
    const first = bodyOf(400 * KiB, 'f');
    const held = upload(gw, '/v1/completions', first, { firstPart: 300 * KiB, key: greedy });
    await vi.waitFor(() => expect(spooled(gw)).toHaveLength(1));

    const refused = await upload(gw, '/v1/completions', bodyOf(400 * KiB), { key: greedy }).answer;
    expect(refused.status).toBe(503);
    expect(refused.headers['retry-after']).toMatch(/^\d+$/);
    expect(json(refused.body)).toMatchObject({
      error: { code: 'spool_full', message: expect.stringContaining('GATEHOUSE_SPOOL_MAX_PER_KEY') },
    });

    const admitted = await upload(gw, '/v1/completions', bodyOf(400 * KiB, 'o'), { key: other }).answer;
    expect(admitted.status).toBe(200);

    const done = await held.finish();
    expect(json(done.body)).toEqual({ bytes: first.length, sha256: sha256(first) });
    // Its share is back once its call ended.
    expect((await upload(gw, '/v1/completions', bodyOf(400 * KiB), { key: greedy }).answer).status).toBe(200);
  });
});
