/**
 * The Models page's Queue panel and a key's priority in headless Chromium against the real
 * gateway (GATEHOUSE_MAX_INFLIGHT=1, real SQLite store) in front of an upstream that holds each
 * call until the test answers it. Screenshots land in test-results/screenshots/e2e-queue-*.png.
 */
import type { Browser } from 'playwright-core';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import type { ApiKey } from '../../src/admin-api/types.js';
import { startTestGateway, type TestGateway } from '../helpers/gateway.js';
import { startHoldingUpstream, type HoldingUpstream } from '../helpers/holding-upstream.js';
import { json, rawRequest } from '../helpers/http.js';
import {
  closeCheckedPages,
  launchBrowser,
  openPage,
  PHONE,
  requireDashboardBuild,
  signIn,
  type TestPage,
} from './helpers.js';

const PASSWORD = 'queue page passphrase';
const ADMIN_TOKEN = 'queue-e2e-admin-token';

let browser: Browser;
let upstream: HoldingUpstream;
let gateway: TestGateway;
const open: TestPage[] = [];

beforeAll(async () => {
  requireDashboardBuild();
  browser = await launchBrowser();
  upstream = await startHoldingUpstream();
  gateway = await startTestGateway(
    upstream.url,
    { adminPassword: PASSWORD, adminToken: ADMIN_TOKEN, logLevel: 'warn', maxInflight: 1 },
    {},
    { withStore: true },
  );
}, 60_000);

afterEach(() => closeCheckedPages(open));

afterAll(async () => {
  await browser?.close();
  await gateway?.close();
  await upstream?.close();
});

async function signedIn(path: string, viewport?: { width: number; height: number }): Promise<TestPage> {
  const t = await openPage(browser, gateway.url, viewport ? { viewport } : {});
  open.push(t);
  await signIn(t.page, PASSWORD, { next: path });
  return t;
}

async function adminApi(method: string, path: string, body?: unknown) {
  const res = await rawRequest(`${gateway.url}${path}`, {
    method,
    headers: { authorization: `Bearer ${ADMIN_TOKEN}`, 'content-type': 'application/json' },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  expect(res.status, res.body.toString()).toBeLessThan(300);
  return json(res.body);
}

function chat(id: string, secret: string) {
  return rawRequest(`${gateway.url}/v1/chat/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'x-request-id': id, authorization: `Bearer ${secret}` },
    body: JSON.stringify({ model: 'qwen', messages: [{ role: 'user', content: 'hi' }] }),
  });
}

describe('the Queue panel on the Models page', () => {
  it('shows a waiting call with its key name and priority, and drops it when it is done', async () => {
    const batch = (await adminApi('POST', '/api/keys', { name: 'batch-jobs' })) as { secret: string };
    const ops = (await adminApi('POST', '/api/keys', { name: 'ops-console', priority: 3 })) as { secret: string };
    const t = await signedIn('/models');
    const panel = t.page.getByRole('region', { name: 'Queue' });
    await panel.getByText('Nothing is running or waiting.').waitFor();

    const held = chat('held-call', batch.secret);
    await upstream.arrived(1);
    const waiting = chat('waiting-call', ops.secret);
    const row = panel.locator('li[data-call="waiting-call"]');
    await row.waitFor();
    await expect.poll(() => row.innerText()).toMatch(/waiting #1\s+ops-console\s+priority \+3/);
    // The upstream has no /running, so the forwarded call counts as loading its model.
    await panel.getByText('loading', { exact: true }).waitFor();
    await t.screenshot('e2e-queue-models-desktop', { fullPage: true });

    const phone = await signedIn('/models', PHONE);
    await phone.page.locator('li[data-call="waiting-call"]').waitFor();
    await phone.page.getByRole('region', { name: 'Queue' }).scrollIntoViewIfNeeded();
    await phone.screenshot('e2e-queue-models-phone', { fullPage: true });

    upstream.answer(0);
    await upstream.arrived(2);
    await row.waitFor({ state: 'detached' });
    upstream.answer(1);
    expect((await held).status).toBe(200);
    expect((await waiting).status).toBe(200);
    await panel.getByText('Nothing is running or waiting.').waitFor();
    await t.screenshot('e2e-queue-models-empty');
  });
});

describe('a key’s priority', () => {
  it('stores the priority chosen in the create dialog and shows it on the Keys page', async () => {
    const t = await signedIn('/keys');
    await t.page.getByRole('button', { name: 'Create key' }).first().click();
    const dialog = t.page.getByRole('dialog', { name: 'Create an API key' });
    await dialog.getByLabel('Name').fill('priority-three');
    const priority = dialog.getByLabel('Priority');
    expect(await priority.inputValue()).toBe('0');
    await priority.fill('3');
    await t.screenshot('e2e-queue-key-dialog');
    await dialog.getByRole('button', { name: 'Create key' }).click();
    const created = t.page.getByRole('dialog', { name: 'Key created' });
    await created.getByRole('button', { name: 'Copy', exact: true }).click();
    await created.getByRole('button', { name: 'Done' }).click();

    const { keys } = (await adminApi('GET', '/api/keys')) as { keys: ApiKey[] };
    expect(keys.find((k) => k.name === 'priority-three')?.priority).toBe(3);
    const row = t.page.getByRole('row').filter({ hasText: 'priority-three' });
    await row.getByText('priority +3').waitFor();
    await t.screenshot('e2e-queue-keys-page');
  });
});
