/**
 * Per-key limits shared by two real `gatehouse serve` processes on one PostgreSQL schema and
 * one Redis (`GATEHOUSE_REDIS_URL`, a private `redis-server` this test kills and restarts, with
 * a password that must never reach a log): calls spread over both replicas get a key's limit
 * once, not twice; when Redis goes away both keep serving with per-replica limits and say so
 * once; when it is back, limits are shared again.
 *
 * Needs PostgreSQL (test/helpers/postgres.ts) and redis-server (test/helpers/redis.ts): fails,
 * never skips, without them.
 */
import { randomBytes } from 'node:crypto';
import { mkdtempSync } from 'node:fs';
import type { ServerResponse } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { startRecordingUpstream, type RecordingUpstream } from '../fakes/recording-upstream.js';
import { json, rawRequest, type RawResponse } from '../helpers/http.js';
import { requirePostgres, TestSchemas, urlWithPassword } from '../helpers/postgres.js';
import { spawnGateway, type GatewayProcess } from '../helpers/process.js';
import { startTestRedis, type TestRedis } from '../helpers/redis.js';
import { DEFAULT_OUTPUT_TOKENS, PROMPT_BYTES_PER_TOKEN } from '../../src/limits/token-reservation.js';

const ADMIN_TOKEN = 'shared-limits-admin-token-0123456789';
const DB_PASSWORD = 'db-password-never-logged-41d0';
const REDIS_PASSWORD = 'redis-password-never-logged-9e2c';
const PREFIX = `gh-t${process.pid}-${randomBytes(3).toString('hex')}:`;
/** Tokens the upstream reports per call (10 in, 5 out). */
const TOKENS_PER_CALL = 15;
/** What `chat()` reserves of a TPM window while it runs: body bytes / 4 + the default output. */
const CHAT_ESTIMATE =
  Math.ceil(
    Buffer.byteLength(JSON.stringify({ model: 'm', messages: [{ role: 'user', content: 'hello' }] })) /
      PROMPT_BYTES_PER_TOKEN,
  ) + DEFAULT_OUTPUT_TOKENS;
/** Room for one finished call beside a running one's estimate, not for two. */
const TOKENS_TPM = TOKENS_PER_CALL + CHAT_ESTIMATE;

const schemas = new TestSchemas();
const schema = schemas.fresh('limits');
let upstream: RecordingUpstream;
let redis: TestRedis;
let inspect: Redis;
let a: GatewayProcess;
let b: GatewayProcess;
/** Responses the upstream holds open (calls whose prompt says "hold"), until `releaseHeld`. */
const held: ServerResponse[] = [];

const CHAT_ANSWER = JSON.stringify({
  id: 'c1',
  object: 'chat.completion',
  model: 'm',
  choices: [{ index: 0, message: { role: 'assistant', content: 'hi' }, finish_reason: 'stop' }],
  usage: { prompt_tokens: 10, completion_tokens: 5, total_tokens: 15 },
});
const MESSAGE_ANSWER = JSON.stringify({
  id: 'm1',
  type: 'message',
  role: 'assistant',
  model: 'm',
  content: [{ type: 'text', text: 'hi' }],
  stop_reason: 'end_turn',
  usage: { input_tokens: 10, output_tokens: 5 },
});

function env(): Record<string, string> {
  return {
    GATEHOUSE_DATA_DIR: mkdtempSync(join(tmpdir(), 'gh-shared-limits-')),
    GATEHOUSE_UPSTREAM_URL: upstream.url,
    GATEHOUSE_DATABASE_URL: urlWithPassword(DB_PASSWORD),
    GATEHOUSE_DATABASE_SCHEMA: schema,
    GATEHOUSE_ADMIN_TOKEN: ADMIN_TOKEN,
    GATEHOUSE_REDIS_URL: redis.url,
    GATEHOUSE_REDIS_PREFIX: PREFIX,
  };
}

interface Key {
  id: string;
  secret: string;
}
/** Keys by name, made on A before B starts, so both replicas know them from their first call. */
const keys = new Map<string, Key>();
const KEY_LIMITS: Record<string, { rpm?: number; tpm?: number; concurrent?: number }> = {
  alternating: { rpm: 4 },
  burst: { rpm: 5 },
  tokens: { tpm: TOKENS_TPM },
  slots: { concurrent: 1 },
  outage: { rpm: 2 },
  'after-restart': { rpm: 3 },
};
const key = (name: string): Key => keys.get(name) ?? expect.fail(`no key ${name}`);

beforeAll(async () => {
  await requirePostgres();
  redis = await startTestRedis({ password: REDIS_PASSWORD });
  inspect = new Redis(redis.url, { lazyConnect: true, maxRetriesPerRequest: 1 });
  inspect.on('error', () => {});
  upstream = await startRecordingUpstream((req, res, body) => {
    res.setHeader('content-type', 'application/json');
    if (req.url === '/v1/messages') return void res.end(MESSAGE_ANSWER);
    if (req.url === '/v1/chat/completions') {
      if (body.includes('"hold"')) return void held.push(res);
      return void res.end(CHAT_ANSWER);
    }
    res.end('{"object":"list","data":[]}');
  });
  a = await spawnGateway(env());
  for (const [name, limits] of Object.entries(KEY_LIMITS)) {
    const created = await admin(a, 'POST', '/api/keys', { name, limits });
    expect(created.status, created.body.toString()).toBe(201);
    const parsed = json(created.body) as { key: { id: string }; secret: string };
    keys.set(name, { id: parsed.key.id, secret: parsed.secret });
  }
  b = await spawnGateway(env());
});

afterAll(async () => {
  for (const res of held.splice(0)) res.end(CHAT_ANSWER);
  for (const gw of [a, b]) {
    if (!gw) continue;
    gw.child.kill('SIGTERM');
    await gw.exited;
  }
  inspect?.disconnect();
  await upstream?.close();
  await redis?.stop();
  await schemas.dropAll();
});

beforeEach(requirePostgres);

function admin(gw: GatewayProcess, method: string, path: string, body?: unknown): Promise<RawResponse> {
  const headers: Record<string, string> = { authorization: `Bearer ${ADMIN_TOKEN}` };
  if (body !== undefined) headers['content-type'] = 'application/json';
  return rawRequest(`${gw.url}${path}`, {
    method,
    headers,
    body: body === undefined ? undefined : JSON.stringify(body),
  });
}

function chat(gw: GatewayProcess, k: Key, content = 'hello'): Promise<RawResponse> {
  return rawRequest(`${gw.url}/v1/chat/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: `Bearer ${k.secret}` },
    body: JSON.stringify({ model: 'm', messages: [{ role: 'user', content }] }),
  });
}

function message(gw: GatewayProcess, k: Key): Promise<RawResponse> {
  return rawRequest(`${gw.url}/v1/messages`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'x-api-key': k.secret, 'anthropic-version': '2023-06-01' },
    body: JSON.stringify({ model: 'm', max_tokens: 10, messages: [{ role: 'user', content: 'hello' }] }),
  });
}

async function limitsView(
  gw: GatewayProcess,
): Promise<{ limitsScope: string; redis: string; unavailableSince: string | null }> {
  const res = await admin(gw, 'GET', '/api/limits');
  expect(res.status, res.body.toString()).toBe(200);
  return json(res.body) as { limitsScope: string; redis: string; unavailableSince: string | null };
}

/** Log lines of one replica, parsed. */
function logLines(gw: GatewayProcess): Array<{ level: number; msg: string } & Record<string, unknown>> {
  return gw
    .output()
    .split('\n')
    .filter((l) => l.startsWith('{'))
    .map((l) => JSON.parse(l) as { level: number; msg: string });
}

async function within(ms: number, what: string, check: () => Promise<boolean>): Promise<void> {
  const deadline = performance.now() + ms;
  while (!(await check())) {
    if (performance.now() > deadline) throw new Error(`${what}: not within ${ms} ms`);
    await new Promise((r) => setTimeout(r, 25));
  }
}

/** Tokens Redis holds in the key's TPM window. */
async function tokensInRedis(k: Key): Promise<number> {
  const buckets = await inspect.hgetall(`${PREFIX}limits:{${k.id}}:tpm`);
  return Object.values(buckets).reduce((sum, n) => sum + Number(n), 0);
}

describe('two replicas sharing limits through Redis', () => {
  it('both start with shared limits, say so in the log and in GET /api/limits, without the Redis password', async () => {
    for (const gw of [a, b]) {
      expect(await limitsView(gw)).toEqual({ limitsScope: 'shared', redis: 'connected', unavailableSince: null });
      const line = logLines(gw).find((l) => l.limits === 'shared');
      expect(line?.msg, gw.output()).toBe(
        `Limits: per-key limits are shared by every replica through Redis at redis://127.0.0.1:${redis.port}/0 (key prefix ${PREFIX}).`,
      );
      expect(gw.output()).not.toContain(REDIS_PASSWORD);
    }
  });

  it("lets exactly N calls of an rpm=N key through, spread over both, and refuses the N+1st on either in its caller's wire format", async () => {
    const k = key('alternating');
    for (const gw of [a, b, a, b]) expect((await chat(gw, k)).status).toBe(200);

    const openai = await chat(a, k);
    expect(openai.status).toBe(429);
    expect(json(openai.body)).toEqual({
      error: {
        message: expect.stringMatching(
          /^Rate limit exceeded: this API key allows 4 requests per minute\. Retry after \d+ s\.$/,
        ),
        type: 'rate_limit_error',
        param: null,
        code: 'rate_limited',
      },
    });
    expect(Number(openai.headers['retry-after'])).toBeGreaterThanOrEqual(55);
    expect(Number(openai.headers['retry-after'])).toBeLessThanOrEqual(60);

    const anthropic = await message(b, k);
    expect(anthropic.status).toBe(429);
    expect(json(anthropic.body)).toEqual({
      type: 'error',
      error: { type: 'rate_limit_error', message: expect.stringContaining('4 requests per minute') },
    });
    expect(Number(anthropic.headers['retry-after'])).toBeGreaterThanOrEqual(55);
  });

  it('lets exactly N of 3N simultaneous calls through, whichever replica they reach', async () => {
    const k = key('burst');
    const before = upstream.received.length;
    const results = await Promise.all(Array.from({ length: 15 }, (_, i) => chat(i % 2 ? a : b, k)));
    expect(results.map((r) => r.status).sort()).toEqual([...Array(5).fill(200), ...Array(10).fill(429)]);
    // Refused calls never reached the upstream (the replicas' own model-list reads may come meanwhile).
    const calls = upstream.received.slice(before).filter((r) => r.url === '/v1/chat/completions');
    expect(calls).toHaveLength(5);
  });

  it('counts the tokens of a call finished on one replica against the TPM limit on the other', async () => {
    const k = key('tokens'); // each call reports 15 and reserves CHAT_ESTIMATE while it runs
    expect((await chat(a, k)).status).toBe(200);
    await within(2000, "the first call's tokens in Redis", async () => (await tokensInRedis(k)) === TOKENS_PER_CALL);
    expect((await chat(b, k)).status).toBe(200); // 15 + estimate fits
    await within(2000, "both calls' tokens in Redis", async () => (await tokensInRedis(k)) === 2 * TOKENS_PER_CALL);
    const refused = await chat(a, k);
    expect(refused.status).toBe(429);
    expect((json(refused.body) as { error: { message: string } }).error.message).toContain(
      `${TOKENS_TPM} tokens per minute`,
    );
  });

  it('gives a concurrency=1 key one call in flight across both replicas: the others wait for the slot', async () => {
    const k = key('slots');
    const events: string[] = [];
    const first = chat(a, k, 'hold');
    await within(2000, 'the held call reaching the upstream', async () => held.length === 1);
    const onOtherReplica = chat(b, k).then((res) => (events.push('replica b answered'), res));
    const onSameReplica = chat(a, k).then((res) => (events.push('replica a answered'), res));
    await within(
      2000,
      'both waiting a moment',
      async () => (await inspect.zcard(`${PREFIX}limits:{${k.id}}:slots`)) === 1,
    );
    events.push('first released');
    held.shift()!.end(CHAT_ANSWER);
    expect((await first).status).toBe(200);
    expect((await onOtherReplica).status).toBe(200);
    expect((await onSameReplica).status).toBe(200);
    expect(events[0]).toBe('first released');
    expect(events.slice(1).sort()).toEqual(['replica a answered', 'replica b answered']);
  });
});

describe('when Redis goes away and comes back', () => {
  it('keeps serving with per-replica limits, warns once on each replica, and the admin API says so', async () => {
    await redis.kill();
    const k = key('outage'); // rpm 2: per replica now, so each allows 2
    for (const gw of [a, b]) {
      // That calls skip an unreachable Redis without waiting is shown in redis-limit-store.test.ts.
      for (let i = 0; i < 2; i++) {
        const res = await chat(gw, k);
        expect(res.status, res.body.toString()).toBe(200);
      }
      expect((await chat(gw, k)).status).toBe(429);
    }
    for (const gw of [a, b]) {
      expect(await limitsView(gw)).toMatchObject({
        limitsScope: 'replica',
        redis: 'unavailable',
        unavailableSince: expect.any(String),
      });
      const warnings = () => logLines(gw).filter((l) => l.level === 40 && String(l.msg).startsWith('Redis at'));
      // The child's log reaches this process through a pipe: give the line a moment.
      await within(2000, 'the warning in the log', async () => warnings().length > 0);
      expect(warnings().map((w) => w.msg)).toEqual([
        expect.stringMatching(
          new RegExp(
            `^Redis at redis://127\\.0\\.0\\.1:${redis.port}/0 is unreachable \\(.+\\): per-key limits are counted per replica until it is back; retrying every 2 s\\.$`,
          ),
        ),
      ]);
    }
  });

  it('shares limits again once Redis is back on the same port, and logs the recovery once', async () => {
    await redis.restart();
    for (const gw of [a, b])
      await within(8000, 'the replica using Redis again', async () => (await limitsView(gw)).limitsScope === 'shared');
    for (const gw of [a, b]) {
      const recoveries = () => logLines(gw).filter((l) => l.level === 30 && String(l.msg).startsWith('Redis at'));
      await within(2000, 'the recovery in the log', async () => recoveries().length > 0);
      expect(logLines(gw).filter((l) => l.level === 40 && String(l.msg).startsWith('Redis at'))).toHaveLength(1);
      expect(recoveries().map((l) => l.msg)).toEqual([
        `Redis at redis://127.0.0.1:${redis.port}/0 is back: per-key limits are shared by every replica again.`,
      ]);
    }
    const k = key('after-restart'); // rpm 3
    for (const gw of [a, b, a]) expect((await chat(gw, k)).status).toBe(200);
    expect((await chat(b, k)).status).toBe(429);
    expect((await chat(a, k)).status).toBe(429);
  });

  it('never wrote the Redis or database password to either log', () => {
    for (const gw of [a, b]) {
      expect(gw.output()).not.toContain(REDIS_PASSWORD);
      expect(gw.output()).not.toContain(DB_PASSWORD);
    }
  });
});
