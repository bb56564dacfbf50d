/**
 * The Usage page and the Keys page's limits in headless Chromium against the real gateway (real
 * SQLite store, real usage recording and limits) in front of the llama-swap simulator, whose
 * token counts are deterministic (countPromptTokens, knobs.tokens). Screenshots land in
 * test-results/screenshots/e2e-usage-*.png (not committed).
 */
import type { Browser, Page } from 'playwright-core';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { countPromptTokens, DEMO_CONFIG, startSimulator, type Simulator } from '../fakes/llama-swap/index.js';
import { startTestGateway, type TestGateway } from '../helpers/gateway.js';
import { json, rawRequest, type RawResponse } from '../helpers/http.js';
import {
  closeCheckedPages,
  inPage,
  launchBrowser,
  openPage,
  type OpenPageOptions,
  PHONE,
  requireDashboardBuild,
  signIn,
  type TestPage,
} from './helpers.js';

const PASSWORD = 'usage page passphrase';
const ADMIN_TOKEN = 'usage-e2e-admin-token';
const TOKENS = 6;
const MESSAGES = [{ role: 'user', content: 'Tell me about the gatehouse' }];
const PROMPT_TOKENS = countPromptTokens({ messages: MESSAGES });

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
    { adminPassword: PASSWORD, adminToken: ADMIN_TOKEN, logLevel: 'warn', usageCaptureBytes: 4096 },
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

async function signedIn(path: string, options: OpenPageOptions = {}): Promise<TestPage> {
  const t = await openPage(browser, gateway.url, options);
  open.push(t);
  await signIn(t.page, PASSWORD, { next: path });
  return t;
}

function chat(options: { secret?: string; model?: string; stream?: boolean } = {}): Promise<RawResponse> {
  const headers: Record<string, string> = { 'content-type': 'application/json' };
  if (options.secret) headers.authorization = `Bearer ${options.secret}`;
  return rawRequest(`${gateway.url}/v1/chat/completions`, {
    method: 'POST',
    headers,
    body: JSON.stringify({
      model: options.model ?? 'qwen',
      messages: MESSAGES,
      ...(options.stream ? { stream: true } : {}),
    }),
  });
}

async function adminApi(method: string, path: string, body?: unknown): Promise<unknown> {
  const headers: Record<string, string> = { authorization: `Bearer ${ADMIN_TOKEN}` };
  if (body !== undefined) headers['content-type'] = 'application/json';
  const res = await rawRequest(`${gateway.url}${path}`, {
    method,
    headers,
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  expect(res.status, res.body.toString()).toBeLessThan(300);
  return json(res.body);
}

/** The value shown in one totals card (`data-stat`). */
async function stat(page: Page, name: string): Promise<string> {
  return ((await page.locator(`[data-stat="${name}"] dd`).first().textContent()) ?? '').trim();
}

/** The Status cell of every row of the request log, top to bottom. */
async function logStatuses(page: Page): Promise<string[]> {
  const cells = await page.locator('table.requests tbody tr td.status .status-line').allTextContents();
  return cells.map((c) => c.replace(/\s+/g, ' ').trim());
}

async function logModels(page: Page): Promise<string[]> {
  return (await page.locator('table.requests tbody tr td.who .who-model').allTextContents()).map((c) => c.trim());
}

/** Waits until the totals card shows `n` requests (the summary is polled every 5 s). */
async function waitForRequests(page: Page, n: number, timeout = 8000): Promise<void> {
  await page.locator('[data-stat="requests"] dd', { hasText: new RegExp(`^${n}$`) }).waitFor({ timeout });
}

describe('usage page', () => {
  let alice: { id: string; secret: string };

  it('starts with a real empty state that explains the first call', async () => {
    const t = await signedIn('/usage');
    await t.page.getByRole('heading', { name: 'No calls yet' }).waitFor();
    // Nav: Usage sits between Logs and API keys, and is the current page.
    const nav = await t.page.locator('aside nav a').allTextContents();
    expect(nav.map((s) => s.trim()).slice(0, 4)).toEqual(['Models', 'Logs', 'Usage', 'API keys']);
    expect(await t.page.getByRole('link', { name: 'Usage' }).getAttribute('aria-current')).toBe('page');
    const snippet = await t.page.locator('.first-call pre').textContent();
    expect(snippet).toContain(`${gateway.url}/v1/chat/completions`);
    expect(await t.page.getByRole('link', { name: /Client setup on Endpoints/ }).getAttribute('href')).toBe(
      '/endpoints',
    );
    await t.screenshot('e2e-usage-empty');
  });

  it('shows totals, traffic per key and model, and the request log newest first', async () => {
    // Open mode (no key exists yet): one plain call and one streamed.
    expect((await chat()).status).toBe(200);
    const streamed = await chat({ stream: true });
    expect(streamed.status).toBe(200);
    expect(streamed.body.toString()).toContain('data: [DONE]');
    // A key, a call with it, and one for a model that does not exist.
    const created = (await adminApi('POST', '/api/keys', { name: 'alice' })) as { key: { id: string }; secret: string };
    alice = { id: created.key.id, secret: created.secret };
    expect((await chat({ secret: alice.secret, model: 'llama-3.2-3b' })).status).toBe(200);
    expect((await chat({ secret: alice.secret, model: 'no-such-model' })).status).toBe(404);
    // Keys exist now: a call without one is refused (and recorded, without a key).
    expect((await chat()).status).toBe(401);

    const t = await signedIn('/usage');
    await waitForRequests(t.page, 5);
    expect(await stat(t.page, 'errors')).toBe('2');
    expect(await stat(t.page, 'aborted')).toBe('0');
    expect(await stat(t.page, 'input')).toBe(String(3 * PROMPT_TOKENS));
    expect(await stat(t.page, 'output')).toBe(String(3 * TOKENS));
    expect(await stat(t.page, 'cached')).toBe('0');
    expect(await stat(t.page, 'p50')).toMatch(/^≈ /);
    // The numbers are the server's: the same as the summary route says.
    const summary = (await adminApi('GET', '/api/usage/summary?range=24h')) as {
      totals: { requests: number; inputTokens: number; outputTokens: number };
    };
    expect(summary.totals).toMatchObject({ requests: 5, inputTokens: 3 * PROMPT_TOKENS, outputTokens: 3 * TOKENS });

    // Per key: alice and the calls without a key; the chart has its legend and hidden table.
    const groups = t.page.locator('.groups-card tbody tr');
    await groups.first().waitFor();
    expect((await groups.locator('th').locator('button, .plain').allTextContents()).map((s) => s.trim())).toEqual([
      'No key',
      'alice',
    ]);
    expect(await t.page.locator('.chart .legend li').count()).toBe(2);
    const chart = t.page.getByRole('group', { name: /Requests per 15 minutes/ });
    expect(await chart.getAttribute('aria-label')).toMatch(/Arrow keys move between 15-minute periods\.$/);
    expect(await t.page.locator('.chart caption').textContent()).toMatch(
      /; 15-minute periods without calls are left out\.$/,
    );

    // Request log: newest first.
    await t.page.locator('table.requests tbody tr').nth(4).waitFor();
    expect(await logStatuses(t.page)).toEqual(['401', '404', '200', '200', '200']);
    // The refused call was stopped before its body was read: no model.
    expect(await logModels(t.page)).toEqual(['—', 'no-such-model', 'llama-3.2-3b', 'qwen', 'qwen']);
    expect(await t.page.locator('table.requests tbody tr').nth(3).locator('.stream').count()).toBe(1);
    expect(await t.page.locator('table.requests tbody tr').nth(0).locator('.error-class').textContent()).toBe(
      'missing_api_key',
    );
    await t.screenshot('e2e-usage-overview', { fullPage: true });

    // Hover the last bar: the tooltip tells the bucket's numbers.
    const plot = t.page.locator('.chart .plot');
    const box = await plot.boundingBox();
    if (!box) throw new Error('no chart');
    await t.page.mouse.move(box.x + box.width - 12, box.y + box.height / 2);
    await t.page.locator('.chart .tip', { hasText: 'requests' }).waitFor();
    await t.screenshot('e2e-usage-chart-tooltip');
    // And from the keyboard: focus, arrow keys, the same numbers announced.
    await plot.focus();
    await t.page.keyboard.press('End');
    expect(await t.page.locator('.chart [aria-live="polite"]').textContent()).toMatch(/\d+ requests/);

    // By model, from the toggle (kept in the URL).
    await t.page.getByRole('radio', { name: 'By model' }).check();
    await t.page.waitForURL('**/usage?group=model');
    await t.page.locator('.groups-card h2', { hasText: 'By model' }).waitFor();
    await t.page.locator('.groups-card tbody th', { hasText: 'no-such-model' }).waitFor();
    const byModel = (
      await t.page.locator('.groups-card tbody th button, .groups-card tbody th .plain').allTextContents()
    ).map((s) => s.trim());
    // Most requests first; the refused call named no model (the rest tie at one call each).
    expect(byModel[0]).toBe('qwen');
    expect(byModel.slice(1).sort()).toEqual(['No model', 'llama-3.2-3b', 'no-such-model']);
    await t.page.getByRole('radio', { name: 'Tokens' }).check();
    await t.page.waitForURL('**/usage?group=model&chart=tokens');
    await t.screenshot('e2e-usage-by-model-tokens');

    // Filter the log by key: only alice's two calls (filtered by the server).
    await t.page.getByLabel('Key', { exact: true }).selectOption({ label: 'alice' });
    await t.page.waitForURL(`**/usage?group=model&chart=tokens&key=${alice.id}`);
    await t.page.locator('table.requests tbody tr').nth(2).waitFor({ state: 'detached' });
    expect(await logStatuses(t.page)).toEqual(['404', '200']);
    expect(await logModels(t.page)).toEqual(['no-such-model', 'llama-3.2-3b']);
    // Status class on top: only the error.
    await t.page.getByLabel('Status').selectOption('4xx');
    await t.page.locator('table.requests tbody tr').nth(1).waitFor({ state: 'detached' });
    expect(await logStatuses(t.page)).toEqual(['404']);
    await t.page.locator('.log').evaluate((e) => e.scrollIntoView({ block: 'start' }));
    await t.screenshot('e2e-usage-log-filtered');
    await t.page.getByRole('button', { name: 'Clear filters' }).first().click();
    await t.page.locator('table.requests tbody tr').nth(4).waitFor();

    // A new call shows up by itself (summary poll → log refresh).
    expect((await chat({ secret: alice.secret })).status).toBe(200);
    await waitForRequests(t.page, 6);
    await t.page.locator('table.requests tbody tr').nth(5).waitFor({ timeout: 5000 });
    expect((await logStatuses(t.page))[0]).toBe('200');
  });

  it('opens a call in a drawer with its timings and captured bodies', async () => {
    const t = await signedIn(`/usage?key=${alice.id}`);
    const rows = t.page.locator('table.requests tbody tr');
    await rows.nth(2).waitFor();
    // Second row: the 404 for a model that does not exist.
    await rows.nth(1).locator('td.who').click();
    const drawer = t.page.getByRole('dialog', { name: 'POST /v1/chat/completions' });
    await drawer.waitFor();
    await drawer.getByText('no-such-model').first().waitFor();
    await drawer.getByText('Tell me about the gatehouse').waitFor();
    expect(await drawer.locator('.status-line').textContent()).toContain('404');
    await t.screenshot('e2e-usage-drawer-404');
    await t.page.keyboard.press('Escape');
    await drawer.waitFor({ state: 'hidden' });

    // The first row (newest): a 200 with its token counts, opened from the keyboard.
    await rows
      .nth(0)
      .getByRole('button', { name: /Details of the call/ })
      .focus();
    await t.page.keyboard.press('Enter');
    await drawer.waitFor();
    await drawer.locator('pre.body').nth(1).waitFor();
    const facts = ((await drawer.locator('dl.facts.cols').first().textContent()) ?? '').replace(/\s+/g, '');
    expect(facts).toContain(`Input${PROMPT_TOKENS}`);
    expect(facts).toContain(`Output${TOKENS}`);
    await t.screenshot('e2e-usage-drawer-200');
    await t.page.keyboard.press('Escape');
    await drawer.waitFor({ state: 'hidden' });
    // Focus went back to the row's button.
    expect(await inPage(t.page, "document.activeElement?.getAttribute('aria-label') ?? ''")).toMatch(
      /^Details of the call/,
    );
  });

  it('tells a viewer that a call’s captured bodies are withheld for their role, and shows none', async () => {
    await adminApi('POST', '/api/users', { name: 'vera', role: 'viewer', password: PASSWORD });
    const t = await openPage(browser, gateway.url);
    open.push(t);
    await signIn(t.page, PASSWORD, { name: 'vera', next: `/usage?key=${alice.id}` });
    const rows = t.page.locator('table.requests tbody tr');
    await rows.nth(0).locator('td.who').click();
    const drawer = t.page.getByRole('dialog', { name: 'POST /v1/chat/completions' });
    await drawer.getByText(/withheld for your role \(viewer\)/).waitFor();
    expect(await drawer.locator('pre.body').count()).toBe(0);
    expect(await drawer.textContent()).not.toContain('Tell me about the gatehouse');
    await t.screenshot('e2e-usage-drawer-withheld');
  });

  it('sets a key’s limits in the Keys UI; the third call in a minute is refused and shows as 429', async () => {
    const t = await signedIn('/keys');
    await t.page.getByRole('button', { name: 'Create key' }).first().click();
    const dialog = t.page.getByRole('dialog', { name: 'Create an API key' });
    await dialog.getByLabel('Name').fill('limited');
    // A bad value is caught in the form.
    await dialog.getByLabel('Requests / minute').fill('0');
    await dialog.getByRole('button', { name: 'Create key' }).click();
    await dialog.getByText('At least 1 (empty for no limit).').waitFor();
    await dialog.getByLabel('Requests / minute').fill('2');
    await t.screenshot('e2e-usage-key-limits-dialog');
    await dialog.getByRole('button', { name: 'Create key' }).click();
    const created = t.page.getByRole('dialog', { name: 'Key created' });
    const secret = await created.getByLabel('The new API key').inputValue();
    await created.getByRole('button', { name: 'Copy', exact: true }).click();
    await created.getByRole('button', { name: 'Done' }).click();

    const row = t.page.getByRole('row').filter({ has: t.page.getByText('limited', { exact: true }) });
    expect((await row.locator('td[data-label="Limits"]').textContent())?.trim()).toBe('2 rpm');
    expect(
      (
        await t.page
          .getByRole('row')
          .filter({ has: t.page.getByText('alice', { exact: true }) })
          .locator('td[data-label="Limits"]')
          .textContent()
      )?.trim(),
    ).toBe('no limits');
    // No Redis: limits are counted by this process alone, and the page says so.
    expect(await t.page.getByTestId('limits-scope').textContent()).toContain('per replica (per gateway process)');
    const keys = (await adminApi('GET', '/api/keys')) as { keys: Array<{ name: string; id: string; limits: unknown }> };
    const limited = keys.keys.find((k) => k.name === 'limited');
    expect(limited?.limits).toEqual({ rpm: 2, tpm: null, concurrent: null });
    await t.screenshot('e2e-usage-keys-limits');

    const statuses = [];
    for (let i = 0; i < 3; i++) statuses.push((await chat({ secret })).status);
    expect(statuses).toEqual([200, 200, 429]);

    // Edit: clear rpm, set concurrent; the PATCH sends only what changed (null clears).
    await t.page.getByRole('button', { name: 'Edit limited' }).click();
    const edit = t.page.getByRole('dialog', { name: 'Edit “limited”' });
    expect(await edit.getByLabel('Requests / minute').inputValue()).toBe('2');
    await edit.getByLabel('Requests / minute').fill('');
    await edit.getByLabel('Concurrent').fill('3');
    await edit.getByRole('button', { name: 'Save changes' }).click();
    await edit.waitFor({ state: 'hidden' });
    expect((await row.locator('td[data-label="Limits"]').textContent())?.trim()).toBe('3 at once');
    const after = (await adminApi('GET', '/api/keys')) as { keys: Array<{ name: string; limits: unknown }> };
    expect(after.keys.find((k) => k.name === 'limited')?.limits).toEqual({ rpm: null, tpm: null, concurrent: 3 });

    await t.page.getByRole('link', { name: 'Usage' }).click();
    await waitForRequests(t.page, 9);
    await t.page.getByLabel('Status').selectOption('429');
    const rows = t.page.locator('table.requests tbody tr');
    // The unfiltered table (whose newest row is that 429) stays until the server answers.
    await expect.poll(() => rows.count()).toBe(1);
    await rows.first().locator('.error-class', { hasText: 'rate_limited' }).waitFor();
    expect(await logStatuses(t.page)).toEqual(['429']);
    expect((await rows.first().locator('td.who .who-key').textContent())?.trim()).toBe('limited');
    await t.page.locator('.log').evaluate((e) => e.scrollIntoView({ block: 'start' }));
    await t.screenshot('e2e-usage-429');
  });

  it('renders in the dark theme and at phone width', async () => {
    const dark = await signedIn('/usage', { colorScheme: 'dark' });
    await waitForRequests(dark.page, 9);
    await dark.page.locator('table.requests tbody tr').nth(8).waitFor();
    await dark.screenshot('e2e-usage-dark', { fullPage: true });

    const phone = await signedIn('/usage', { viewport: PHONE });
    await waitForRequests(phone.page, 9);
    await phone.page.locator('table.requests tbody tr').nth(8).waitFor();
    await phone.screenshot('e2e-usage-phone');
    await phone.page.locator('.groups-card').evaluate((e) => e.scrollIntoView({ block: 'start' }));
    await phone.screenshot('e2e-usage-phone-groups');
    await phone.page.locator('table.requests').evaluate((e) => e.scrollIntoView({ block: 'start' }));
    await phone.screenshot('e2e-usage-phone-log');
    expect(await inPage(phone.page, 'document.documentElement.scrollWidth')).toBeLessThanOrEqual(PHONE.width);
    await phone.page
      .locator('table.requests tbody tr')
      .first()
      .getByRole('button', { name: /Details of the call/ })
      .click();
    await phone.page.getByRole('dialog').waitFor();
    await phone.screenshot('e2e-usage-phone-drawer');
  });
});
