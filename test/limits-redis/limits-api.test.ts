/**
 * `GATEHOUSE_REDIS_URL` and `GATEHOUSE_REDIS_PREFIX` as settings, and where the admin API
 * (`GET /api/limits`) and `/metrics` say limits are counted: per replica without Redis, shared
 * with it, per replica again while it is unreachable.
 *
 * Needs `redis-server` (test/helpers/redis.ts): fails, never skips, without it.
 */
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadSettings, SettingsError } from '../../src/settings/index.js';
import { startRecordingUpstream, type RecordingUpstream } from '../fakes/recording-upstream.js';
import type { TestGateway } from '../helpers/gateway.js';
import { json, rawRequest } from '../helpers/http.js';
import { startTestRedis, type TestRedis } from '../helpers/redis.js';
import { parsePrometheusText, valueOf } from '../usage/prometheus-text.js';
import { adminApi, createKey, startUsageGateway } from '../usage/usage-helpers.js';

const PASSWORD = 'limits-api-redis-password-77c2';

describe('settings', () => {
  it('takes a redis:// or rediss:// URL and a key prefix (default gatehouse:)', () => {
    expect(loadSettings({})).toMatchObject({ redisUrl: undefined, redisPrefix: 'gatehouse:' });
    expect(
      loadSettings({ GATEHOUSE_REDIS_URL: 'redis://:pw@cache:6379/2', GATEHOUSE_REDIS_PREFIX: 'gh-prod:' }),
    ).toMatchObject({ redisUrl: 'redis://:pw@cache:6379/2', redisPrefix: 'gh-prod:' });
    expect(loadSettings({ GATEHOUSE_REDIS_URL: 'rediss://user:pw@cache.example.com' }).redisUrl).toBe(
      'rediss://user:pw@cache.example.com',
    );
    expect(loadSettings({ GATEHOUSE_REDIS_URL: '' }).redisUrl).toBeUndefined();
  });

  it('refuses other URLs without repeating the password', () => {
    for (const [value, expected] of [
      [
        'http://:s3cret-value@cache:6379',
        'GATEHOUSE_REDIS_URL: only redis:// and rediss:// (TLS) URLs are supported (got http://...)',
      ],
      [
        'redis://:s3cret-value@cache:6379/cache',
        'GATEHOUSE_REDIS_URL: the path must be a database number (redis://host:6379/0)',
      ],
      [
        'not a url s3cret-value',
        'GATEHOUSE_REDIS_URL: not a URL; expected redis://[:password@]host:6379[/db] (percent-encode special characters in the password)',
      ],
    ] as const) {
      let message = '';
      try {
        loadSettings({ GATEHOUSE_REDIS_URL: value });
      } catch (error) {
        expect(error).toBeInstanceOf(SettingsError);
        message = (error as Error).message;
      }
      expect(message).toContain(expected);
      expect(message).not.toContain('s3cret-value');
    }
    expect(() => loadSettings({ GATEHOUSE_REDIS_PREFIX: 'has space:' })).toThrowError(
      /GATEHOUSE_REDIS_PREFIX: .* must be at most 64 printable ASCII characters without spaces/,
    );
  });

  it('reads the URL from GATEHOUSE_REDIS_URL_FILE, and refuses both at once', () => {
    const file = join(mkdtempSync(join(tmpdir(), 'gh-redis-url-')), 'redis_url');
    writeFileSync(file, 'redis://:from-file@cache:6379/0\n');
    expect(loadSettings({ GATEHOUSE_REDIS_URL_FILE: file }).redisUrl).toBe('redis://:from-file@cache:6379/0');
    expect(() => loadSettings({ GATEHOUSE_REDIS_URL_FILE: file, GATEHOUSE_REDIS_URL: 'redis://x' })).toThrowError(
      /GATEHOUSE_REDIS_URL and GATEHOUSE_REDIS_URL_FILE are both set/,
    );
  });
});

describe('GET /api/limits', () => {
  let upstream: RecordingUpstream;
  let redis: TestRedis;
  const gateways: TestGateway[] = [];
  beforeAll(async () => {
    upstream = await startRecordingUpstream((_req, res) => void res.end('{"object":"list","data":[]}'));
    redis = await startTestRedis({ password: PASSWORD });
  });
  afterAll(async () => {
    for (const gateway of gateways) await gateway.close();
    await upstream?.close();
    await redis?.stop();
  });

  const limitsGauge = async (gateway: TestGateway) =>
    valueOf(
      parsePrometheusText((await rawRequest(`${gateway.url}/metrics`)).body.toString()),
      'gatehouse_limits_shared',
    );

  it('says limits are per replica without GATEHOUSE_REDIS_URL, and needs an admin', async () => {
    const gateway = await startUsageGateway(upstream.url);
    gateways.push(gateway);
    const res = await adminApi(gateway, 'GET', '/api/limits');
    expect(res.status).toBe(200);
    expect(res.headers['cache-control']).toBe('no-store');
    expect(json(res.body)).toEqual({ limitsScope: 'replica', redis: 'off', unavailableSince: null });
    expect(await limitsGauge(gateway)).toBe(0);
    const anonymous = await rawRequest(`${gateway.url}/api/limits`);
    expect(anonymous.status).toBe(401);
    expect(json(anonymous.body)).toMatchObject({ error: { code: 'admin_unauthorized' } });
  });

  it('says shared while Redis answers, per replica (since when) while it does not, and keeps serving', async () => {
    const gateway = await startUsageGateway(upstream.url, { redisUrl: redis.url, redisPrefix: `api${process.pid}:` });
    gateways.push(gateway);
    expect(json((await adminApi(gateway, 'GET', '/api/limits')).body)).toEqual({
      limitsScope: 'shared',
      redis: 'connected',
      unavailableSince: null,
    });
    expect(await limitsGauge(gateway)).toBe(1);

    const key = await createKey(gateway, { name: 'limited', limits: { rpm: 100 } });
    const call = () => rawRequest(`${gateway.url}/v1/models`, { headers: { authorization: `Bearer ${key.secret}` } });
    expect((await call()).status).toBe(200);
    const before = Date.now();
    await redis.kill();
    expect((await call()).status).toBe(200);
    const body = json((await adminApi(gateway, 'GET', '/api/limits')).body) as { unavailableSince: string };
    expect(body).toEqual({
      limitsScope: 'replica',
      redis: 'unavailable',
      unavailableSince: expect.stringMatching(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/),
    });
    expect(Date.parse(body.unavailableSince)).toBeGreaterThanOrEqual(before - 5);
    expect(await limitsGauge(gateway)).toBe(0);

    await redis.restart();
    const deadline = Date.now() + 5000;
    while (
      (json((await adminApi(gateway, 'GET', '/api/limits')).body) as { limitsScope: string }).limitsScope !== 'shared'
    ) {
      if (Date.now() > deadline) throw new Error('not shared again within 5 s');
      await new Promise((r) => setTimeout(r, 50));
    }
    expect(await limitsGauge(gateway)).toBe(1);
    expect(gateway.logText()).not.toContain(PASSWORD);
  });
});
