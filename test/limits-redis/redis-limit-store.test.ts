/**
 * The shared limit store against a real Redis (a private `redis-server` per group, started on a
 * free port; see test/helpers/redis.ts): the Lua scripts give the answers of the per-process
 * store, exactly, with two "replicas" (two stores) racing; slots of a crashed holder expire;
 * and Redis going away, hanging or being absent at start never holds a call up.
 *
 * Needs `redis-server`: fails, never skips, without it.
 */
import { Writable } from 'node:stream';
import { Redis } from 'ioredis';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { createLogger } from '../../src/logger.js';
import type { LimitDecision } from '../../src/limits/limit-store.js';
import { MemoryLimitStore } from '../../src/limits/memory-limit-store.js';
import { limitKeys } from '../../src/limits/redis-limit-scripts.js';
import { RedisLimitStore, type RedisLimitStoreOptions } from '../../src/limits/redis-limit-store.js';
import { startTestRedis, type TestRedis } from '../helpers/redis.js';

const PASSWORD = 'redis-pass-never-logged-5b1e';
const RPM = (rpm: number) => ({ rpm, tpm: null, concurrent: null });
const TPM = (tpm: number) => ({ rpm: null, tpm, concurrent: null });
const CONCURRENT = (concurrent: number) => ({ rpm: null, tpm: null, concurrent });

interface Log {
  text(): string;
  lines(): Array<{ level: number; msg: string } & Record<string, unknown>>;
}

function captureLog(): { logger: ReturnType<typeof createLogger>; log: Log } {
  let text = '';
  const sink = new Writable({ write: (chunk: Buffer, _e, done) => ((text += chunk.toString('utf8')), done()) });
  return {
    logger: createLogger('info', sink),
    log: {
      text: () => text,
      lines: () =>
        text
          .split('\n')
          .filter(Boolean)
          .map((l) => JSON.parse(l) as { level: number; msg: string }),
    },
  };
}

const opened: RedisLimitStore[] = [];
const servers: TestRedis[] = [];
let run = 0;

/** A store on `redis` with its own key prefix (a "replica" when two share the prefix). */
async function storeOn(
  redis: TestRedis,
  options: Partial<RedisLimitStoreOptions> & { log?: Log } = {},
): Promise<{ store: RedisLimitStore; log: Log }> {
  const { logger, log } = captureLog();
  const store = new RedisLimitStore({ url: redis.url, prefix: `t${process.pid}:${run}:`, logger, ...options });
  opened.push(store);
  await store.ready();
  return { store, log };
}

async function decide(decision: LimitDecision | Promise<LimitDecision>): Promise<LimitDecision> {
  return decision;
}

afterEach(async () => {
  run++;
  for (const store of opened.splice(0)) await store.close();
});
afterAll(async () => {
  for (const server of servers) await server.stop();
});

describe('the Lua scripts, through two stores sharing one Redis', () => {
  let redis: TestRedis;
  let client: Redis;
  beforeAll(async () => {
    redis = await startTestRedis({ password: PASSWORD });
    servers.push(redis);
    client = new Redis(redis.url);
  });
  afterAll(async () => {
    await client?.quit();
  });

  it('RPM is exact: N allowed, the N+1st refused with the time until the oldest leaves, the window slides (same answers as the per-process store)', async () => {
    let t = 1_000_000;
    const { store } = await storeOn(redis, { now: () => t });
    const memory = new MemoryLimitStore({ now: () => t });
    const both = async (limits: ReturnType<typeof RPM>) => {
      const shared = await decide(store.acquire('k', limits));
      expect(shared, `at ${t - 1_000_000} ms`).toEqual(memory.acquire('k', limits));
      return shared;
    };
    try {
      expect(await both(RPM(3))).toEqual({ allowed: true, slot: false }); // 0 s
      t += 20_000;
      expect((await both(RPM(3))).allowed).toBe(true); // 20 s
      t += 20_000;
      expect((await both(RPM(3))).allowed).toBe(true); // 40 s
      t += 19_999;
      expect(await both(RPM(3))).toEqual({ allowed: false, limit: 'rpm', max: 3, retryAfterMs: 1 }); // 59.999 s
      // a refused call does not count
      expect(await both(RPM(3))).toEqual({ allowed: false, limit: 'rpm', max: 3, retryAfterMs: 1 });
      t += 1;
      expect((await both(RPM(3))).allowed).toBe(true); // 60 s: the first call left the window
      expect(await both(RPM(3))).toEqual({ allowed: false, limit: 'rpm', max: 3, retryAfterMs: 20_000 });
      // A lowered limit applies at once to what the window holds (20 s, 40 s, 60 s).
      expect(await both(RPM(1))).toEqual({ allowed: false, limit: 'rpm', max: 1, retryAfterMs: 60_000 });
      expect(await both(RPM(2))).toEqual({ allowed: false, limit: 'rpm', max: 2, retryAfterMs: 40_000 });
    } finally {
      memory.close();
    }
  });

  it('lets exactly N of many simultaneous calls through when two replicas race for one key', async () => {
    const a = (await storeOn(redis)).store;
    const b = (await storeOn(redis)).store;
    const decisions = await Promise.all(
      Array.from({ length: 60 }, (_, i) => decide((i % 2 ? a : b).acquire('raced', RPM(10)))),
    );
    expect(decisions.filter((d) => d.allowed)).toHaveLength(10);
    const refused = decisions.filter((d): d is Extract<LimitDecision, { allowed: false }> => !d.allowed);
    expect(refused).toHaveLength(50);
    for (const d of refused) {
      expect(d.limit).toBe('rpm');
      expect(d.retryAfterMs).toBeGreaterThan(55_000);
      expect(d.retryAfterMs).toBeLessThanOrEqual(60_000);
    }
  });

  it('TPM counts the tokens of finished calls from every replica, in 1 s buckets that leave 60-61 s after the call ended', async () => {
    let t = 5_000_000;
    const a = (await storeOn(redis, { now: () => t })).store;
    const b = (await storeOn(redis, { now: () => t })).store;
    await a.addTokens('k', 60); // second 5000
    t += 10_000;
    expect(await decide(b.acquire('k', TPM(100)))).toEqual({ allowed: true, slot: false });
    await b.addTokens('k', 50); // second 5010: 110 in the window
    expect(await decide(a.acquire('k', TPM(100)))).toEqual({
      allowed: false,
      limit: 'tpm',
      max: 100,
      retryAfterMs: 51_000,
    });
    expect(await decide(b.acquire('k', TPM(111)))).toEqual({ allowed: true, slot: false });
    t = 5_060_999; // the first bucket (second 5000) counts until 5,061,000
    expect((await decide(b.acquire('k', TPM(100)))).allowed).toBe(false);
    t = 5_061_000;
    expect(await decide(b.acquire('k', TPM(100)))).toEqual({ allowed: true, slot: false });
    // Only the bucket still in the window is kept.
    expect(await client.hgetall(limitKeys(`t${process.pid}:${run}:`, 'k').tpm)).toEqual({ '5010': '50' });
  });

  it('caps calls in flight across replicas and frees a slot when its call ends', async () => {
    const a = (await storeOn(redis)).store;
    const b = (await storeOn(redis)).store;
    const first = await decide(a.acquire('c', CONCURRENT(2)));
    const second = await decide(b.acquire('c', CONCURRENT(2)));
    expect(first).toMatchObject({ allowed: true, slot: true, lease: expect.any(String) });
    expect(second).toMatchObject({ allowed: true, slot: true });
    expect(await decide(a.acquire('c', CONCURRENT(2)))).toEqual({
      allowed: false,
      limit: 'concurrent',
      max: 2,
      retryAfterMs: 1000,
    });
    expect(await decide(b.acquire('c', CONCURRENT(2)))).toEqual({
      allowed: false,
      limit: 'concurrent',
      max: 2,
      retryAfterMs: 1000,
    });
    await b.release('c', (second as { lease: string }).lease);
    expect(await decide(a.acquire('c', CONCURRENT(2)))).toMatchObject({ allowed: true, slot: true });
  });

  it("frees a crashed holder's slot when its lease runs out", async () => {
    let t = 9_000_000;
    const crashed = (await storeOn(redis, { now: () => t, leaseMs: 5000 })).store;
    const other = (await storeOn(redis, { now: () => t, leaseMs: 5000 })).store;
    expect(await decide(crashed.acquire('held', CONCURRENT(1)))).toMatchObject({ allowed: true, slot: true });
    await crashed.close(); // gone without releasing or renewing
    t += 4999;
    expect(await decide(other.acquire('held', CONCURRENT(1)))).toMatchObject({ allowed: false, limit: 'concurrent' });
    t += 1;
    expect(await decide(other.acquire('held', CONCURRENT(1)))).toMatchObject({ allowed: true, slot: true });
  });

  it('keeps renewing the slot of a call that runs longer than the lease', async () => {
    const holder = (await storeOn(redis, { leaseMs: 300, renewEveryMs: 60 })).store;
    const other = (await storeOn(redis, { leaseMs: 300, renewEveryMs: 60 })).store;
    const held = await decide(holder.acquire('long', CONCURRENT(1)));
    expect(held).toMatchObject({ allowed: true, slot: true });
    await new Promise((r) => setTimeout(r, 1000));
    expect(await decide(other.acquire('long', CONCURRENT(1)))).toMatchObject({ allowed: false, limit: 'concurrent' });
    const ttl = await client.pttl(limitKeys(`t${process.pid}:${run}:`, 'long').slots);
    expect(ttl).toBeGreaterThan(0);
    expect(ttl).toBeLessThanOrEqual(1300);
    await holder.release('long', (held as { lease: string }).lease);
    expect(await decide(other.acquire('long', CONCURRENT(1)))).toMatchObject({ allowed: true, slot: true });
  });

  it('writes only keys under its prefix, each with a TTL no longer than its window or lease', async () => {
    const { store } = await storeOn(redis, { leaseMs: 20_000 });
    const prefix = `t${process.pid}:${run}:`;
    await decide(store.acquire('ttl', { rpm: 5, tpm: 1000, concurrent: 3 }));
    await store.addTokens('ttl', 42);
    const keys = limitKeys(prefix, 'ttl');
    expect((await client.keys(`${prefix}*`)).sort()).toEqual([keys.rpm, keys.slots, keys.tpm].sort());
    expect((await client.keys('*')).every((k) => k.startsWith('t'))).toBe(true);
    const rpmTtl = await client.pttl(keys.rpm);
    const tpmTtl = await client.pttl(keys.tpm);
    const slotsTtl = await client.pttl(keys.slots);
    expect(rpmTtl).toBeGreaterThan(59_000);
    expect(rpmTtl).toBeLessThanOrEqual(61_000);
    expect(tpmTtl).toBeGreaterThan(59_000);
    expect(tpmTtl).toBeLessThanOrEqual(62_000);
    expect(slotsTtl).toBeGreaterThan(19_000);
    expect(slotsTtl).toBeLessThanOrEqual(21_000);
  });

  it('reports the shared scope and never writes the password to the log', async () => {
    const { store, log } = await storeOn(redis);
    expect(store.status()).toEqual({ scope: 'shared', redis: 'connected', unavailableSince: null });
    const line = log.lines().find((l) => l.limits === 'shared');
    expect(line?.msg).toBe(
      `Limits: per-key limits are shared by every replica through Redis at redis://127.0.0.1:${redis.port}/0 (key prefix t${process.pid}:${run}:).`,
    );
    expect(log.text()).not.toContain(PASSWORD);
  });
});

describe('when Redis fails', () => {
  it('falls back to per-replica counting at once when Redis goes away, warns once, and shares again when it is back', async () => {
    const redis = await startTestRedis({ password: PASSWORD });
    servers.push(redis);
    const { store, log } = await storeOn(redis, { retryMs: 200 });
    expect(await decide(store.acquire('k', RPM(100)))).toEqual({ allowed: true, slot: false });

    await redis.kill();
    // The first call finds Redis gone; from then on calls do not touch Redis (answered synchronously).
    expect((await decide(store.acquire('k', RPM(100)))).allowed).toBe(true);
    for (let i = 0; i < 19; i++) expect(store.acquire('k', RPM(100))).toEqual({ allowed: true, slot: false });
    expect(store.status()).toMatchObject({
      scope: 'replica',
      redis: 'unavailable',
      unavailableSince: expect.any(Number),
    });
    const warnings = log.lines().filter((l) => l.level === 40);
    expect(warnings).toHaveLength(1);
    expect(warnings[0]!.msg).toMatch(
      new RegExp(
        `^Redis at redis://127\\.0\\.0\\.1:${redis.port}/0 is unreachable \\(.+\\): per-key limits are counted per replica until it is back; retrying every 0\\.2 s\\.$`,
      ),
    );

    await redis.restart();
    await until(5000, 'the store using Redis again', () => store.status().scope === 'shared');
    expect(log.lines().filter((l) => l.level === 30 && String(l.msg).includes('is back'))).toHaveLength(1);
    expect(log.lines().filter((l) => l.level === 40)).toHaveLength(1);
    // Redis restarted empty: the window starts again from there, in Redis.
    const decision = store.acquire('k', RPM(1));
    expect(decision).toBeInstanceOf(Promise);
    expect(await decision).toEqual({ allowed: true, slot: false });
    expect(await decide(store.acquire('k', RPM(1)))).toMatchObject({ allowed: false, limit: 'rpm' });
    expect(log.text()).not.toContain(PASSWORD);
  });

  it('waits at most the command timeout for a Redis that stopped answering, then skips it until it answers again', async () => {
    const redis = await startTestRedis({ password: PASSWORD });
    servers.push(redis);
    const { store, log } = await storeOn(redis, { commandTimeoutMs: 80, retryMs: 200 });
    expect(await decide(store.acquire('k', RPM(100)))).toEqual({ allowed: true, slot: false });
    redis.pause();
    try {
      // Redis is stopped, so only the command timeout can answer this.
      expect(await decide(store.acquire('k', RPM(100)))).toEqual({ allowed: true, slot: false });
      // The breaker is open: the next calls do not touch Redis at all (answered synchronously).
      for (let i = 0; i < 5; i++) expect(store.acquire('k', RPM(100))).toEqual({ allowed: true, slot: false });
      expect(
        log
          .lines()
          .filter((l) => l.level === 40)
          .map((l) => l.error),
      ).toEqual(['Command timed out']);
    } finally {
      redis.resume();
    }
    await until(5000, 'the store using Redis again', () => store.status().scope === 'shared');
  });

  it('starts without Redis, answering from memory, and says so once', async () => {
    const redis = await startTestRedis();
    servers.push(redis);
    await redis.kill(); // a port nothing listens on
    const { store, log } = await storeOn(redis, { retryMs: 200 });
    expect(store.status()).toMatchObject({ scope: 'replica', redis: 'unavailable' });
    expect(store.acquire('k', RPM(1))).toEqual({ allowed: true, slot: false });
    expect(store.acquire('k', RPM(1))).toMatchObject({ allowed: false, limit: 'rpm' });
    const warnings = log.lines().filter((l) => l.level === 40);
    expect(warnings).toHaveLength(1);
    expect(warnings[0]!.msg).toMatch(
      / is unreachable at start \(connect ECONNREFUSED 127\.0\.0\.1:\d+\): per-key limits are counted per replica until it answers; retrying every 0\.2 s\.$/,
    );
    await redis.restart();
    await until(5000, 'the store connecting', () => store.status().scope === 'shared');
    expect(log.lines().filter((l) => l.level === 40)).toHaveLength(1);
  });

  it('says why when Redis refuses the password, without writing the password', async () => {
    const redis = await startTestRedis({ password: PASSWORD });
    servers.push(redis);
    const wrong = 'wrong-password-also-secret-31f';
    const { store, log } = await storeOn({ ...redis, url: `redis://:${wrong}@127.0.0.1:${redis.port}/0` });
    expect(store.status()).toMatchObject({ scope: 'replica', redis: 'unavailable' });
    expect(store.acquire('k', RPM(1))).toEqual({ allowed: true, slot: false });
    const warnings = log.lines().filter((l) => l.level === 40);
    expect(warnings).toHaveLength(1);
    expect(warnings[0]!.msg).toMatch(/is unreachable at start \(WRONGPASS .+\)/);
    expect(log.text()).not.toContain(wrong);
    expect(log.text()).not.toContain(PASSWORD);
  });

  it("continues from this replica's own recent calls, not from zero, when Redis goes away", async () => {
    const redis = await startTestRedis();
    servers.push(redis);
    const { store } = await storeOn(redis);
    expect(await decide(store.acquire('k', RPM(3)))).toMatchObject({ allowed: true });
    expect(await decide(store.acquire('k', RPM(3)))).toMatchObject({ allowed: true });
    await store.addTokens('t', 500);
    await redis.kill();
    expect(await decide(store.acquire('k', RPM(3)))).toMatchObject({ allowed: true });
    expect(await decide(store.acquire('k', RPM(3)))).toMatchObject({ allowed: false, limit: 'rpm' });
    expect(await decide(store.acquire('t', TPM(500)))).toMatchObject({ allowed: false, limit: 'tpm' });
  });

  it('releases a slot taken while Redis was down in memory, and leaves a Redis slot it cannot release to its lease', async () => {
    const redis = await startTestRedis();
    servers.push(redis);
    const { store } = await storeOn(redis, { retryMs: 100_000 });
    const inRedis = await decide(store.acquire('c', CONCURRENT(1)));
    expect(inRedis).toMatchObject({ allowed: true, slot: true, lease: expect.any(String) });
    await redis.kill();
    await until(2000, 'the store noticing', () => store.status().redis === 'unavailable');
    const inMemory = await decide(store.acquire('c', CONCURRENT(1)));
    expect(inMemory).toEqual({ allowed: true, slot: true });
    expect(await decide(store.acquire('c', CONCURRENT(1)))).toMatchObject({ allowed: false, limit: 'concurrent' });
    await store.release('c', undefined);
    await store.release('c', (inRedis as { lease: string }).lease);
    expect(await decide(store.acquire('c', CONCURRENT(1)))).toEqual({ allowed: true, slot: true });
  });
});

async function until(ms: number, what: string, check: () => boolean): Promise<void> {
  const deadline = performance.now() + ms;
  while (!check()) {
    if (performance.now() > deadline) throw new Error(`${what}: not within ${ms} ms`);
    await new Promise((r) => setTimeout(r, 20));
  }
}
