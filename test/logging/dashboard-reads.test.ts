/**
 * The access log leaves out the dashboard's own background reads and keeps everything an
 * operator reads it for: the rule on its own, then a real gateway with a store and a session.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { isDashboardBackgroundRead, type RequestFacts } from '../../src/logging/dashboard-reads.js';
import { DEMO_CONFIG, startSimulator, type Simulator } from '../fakes/llama-swap/index.js';
import { api, login, PASSWORD, startAdminGateway } from '../helpers/admin.js';
import type { TestGateway } from '../helpers/gateway.js';
import { rawRequest } from '../helpers/http.js';
import { requireDashboardBuild } from '../browser/helpers.js';

const read: RequestFacts = {
  method: 'GET',
  path: '/api/keys',
  status: 200,
  dashboardSession: true,
  dashboardFile: false,
};

describe('which requests are the dashboard’s background reads', () => {
  it('leaves out successful reads of /api with a dashboard session, and the dashboard’s files', () => {
    expect(isDashboardBackgroundRead(read)).toBe(true);
    expect(isDashboardBackgroundRead({ ...read, status: 304 })).toBe(true);
    expect(isDashboardBackgroundRead({ ...read, method: 'HEAD' })).toBe(true);
    const file = { ...read, path: '/assets/index-Ab12.js', dashboardSession: false, dashboardFile: true };
    expect(isDashboardBackgroundRead(file)).toBe(true);
  });

  it('keeps changes, errors, the admin token’s reads and everything outside /api', () => {
    for (const method of ['POST', 'PATCH', 'PUT', 'DELETE'])
      expect(isDashboardBackgroundRead({ ...read, method })).toBe(false);
    for (const status of [400, 401, 404, 500]) expect(isDashboardBackgroundRead({ ...read, status })).toBe(false);
    expect(isDashboardBackgroundRead({ ...read, dashboardSession: false })).toBe(false);
    expect(isDashboardBackgroundRead({ ...read, path: '/metrics' })).toBe(false);
    expect(isDashboardBackgroundRead({ ...read, path: '/healthz', dashboardSession: false })).toBe(false);
    expect(isDashboardBackgroundRead({ ...read, path: '/missing.js', status: 404, dashboardFile: true })).toBe(false);
  });
});

describe('the access log of a gateway with a signed-in dashboard', () => {
  let sim: Simulator;
  let gateway: TestGateway;
  beforeAll(async () => {
    requireDashboardBuild();
    sim = await startSimulator({ config: DEMO_CONFIG });
    gateway = await startAdminGateway(sim.url, { adminPassword: PASSWORD });
  });
  afterAll(async () => {
    await gateway?.close();
    await sim?.close();
  });

  const accessLines = () =>
    gateway
      .logLines()
      .filter((l) => l.msg === 'request')
      .map((l) => `${String(l.method)} ${String(l.path)} ${String(l.status)}`);

  it('writes no line for polling and page files, and one for each sign-in, change, error and /v1 call', async () => {
    const cookie = await login(gateway);
    const html = { accept: 'text/html' };
    expect((await rawRequest(`${gateway.url}/keys`, { headers: html })).status).toBe(200);
    expect((await rawRequest(`${gateway.url}/theme-init.js`)).status).toBe(200);
    expect((await api(gateway, 'GET', '/api/keys', { cookie })).status).toBe(200);
    expect((await api(gateway, 'GET', '/api/session', { cookie })).status).toBe(200);
    expect((await api(gateway, 'POST', '/api/keys', { cookie, body: { name: 'ci' } })).status).toBe(201);
    expect((await api(gateway, 'GET', '/api/keys', { cookie: 'not-a-session' })).status).toBe(401);
    expect((await rawRequest(`${gateway.url}/v1/models`)).status).toBe(401);
    // Last: once its line is written, every earlier request has had its chance to log.
    expect((await rawRequest(`${gateway.url}/healthz`)).status).toBe(200);
    await gateway.waitForLog((l) => l.msg === 'request' && l.path === '/healthz');

    expect(accessLines()).toEqual([
      'POST /api/login 200',
      'POST /api/keys 201',
      'GET /api/keys 401',
      'GET /v1/models 401',
      'GET /healthz 200',
    ]);
  });
});
