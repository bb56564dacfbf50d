/**
 * The Audit page in headless Chromium against the real gateway (real SQLite store, real audit
 * log): the entries the admin API wrote, filtered by action and time (the filters in the URL),
 * and paged with "Load more". Screenshot: test-results/screenshots/e2e-audit.png (not committed).
 */
import type { Browser } from 'playwright-core';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { startRecordingUpstream, type RecordingUpstream } from '../fakes/recording-upstream.js';
import { startTestGateway, type TestGateway } from '../helpers/gateway.js';
import { rawRequest } from '../helpers/http.js';
import { closeCheckedPages, launchBrowser, openPage, requireDashboardBuild, signIn, type TestPage } from './helpers.js';

const PASSWORD = 'audit page passphrase';
const ADMIN_TOKEN = 'audit-e2e-admin-token';
/** More key creations than one page (50) holds. */
const CREATED = 52;

let browser: Browser;
let upstream: RecordingUpstream;
let gateway: TestGateway;
const open: TestPage[] = [];

beforeAll(async () => {
  requireDashboardBuild();
  browser = await launchBrowser();
  upstream = await startRecordingUpstream();
  gateway = await startTestGateway(
    upstream.url,
    { adminPassword: PASSWORD, adminToken: ADMIN_TOKEN, logLevel: 'warn' },
    {},
    { withStore: true },
  );
  const keyCall = (method: string, path: string, body?: unknown) =>
    rawRequest(`${gateway.url}${path}`, {
      method,
      headers: {
        authorization: `Bearer ${ADMIN_TOKEN}`,
        ...(body === undefined ? {} : { 'content-type': 'application/json' }),
      },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
  let last = '';
  for (let i = 0; i < CREATED; i++) {
    const res = await keyCall('POST', '/api/keys', { name: `agent ${i}` });
    expect(res.status).toBe(201);
    last = (JSON.parse(res.body.toString()) as { key: { id: string } }).key.id;
  }
  expect((await keyCall('DELETE', `/api/keys/${last}`)).status).toBe(200);
}, 60_000);

afterEach(() => closeCheckedPages(open));

afterAll(async () => {
  await browser?.close();
  await gateway?.close();
  await upstream?.close();
});

describe('Audit page', () => {
  it('filters by action and time through the URL, and pages with Load more', async () => {
    const t = await openPage(browser, gateway.url);
    open.push(t);
    await signIn(t.page, PASSWORD, { next: '/audit' });
    await t.page.waitForURL('**/audit');
    const rows = t.page.locator('tr.entry');

    // Newest first: this browser's sign-in, then the delete, then a first page of creations.
    await expect.poll(() => rows.count()).toBe(50);
    expect(await rows.nth(0).getAttribute('data-action')).toBe('session.sign_in');
    expect(await rows.nth(1).getAttribute('data-action')).toBe('key.delete');
    await expect.poll(() => rows.nth(1).textContent()).toContain(`agent ${CREATED - 1}`);
    await t.page.getByRole('button', { name: 'Load more' }).click();
    await expect.poll(() => rows.count()).toBe(CREATED + 2);
    await expect.poll(() => t.page.getByText('that is all').count()).toBe(1);

    await t.page.getByLabel('Action').selectOption('key.delete');
    await t.page.waitForURL('**/audit?action=key.delete');
    await expect.poll(() => rows.count()).toBe(1);
    expect(await rows.nth(0).textContent()).toContain('Admin token');
    await t.screenshot('e2e-audit');

    await t.page.getByLabel('Action').selectOption('key.create');
    await expect.poll(() => rows.count()).toBe(50);
    expect(await rows.evaluateAll((els) => els.every((el) => el.getAttribute('data-action') === 'key.create'))).toBe(
      true,
    );

    // Before a time when nothing had happened yet: no entries, and the filters can be cleared.
    await t.page.getByLabel('Before').fill('2020-01-01T00:00');
    await t.page.waitForURL('**/audit?action=key.create&before=2020-01-01T00%3A00');
    await expect.poll(() => t.page.getByText('No entries match these filters.').count()).toBe(1);
    await t.page.getByRole('button', { name: 'Clear filters' }).first().click();
    await t.page.waitForURL((url) => url.pathname === '/audit' && url.search === '');
    await expect.poll(() => rows.count()).toBe(50);
  });

  it('labels user actions and says what they changed, from → to', async () => {
    const adminCall = (method: string, path: string, body: unknown) =>
      rawRequest(`${gateway.url}${path}`, {
        method,
        headers: { authorization: `Bearer ${ADMIN_TOKEN}`, 'content-type': 'application/json' },
        body: JSON.stringify(body),
      });
    const created = await adminCall('POST', '/api/users/invite', { name: 'Noor', role: 'member' });
    expect(created.status).toBe(201);
    const noor = (JSON.parse(created.body.toString()) as { user: { id: string } }).user;
    const patch = { role: 'viewer', maxBudget: { tokens: 5000, period: 'week' } };
    expect((await adminCall('PATCH', `/api/users/${noor.id}`, patch)).status).toBe(200);

    const t = await openPage(browser, gateway.url);
    open.push(t);
    await signIn(t.page, PASSWORD, { next: '/audit' });
    await t.page.waitForURL('**/audit');
    await t.page.getByLabel('Action').selectOption({ label: 'Role changed' });
    await t.page.waitForURL('**/audit?action=user.role_change');
    const rows = t.page.locator('tr.entry');
    await expect.poll(() => rows.count()).toBe(1);
    const cells = async () => (await rows.nth(0).locator('td').allInnerTexts()).map((c) => c.trim());
    expect((await cells()).slice(1, 4)).toEqual([
      'Role changed\nuser.role_change',
      'Admin token',
      `Noor (${noor.id})\nRole: member → viewer\nMaximum budget: No cap → 5,000 tokens per week`,
    ]);

    await t.page.getByLabel('Action').selectOption({ label: 'User invited' });
    await t.page.waitForURL('**/audit?action=user.invite');
    await expect
      .poll(async () => (await cells())[3])
      .toBe(`Noor (${noor.id})\nName: — → Noor\nRole: — → member\nStatus: — → invited\nSign-in: — → password`);
    await t.screenshot('e2e-audit-users');
  });
});
