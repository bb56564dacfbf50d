/**
 * Key budgets in the Keys page, in headless Chromium against the real gateway (SQLite store,
 * usage recording) in front of the llama-swap simulator: a budget set in the key dialog, calls
 * made with the key, and the bars moving, with the warning from 80 %. Screenshots land in
 * test-results/screenshots/e2e-budget-*.png (not committed).
 */
import type { Browser } from 'playwright-core';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { countPromptTokens, DEMO_CONFIG, startSimulator, type Simulator } from '../fakes/llama-swap/index.js';
import { startTestGateway, type TestGateway } from '../helpers/gateway.js';
import { json, rawRequest } from '../helpers/http.js';
import { closeCheckedPages, launchBrowser, openPage, requireDashboardBuild, signIn, type TestPage } from './helpers.js';

const PASSWORD = 'budget page passphrase';
const ADMIN_TOKEN = 'budget-e2e-admin-token';
const TOKENS = 6;
const MESSAGES = [{ role: 'user', content: 'Tell me about the gatehouse' }];
const CALL_TOKENS = countPromptTokens({ messages: MESSAGES }) + TOKENS;

let browser: Browser;
let sim: Simulator;
let gateway: TestGateway;
const open: TestPage[] = [];

beforeAll(async () => {
  requireDashboardBuild();
  browser = await launchBrowser();
  sim = await startSimulator({ config: DEMO_CONFIG, knobs: { tokens: TOKENS, loadDelayMs: 30 } });
  gateway = await startTestGateway(
    sim.url,
    { adminPassword: PASSWORD, adminToken: ADMIN_TOKEN, logLevel: 'warn' },
    {},
    { withStore: true },
  );
}, 60_000);

afterEach(() => closeCheckedPages(open));

afterAll(async () => {
  await browser?.close();
  await gateway?.close();
  await sim?.close();
});

async function chat(secret: string): Promise<number> {
  const res = await rawRequest(`${gateway.url}/v1/chat/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: `Bearer ${secret}` },
    body: JSON.stringify({ model: 'qwen', max_tokens: 16, messages: MESSAGES }),
  });
  return res.status;
}

describe('key budgets in the dashboard', () => {
  it('sets a budget in the key dialog; the bars move with the calls and warn at 80 %', async () => {
    const t = await openPage(browser, gateway.url);
    open.push(t);
    await signIn(t.page, PASSWORD, { next: '/keys' });
    await t.page.getByRole('button', { name: 'Create key' }).first().click();
    const dialog = t.page.getByRole('dialog', { name: 'Create an API key' });
    await dialog.getByLabel('Name').fill('kids laptop');
    await dialog.getByLabel('Requests', { exact: true }).fill('abc');
    await dialog.getByRole('button', { name: 'Create key' }).click();
    await dialog.getByText('A whole number, or empty for no budget.').waitFor();
    await dialog.getByLabel('Requests', { exact: true }).fill('5');
    await dialog.getByLabel('Tokens', { exact: true }).fill('10,000');
    await dialog.getByLabel('Per', { exact: true }).selectOption('week');
    await t.screenshot('e2e-budget-dialog');
    await dialog.getByRole('button', { name: 'Create key' }).click();
    const created = t.page.getByRole('dialog', { name: 'Key created' });
    const secret = await created.getByLabel('The new API key').inputValue();
    await created.getByRole('button', { name: 'Copy', exact: true }).click();
    await created.getByRole('button', { name: 'Done' }).click();

    const res = await rawRequest(`${gateway.url}/api/keys`, { headers: { authorization: `Bearer ${ADMIN_TOKEN}` } });
    const key = (json(res.body) as { keys: Array<{ name: string; budget: unknown }> }).keys.find(
      (k) => k.name === 'kids laptop',
    );
    expect(key?.budget).toEqual({ tokens: 10_000, requests: 5, gpuSeconds: null, period: 'week' });

    const row = t.page.getByRole('row').filter({ has: t.page.getByText('kids laptop', { exact: true }) });
    const requests = row.locator('li.budget[data-kind="requests"]');
    const tokens = row.locator('li.budget[data-kind="tokens"]');
    await expect.poll(() => requests.locator('.budget-text').textContent()).toBe('0 / 5 requests');
    expect(await row.getByText(/per week, resets in/).count()).toBe(1);

    for (let i = 0; i < 2; i++) expect(await chat(secret)).toBe(200);
    await t.page.reload();
    await expect.poll(() => requests.locator('.budget-text').textContent()).toBe('2 / 5 requests');
    expect(await tokens.locator('.budget-text').textContent()).toBe(`${2 * CALL_TOKENS} / 10,000 tokens`);
    expect(Number(await requests.locator('progress').getAttribute('value'))).toBeCloseTo(0.4);
    expect(await requests.evaluate((li) => li.classList.contains('warn'))).toBe(false);

    for (let i = 0; i < 2; i++) expect(await chat(secret)).toBe(200);
    await t.page.reload();
    await expect.poll(() => requests.locator('.budget-text').textContent()).toBe('4 / 5 requests · 80 % used');
    expect(await requests.evaluate((li) => li.classList.contains('warn'))).toBe(true);
    expect(await tokens.evaluate((li) => li.classList.contains('warn'))).toBe(false);
    await t.screenshot('e2e-budget-bars');

    expect(await chat(secret)).toBe(200);
    expect(await chat(secret)).toBe(429);
  });
});
