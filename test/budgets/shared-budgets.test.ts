/**
 * Key budgets shared by two gateway instances on one PostgreSQL schema and one Redis
 * (127.0.0.1:6379, a prefix per run): a call on either counts against the same running total,
 * parallel calls on both reserve against it atomically, and a period's total starts from the
 * request log in PostgreSQL when Redis holds none (a Redis that forgot, or a new period).
 */
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Settings } from '../../src/settings/index.js';
import { PROMPT_BYTES_PER_TOKEN } from '../../src/limits/token-reservation.js';
import { startRecordingUpstream, type RecordingUpstream } from '../fakes/recording-upstream.js';
import type { TestGateway } from '../helpers/gateway.js';
import { json, rawRequest } from '../helpers/http.js';
import { requirePostgres, TEST_DATABASE_URL, TestSchemas } from '../helpers/postgres.js';
import { createKey, startUsageGateway } from '../usage/usage-helpers.js';

const MAX_TOKENS = 10;
const BODY = JSON.stringify({ model: 'm', max_tokens: MAX_TOKENS, messages: [{ role: 'user', content: 'hi' }] });
const ESTIMATE = Math.ceil(Buffer.byteLength(BODY) / PROMPT_BYTES_PER_TOKEN) + MAX_TOKENS;
const PREFIX = `gh-test-budget-${process.pid}-${Date.now()}:`;

const schemas = new TestSchemas();
let upstream: RecordingUpstream;
const held: Array<() => void> = [];
let holding = false;
const clock = { now: Date.parse('2030-01-15T12:00:00Z') };
let a: TestGateway;
let b: TestGateway;

beforeAll(async () => {
  await requirePostgres();
  upstream = await startRecordingUpstream((_req, res) => {
    const answer = () => {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ choices: [], usage: { prompt_tokens: 20, completion_tokens: 10 } }));
    };
    if (holding) held.push(answer);
    else answer();
  });
  const settings: Partial<Settings> = {
    databaseUrl: TEST_DATABASE_URL,
    databaseSchema: schemas.fresh('budgets'),
    redisUrl: 'redis://127.0.0.1:6379',
    redisPrefix: PREFIX,
  };
  // A wide command timeout: this file tests shared totals, not the per-replica fallback a slow Redis opens.
  const extra = { usageOptions: { now: () => clock.now, redis: { commandTimeoutMs: 10_000 } } };
  a = await startUsageGateway(upstream.url, settings, extra);
  b = await startUsageGateway(upstream.url, settings, extra);
  await Promise.all([a.app.usage.ready(), b.app.usage.ready()]);
  expect(a.app.usage.limits.status().scope).toBe('shared');
}, 60_000);

afterAll(async () => {
  await a?.close();
  await b?.close();
  await upstream?.close();
  await schemas.dropAll();
});

function chat(gateway: TestGateway, secret: string) {
  return rawRequest(`${gateway.url}/v1/chat/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: `Bearer ${secret}` },
    body: BODY,
  });
}

/** The key's requests used this period, as the other instance's admin API sees it. */
async function usedOn(gateway: TestGateway, keyId: string): Promise<number | undefined> {
  const res = await rawRequest(`${gateway.url}/api/budgets`, {
    headers: { authorization: 'Bearer usage-tests-admin-token' },
  });
  const keys = (json(res.body) as { keys: Array<{ id: string; budgets: Array<{ kind: string; used: number }> }> }).keys;
  return keys.find((k) => k.id === keyId)?.budgets.find((x) => x.kind === 'requests')?.used;
}

describe('budgets shared by two instances (PostgreSQL + Redis)', () => {
  it('counts calls on either instance against one total and refuses on both once it is used up', async () => {
    const key = await createKey(a, { name: 'shared', budget: { requests: 3, period: 'day' } });
    await expect.poll(() => b.index?.size).toBeGreaterThan(0);
    expect((await chat(a, key.secret)).status).toBe(200);
    expect((await chat(b, key.secret)).status).toBe(200);
    await expect.poll(() => usedOn(b, key.id)).toBe(2);
    expect(await usedOn(a, key.id)).toBe(2);
    expect((await chat(a, key.secret)).status).toBe(200);
    await expect.poll(() => usedOn(a, key.id)).toBe(3);
    const refusedA = await chat(a, key.secret);
    const refusedB = await chat(b, key.secret);
    expect([refusedA.status, refusedB.status]).toEqual([429, 429]);
    expect(json(refusedB.body)).toMatchObject({ error: { code: 'budget_exceeded' } });
  });

  it('lets parallel calls on both instances reserve at most the token budget between them', async () => {
    const budget = 200;
    const key = await createKey(a, { name: 'parallel', budget: { tokens: budget, period: 'day' } });
    await expect.poll(() => b.index?.size).toBeGreaterThan(1);
    holding = true;
    let refused = 0;
    const before = upstream.received.length;
    const calls = Array.from({ length: 20 }, (_, i) =>
      chat(i % 2 ? a : b, key.secret).then((res) => {
        if (res.status === 429) refused++;
        return res;
      }),
    );
    await expect.poll(() => upstream.received.length - before + refused, { timeout: 5000 }).toBe(20);
    holding = false;
    for (const release of held.splice(0)) release();
    const results = await Promise.all(calls);
    expect(a.app.usage.limits.status().scope).toBe('shared');
    expect(results.filter((r) => r.status === 200)).toHaveLength(Math.floor(budget / ESTIMATE));
  });

  it('refuses on both instances a call larger than what is left of an unused token budget, and forwards nothing', async () => {
    const key = await createKey(a, { name: 'small', budget: { tokens: ESTIMATE - 1, period: 'day' } });
    await expect.poll(() => b.index?.size).toBeGreaterThan(2);
    const before = upstream.received.length;
    for (const gateway of [a, b]) {
      const res = await chat(gateway, key.secret);
      expect(res.status).toBe(429);
      expect((json(res.body) as { error: { code: string; message: string } }).error).toMatchObject({
        code: 'budget_exceeded',
        message: expect.stringContaining(`may use up to ${ESTIMATE} tokens`),
      });
    }
    expect(upstream.received.length).toBe(before);
  });

  it("starts a period's total from the request log in PostgreSQL when Redis has none", async () => {
    const key = await createKey(a, { name: 'reseed', budget: { requests: 2, period: 'day' } });
    await expect.poll(() => b.index?.size).toBeGreaterThan(2);
    expect((await chat(a, key.secret)).status).toBe(200);
    await expect.poll(() => usedOn(a, key.id)).toBe(1);
    await a.app.usage.flush();
    // Redis forgets the running totals (a restart, an eviction): the log still has the call.
    const redis = new Redis('redis://127.0.0.1:6379');
    try {
      const keys = await redis.keys(`${PREFIX}budget:{${key.id}}*`);
      expect(keys.length).toBeGreaterThan(0);
      await redis.del(...keys);
    } finally {
      redis.disconnect();
    }
    expect((await chat(b, key.secret)).status).toBe(200);
    expect((await chat(a, key.secret)).status).toBe(429);
  });
});
