/**
 * Findings of an operator's walkthrough, in headless Chromium against the real gateway (real
 * store, real admin auth) in front of the llama-swap simulator. The tests run in order: the
 * first sets the password through a setup link pasted into a tab already on /setup.
 */
import type { IncomingMessage } from 'node:http';
import type { Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DEMO_CONFIG, startSimulator, type Simulator } from '../fakes/llama-swap/index.js';
import { startTestGateway, type TestGateway } from '../helpers/gateway.js';
import { rawRequest } from '../helpers/http.js';
import { launchBrowser, openPage, PHONE, requireDashboardBuild, signIn, type TestPage } from './helpers.js';

const PASSWORD = 'correct horse battery staple';
let browser: Browser;
let sim: Simulator;
let gateway: TestGateway;
let setupUrl: string;
/** Secret of the key the banner test creates, for the /v1 calls of later tests. */
let secret = '';

beforeAll(async () => {
  requireDashboardBuild();
  browser = await launchBrowser();
  sim = await startSimulator({ config: DEMO_CONFIG });
  gateway = await startTestGateway(sim.url, {}, {}, { withStore: true });
  const link = /(http:\/\/\S+\/setup#token=[A-Za-z0-9_-]+)/.exec(gateway.logText());
  if (!link) throw new Error(`no setup link in the log:\n${gateway.logText()}`);
  setupUrl = link[1]!;
}, 60_000);
afterAll(async () => {
  await browser?.close();
  await gateway?.close();
  await sim?.close();
});

async function signedIn(options: Parameters<typeof openPage>[2] = {}): Promise<TestPage> {
  const t = await openPage(browser, gateway.url, options);
  await signIn(t.page, PASSWORD);
  await t.page.getByRole('heading', { name: 'Models' }).waitFor();
  return t;
}

const banner = (t: TestPage) => t.page.getByTestId('open-api-banner');

describe('operator walkthrough', () => {
  it('reads a setup link pasted into a tab already on /setup', async () => {
    const t = await openPage(browser, gateway.url);
    try {
      await t.page.goto('/setup');
      await t.page.getByText('This address has no setup token.').waitFor();
      // Same path, new fragment: the browser changes the hash without loading the page.
      await t.page.goto(setupUrl);
      await t.page.getByLabel('New password').fill(PASSWORD);
      await t.page.getByLabel('Repeat the password').fill(PASSWORD);
      await t.page.getByRole('button', { name: 'Set password and sign in' }).click();
      await t.page.getByRole('heading', { name: 'Models' }).waitFor();
      expect(t.console.errors).toEqual([]);
    } finally {
      await t.close();
    }
  });

  it('says on every page that the API is open until a key exists, and drops the banner once one is made', async () => {
    const t = await signedIn();
    try {
      await banner(t).getByText('anyone who can reach Gatehouse can use your models').waitFor();
      await t.page.getByRole('link', { name: 'Usage' }).click();
      await t.page.getByRole('heading', { name: 'Usage' }).waitFor();
      await banner(t).waitFor();

      await banner(t).getByRole('link', { name: 'Create a key' }).click();
      const dialog = t.page.getByRole('dialog', { name: 'Create an API key' });
      await dialog.waitFor();
      expect(new URL(t.page.url()).search).toBe('');
      // An error from an empty submit goes as soon as the name is typed.
      await dialog.getByRole('button', { name: 'Create key' }).click();
      const nameError = dialog.getByText('Give the key a name');
      await nameError.waitFor();
      await dialog.getByLabel('Name').fill('laptop');
      await nameError.waitFor({ state: 'detached' });
      await dialog.getByRole('button', { name: 'Create key' }).click();
      const created = t.page.getByRole('dialog', { name: 'Key created' });
      secret = await created.getByLabel('The new API key').inputValue();
      await banner(t).waitFor({ state: 'detached' });
      await created.getByRole('button', { name: 'Copy', exact: true }).click();
      await created.getByRole('button', { name: 'Done' }).click();
      await t.page.getByRole('link', { name: 'Models' }).click();
      await t.page.getByRole('heading', { name: 'Models' }).waitFor();
      expect(await banner(t).count()).toBe(0);
    } finally {
      await t.close();
    }
  });

  it('lists keys newest first before and after a reload, and refreshes "Last used" while the page is open', async () => {
    const t = await openPage(browser, gateway.url);
    try {
      // Fake timers from the first script on: the page's 15 s refresh and 30 s tick run when told.
      await t.context.clock.install();
      await signIn(t.page, PASSWORD);
      await t.page.getByRole('link', { name: 'API keys' }).click();
      await t.page.getByRole('button', { name: 'Create key' }).first().click();
      const dialog = t.page.getByRole('dialog', { name: 'Create an API key' });
      await dialog.getByLabel('Name').fill('ci-runner');
      await dialog.getByRole('button', { name: 'Create key' }).click();
      const created = t.page.getByRole('dialog', { name: 'Key created' });
      await created.getByRole('button', { name: 'Copy', exact: true }).click();
      await created.getByRole('button', { name: 'Done' }).click();

      const names = t.page.locator('tbody tr .name');
      await expect.poll(() => names.allTextContents()).toEqual(['ci-runner', 'laptop']);
      await t.page.reload();
      await expect.poll(() => names.allTextContents()).toEqual(['ci-runner', 'laptop']);

      const lastUsed = t.page.locator('tbody tr', { hasText: 'laptop' }).locator('.used');
      expect(await lastUsed.textContent()).toBe('never');
      const call = await rawRequest(`${gateway.url}/v1/models`, { headers: { authorization: `Bearer ${secret}` } });
      expect(call.status).toBe(200);
      await t.page.clock.fastForward(15_000);
      await expect.poll(() => lastUsed.textContent()).toBe('just now');
      // The shared clock ticks every 30 s; the call is now over a minute old in the page's time.
      await t.page.clock.fastForward(60_000);
      await expect.poll(() => lastUsed.textContent()).toBe('1 min ago');
    } finally {
      await t.close();
    }
  });

  it('signs out from the header on a phone', async () => {
    const t = await signedIn({ viewport: PHONE });
    try {
      await t.page.getByRole('link', { name: 'Usage' }).waitFor({ state: 'hidden' });
      const button = t.page.getByRole('banner').getByRole('button', { name: 'Sign out' });
      expect(await button.isVisible()).toBe(true);
      await button.click();
      await t.page.getByLabel('Password', { exact: true }).waitFor();
      expect(new URL(t.page.url()).pathname).toBe('/sign-in');
    } finally {
      await t.close();
    }
  });

  it('loads the tab icon once, however often the operator navigates', async () => {
    // What reaches the server: a browser's own cache answers the rest without a request.
    const asked: string[] = [];
    const record = (request: IncomingMessage) => asked.push(request.url ?? '');
    gateway.app.server.on('request', record);
    const t = await signedIn();
    try {
      for (const link of ['Logs', 'API keys', 'Usage', 'Models', 'Settings']) {
        await t.page.getByRole('link', { name: link }).click();
        await t.page
          .getByRole('heading', { name: link === 'Logs' ? /Logs/ : link })
          .first()
          .waitFor();
      }
      await t.page.reload();
      await t.page.getByRole('heading', { name: 'Settings' }).waitFor();
      const href = await t.page.locator('link[rel="icon"]').getAttribute('href');
      expect(href).toMatch(/^\/assets\/favicon-[\w-]+\.svg$/);
      const icon = await rawRequest(`${gateway.url}${href}`);
      expect(icon.headers['cache-control']).toBe('public, max-age=31536000, immutable');
      // One from the browser (at most: it may have it from an earlier test), one from this test.
      expect(asked.filter((url) => url.includes('favicon')).length).toBeLessThanOrEqual(2);
    } finally {
      gateway.app.server.off('request', record);
      await t.close();
    }
  });

  it('shows Gatehouse’s log as readable lines, without the dashboard’s own polling', async () => {
    const t = await signedIn();
    try {
      const call = await rawRequest(`${gateway.url}/v1/models`, { headers: { authorization: `Bearer ${secret}` } });
      expect(call.status).toBe(200);
      await t.page.goto('/logs?source=gateway');
      const lines = t.page.locator('.log-lines .line');
      await lines
        .filter({ hasText: /^\d\d:\d\d:\d\d\.\d{3} 200 GET \/v1\/models [\d.]+ ms key=laptop/ })
        .first()
        .waitFor();
      const texts = await lines.allTextContents();
      expect(texts.filter((text) => text.includes('"level"'))).toEqual([]);
      // The sign-in page's own check, before any session exists, is the only read of /api logged.
      expect(texts.filter((text) => / GET \/api\/(?!session )/.test(text))).toEqual([]);
      expect(texts.some((text) => /^\d\d:\d\d:\d\d\.\d{3} 200 POST \/api\/login /.test(text))).toBe(true);
    } finally {
      await t.close();
    }
  });
});
