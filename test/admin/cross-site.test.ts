/**
 * A page on another site can make the admin's browser send requests with the session cookie
 * (forms, `fetch` with `no-cors`). None of them may change anything.
 */
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { startRecordingUpstream, type RecordingUpstream } from '../fakes/recording-upstream.js';
import type { TestGateway } from '../helpers/gateway.js';
import { json, rawRequest } from '../helpers/http.js';
import { api, completeSetup, errorCode, PASSWORD, startAdminGateway } from '../helpers/admin.js';

const ADMIN_TOKEN = 'admin-token-for-scripts';
let upstream: RecordingUpstream;
let gateway: TestGateway;
let cookie: string;

beforeAll(async () => {
  upstream = await startRecordingUpstream();
  gateway = await startAdminGateway(upstream.url, { adminToken: ADMIN_TOKEN });
  cookie = await completeSetup(gateway);
});
afterAll(async () => {
  await gateway.close();
  await upstream.close();
});
beforeEach(async () => {
  for (const key of await gateway.store!.keys.list()) await gateway.store!.keys.delete(key.id);
});

const keyCount = async () => (await gateway.store!.keys.list()).length;
const createKey = (headers: Record<string, string>, body: string | undefined = JSON.stringify({ name: 'planted' })) =>
  rawRequest(`${gateway.url}/api/keys`, {
    method: 'POST',
    headers: { cookie: `gatehouse_session=${cookie}`, ...headers },
    body,
  });

describe('cross-site requests carrying a valid session cookie', () => {
  it('refuses a POST from another origin with 403 csrf_rejected and creates nothing', async () => {
    const res = await createKey({ origin: 'http://evil.example', 'content-type': 'application/json' });
    expect(res.status).toBe(403);
    expect(json(res.body)).toEqual({
      error: {
        code: 'csrf_rejected',
        message: `Cross-site request refused: Origin "http://evil.example" is not this gateway's origin (${gateway.url}). Behind a TLS-terminating reverse proxy, list it in GATEHOUSE_TRUSTED_PROXIES so its X-Forwarded-Proto is believed.`,
        details: [{ path: '/headers/origin', message: `must be ${gateway.url}` }],
      },
    });
    expect(await keyCount()).toBe(0);
  });

  it('refuses a text/plain POST (what a form or no-cors fetch can send) with 415 before any handler runs', async () => {
    const res = await createKey({ 'content-type': 'text/plain' });
    expect(res.status).toBe(415);
    expect(json(res.body)).toEqual({
      error: {
        code: 'unsupported_media_type',
        message:
          'The admin API accepts only JSON: send Content-Type: application/json (got "text/plain"), with ' +
          '{} when there is nothing to say.',
        details: [{ path: '/headers/content-type', message: 'must be application/json' }],
      },
    });
    expect(await keyCount()).toBe(0);
  });

  it('refuses form-encoded, multipart and type-less POSTs with 415', async () => {
    for (const type of ['application/x-www-form-urlencoded', 'multipart/form-data; boundary=x', undefined]) {
      const res = await createKey(type ? { 'content-type': type } : {}, type ? 'name=planted' : undefined);
      expect(res.status, String(type)).toBe(415);
    }
    expect(await keyCount()).toBe(0);
  });

  it('refuses Sec-Fetch-Site: cross-site and same-site with 403, even with a matching Origin', async () => {
    for (const site of ['cross-site', 'same-site']) {
      const res = await createKey({ 'sec-fetch-site': site, origin: gateway.url, 'content-type': 'application/json' });
      expect(res.status, site).toBe(403);
      expect(json(res.body)).toMatchObject({
        error: { code: 'csrf_rejected', message: expect.stringContaining(`Sec-Fetch-Site is "${site}"`) },
      });
    }
    expect(await keyCount()).toBe(0);
  });

  it('refuses Origin: null (sandboxed frames, some redirects)', async () => {
    const res = await createKey({ origin: 'null', 'content-type': 'application/json' });
    expect(res.status).toBe(403);
    expect(await keyCount()).toBe(0);
  });

  it('refuses a cross-origin PATCH and DELETE, leaving the key as it was', async () => {
    const created = await api(gateway, 'POST', '/api/keys', { cookie, body: { name: 'kept' } });
    expect(created.status).toBe(201);
    const { key } = json(created.body) as { key: { id: string } };
    const evil = {
      cookie: `gatehouse_session=${cookie}`,
      origin: 'http://evil.example',
      'content-type': 'application/json',
    };
    const patch = await rawRequest(`${gateway.url}/api/keys/${key.id}`, {
      method: 'PATCH',
      headers: evil,
      body: '{"revoked":true}',
    });
    expect(patch.status).toBe(403);
    const del = await rawRequest(`${gateway.url}/api/keys/${key.id}?confirm=last`, {
      method: 'DELETE',
      headers: { cookie: evil.cookie, 'sec-fetch-site': 'cross-site' },
    });
    expect(del.status).toBe(403);
    expect((await gateway.store!.keys.get(key.id))?.revokedAt).toBeNull();
  });

  it('refuses a cross-origin sign-in and setup too (they carry no cookie but set one)', async () => {
    const login = await rawRequest(`${gateway.url}/api/login`, {
      method: 'POST',
      headers: { origin: 'http://evil.example', 'content-type': 'application/json' },
      body: JSON.stringify({ password: PASSWORD }),
    });
    expect(login.status).toBe(403);
    expect(login.headers['set-cookie']).toBeUndefined();
    const plain = await rawRequest(`${gateway.url}/api/login`, {
      method: 'POST',
      headers: { 'content-type': 'text/plain' },
      body: JSON.stringify({ password: PASSWORD }),
    });
    expect(plain.status).toBe(415);
    const setup = await rawRequest(`${gateway.url}/api/setup`, {
      method: 'POST',
      headers: { 'sec-fetch-site': 'cross-site', 'content-type': 'application/json' },
      body: '{}',
    });
    expect(setup.status).toBe(403);
  });
});

describe('requests that pass the cross-site checks', () => {
  it('accepts the dashboard: same Origin, Sec-Fetch-Site same-origin, JSON', async () => {
    const res = await createKey({
      origin: gateway.url,
      'sec-fetch-site': 'same-origin',
      'content-type': 'application/json; charset=utf-8',
    });
    expect(res.status).toBe(201);
  });

  it('accepts an Origin differing only in letter case or an explicit default port', async () => {
    const port = new URL(gateway.url).port;
    const res = await createKey({ origin: `HTTP://127.0.0.1:${port}`, 'content-type': 'application/json' });
    expect(res.status).toBe(201);
  });

  it('accepts Sec-Fetch-Site: none (typed into the address bar)', async () => {
    expect((await createKey({ 'sec-fetch-site': 'none', 'content-type': 'application/json' })).status).toBe(201);
  });

  it('accepts a script: no Origin, no Sec-Fetch-Site, the admin token, JSON', async () => {
    const res = await rawRequest(`${gateway.url}/api/keys`, {
      method: 'POST',
      headers: { authorization: `Bearer ${ADMIN_TOKEN}`, 'content-type': 'application/json' },
      body: '{"name":"script"}',
    });
    expect(res.status).toBe(201);
  });

  it('still wants JSON from a script with the admin token', async () => {
    const res = await rawRequest(`${gateway.url}/api/keys`, {
      method: 'POST',
      headers: { authorization: `Bearer ${ADMIN_TOKEN}`, 'content-type': 'text/plain' },
      body: '{"name":"script"}',
    });
    expect(res.status).toBe(415);
    expect(errorCode(res)).toBe('unsupported_media_type');
    expect(await keyCount()).toBe(0);
  });

  it('lets reads through from anywhere: GET is not a change (the cookie is SameSite=Strict anyway)', async () => {
    const res = await rawRequest(`${gateway.url}/api/keys`, {
      headers: { cookie: `gatehouse_session=${cookie}`, origin: 'http://evil.example', 'sec-fetch-site': 'cross-site' },
    });
    expect(res.status).toBe(200);
  });

  it('accepts a DELETE without a body or Content-Type', async () => {
    const created = await api(gateway, 'POST', '/api/keys', { cookie, body: { name: 'to delete' } });
    const { key } = json(created.body) as { key: { id: string } };
    const res = await api(gateway, 'DELETE', `/api/keys/${key.id}?confirm=last`, { cookie });
    expect(res.status).toBe(200);
  });
});

describe('behind a reverse proxy', () => {
  it("matches the browser's https Origin when a trusted proxy says X-Forwarded-Proto: https and X-Forwarded-Host", async () => {
    const behind = await startAdminGateway(upstream.url, { adminPassword: PASSWORD, trustedProxies: ['127.0.0.1'] });
    try {
      const headers = {
        origin: 'https://gatehouse.example',
        'x-forwarded-proto': 'https',
        'x-forwarded-host': 'gatehouse.example',
        'content-type': 'application/json',
      };
      const res = await rawRequest(`${behind.url}/api/login`, {
        method: 'POST',
        headers,
        body: JSON.stringify({ password: PASSWORD }),
      });
      expect(res.status).toBe(200);
    } finally {
      await behind.close();
    }
  });

  it('does not believe X-Forwarded-Proto from an untrusted peer, and says what to configure', async () => {
    const headers = {
      origin: `https://${new URL(gateway.url).host}`,
      'x-forwarded-proto': 'https',
      'content-type': 'application/json',
    };
    const res = await rawRequest(`${gateway.url}/api/login`, {
      method: 'POST',
      headers,
      body: JSON.stringify({ password: PASSWORD }),
    });
    expect(res.status).toBe(403);
    expect(json(res.body)).toMatchObject({
      error: { code: 'csrf_rejected', message: expect.stringContaining('GATEHOUSE_TRUSTED_PROXIES') },
    });
  });
});
