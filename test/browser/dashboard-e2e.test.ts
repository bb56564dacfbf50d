/**
 * The dashboard in headless Chromium against the real gateway (real store, real admin auth)
 * in front of the llama-swap simulator. Screenshots of every page land in
 * test-results/screenshots/e2e-real-*.png (not committed).
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DEMO_CONFIG, startSimulator, type Simulator } from '../fakes/llama-swap/index.js';
import { startTestGateway, type TestGateway } from '../helpers/gateway.js';
import { json, rawRequest } from '../helpers/http.js';
import { completeSetup, launchBrowser, openPage, requireDashboardBuild, signIn, type TestPage } from './helpers.js';

const PASSWORD = 'correct horse battery staple';
let browser: Browser;
let sim: Simulator;
let gateway: TestGateway;
let setupUrl: string;

beforeAll(async () => {
  requireDashboardBuild();
  browser = await launchBrowser();
  sim = await startSimulator({ config: DEMO_CONFIG, knobs: { loadDelayMs: 300 } });
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

async function signedIn(): Promise<TestPage> {
  const t = await openPage(browser, gateway.url);
  await t.page.goto('/');
  await signIn(t.page, PASSWORD);
  await t.page.getByRole('heading', { name: 'Models' }).waitFor();
  return t;
}

describe('first run and sign-in', () => {
  it('refuses to set the password with a wrong setup token', async () => {
    const t = await openPage(browser, gateway.url);
    try {
      await t.page.goto(setupUrl.replace(/token=.*/, 'token=not-the-token'));
      await t.page.getByLabel('New password').fill(PASSWORD);
      await t.page.getByLabel('Repeat the password').fill(PASSWORD);
      await t.page.getByRole('button', { name: 'Set password and sign in' }).click();
      await t.page.getByRole('alert').first().waitFor();
      expect(t.page.url()).toContain('/setup');
      const session = json((await rawRequest(`${gateway.url}/api/session`)).body) as { setupRequired: boolean };
      expect(session.setupRequired).toBe(true);
      await t.screenshot('e2e-real-setup-wrong-token');
    } finally {
      await t.close();
    }
  });

  it('sets the password with the printed setup link and lands signed in', async () => {
    const t = await openPage(browser, gateway.url);
    try {
      await completeSetup(t.page, setupUrl, PASSWORD);
      await t.page.getByRole('heading', { name: 'Models' }).waitFor();
      expect(t.console.errors).toEqual([]);
    } finally {
      await t.close();
    }
  });

  it('rejects a wrong password, accepts the right one, and signs out', async () => {
    const t = await openPage(browser, gateway.url);
    try {
      await t.page.goto('/');
      await t.page.getByLabel('Password', { exact: true }).fill('wrong password here');
      await t.page.getByRole('button', { name: 'Sign in' }).click();
      await t.page.getByText('That password is not right.').waitFor();
      await t.screenshot('e2e-real-sign-in-wrong');
      await signIn(t.page, PASSWORD);
      await t.page.getByRole('heading', { name: 'Models' }).waitFor();
      await t.page.getByRole('link', { name: 'Settings' }).click();
      await t.screenshot('e2e-real-settings');
      await t.page.getByRole('main').getByRole('button', { name: 'Sign out' }).click();
      await t.page.getByLabel('Password', { exact: true }).waitFor();
      const cookies = await t.context.cookies();
      const session = json(
        (
          await rawRequest(`${gateway.url}/api/session`, {
            headers: { cookie: cookies.map((c) => `${c.name}=${c.value}`).join('; ') },
          })
        ).body,
      ) as { authenticated: boolean };
      expect(session.authenticated).toBe(false);
    } finally {
      await t.close();
    }
  });
});

describe('cross-site protection', () => {
  let evil: Server;
  let evilUrl: string;
  beforeAll(async () => {
    // Same site as the gateway (127.0.0.1), another origin: SameSite=Strict lets the cookie
    // through, so only the Origin check stands between this page and the admin API.
    evil = createServer((_req, res) => {
      res.writeHead(200, { 'content-type': 'text/html' });
      res.end('<!doctype html><title>evil</title>');
    });
    await new Promise<void>((r) => evil.listen(0, '127.0.0.1', r));
    evilUrl = `http://127.0.0.1:${(evil.address() as AddressInfo).port}`;
  });
  afterAll(() => new Promise<void>((r) => evil.close(() => r())));

  it('rejects a cross-origin POST that carries a valid session cookie, and creates nothing', async () => {
    const t = await signedIn();
    try {
      const before = await t.page.evaluate(
        async () => (await (await fetch('/api/keys')).json()) as { keys: unknown[] },
      );
      const evilPage = await t.context.newPage();
      await evilPage.goto(evilUrl);
      const outcome = await evilPage.evaluate(async (target) => {
        const results: Array<number | string> = [];
        for (const type of ['text/plain', 'application/x-www-form-urlencoded']) {
          try {
            const res = await fetch(`${target}/api/keys`, {
              method: 'POST',
              mode: 'no-cors',
              credentials: 'include',
              headers: { 'content-type': type },
              body: JSON.stringify({ name: 'pwned' }),
            });
            results.push(res.type);
          } catch (error) {
            results.push(String(error));
          }
        }
        return results;
      }, gateway.url);
      expect(outcome).toHaveLength(2);
      const after = await t.page.evaluate(
        async () => (await (await fetch('/api/keys')).json()) as { keys: Array<{ name: string }> },
      );
      expect(after.keys.length).toBe(before.keys.length);
      expect(
        gateway.logLines().filter((l) => l.path === '/api/keys' && l.status === 403).length,
      ).toBeGreaterThanOrEqual(2);
    } finally {
      await t.close();
    }
  });
});

describe('models page', () => {
  it('unloads a model from the UI: the simulator unloads it and the state updates', async () => {
    await sim.load('qwen3-8b');
    const t = await signedIn();
    try {
      const row = t.page.getByRole('row').filter({ has: t.page.getByText('qwen3-8b', { exact: true }) });
      await row.getByText('ready').waitFor({ timeout: 3000 });
      await t.screenshot('e2e-real-models');
      await t.page.getByRole('button', { name: 'Unload qwen3-8b' }).click();
      await t.page.getByRole('button', { name: 'Load qwen3-8b' }).waitFor({ timeout: 3000 });
      expect(sim.state('qwen3-8b')).toBe('stopped');
    } finally {
      await t.close();
    }
  });

  it('shows a state change made directly on llama-swap within 2 s', async () => {
    const t = await signedIn();
    try {
      await t.page.getByRole('button', { name: 'Load llama-3.2-3b' }).waitFor();
      await sim.load('llama-3.2-3b');
      await t.page.getByRole('button', { name: 'Unload llama-3.2-3b' }).waitFor({ timeout: 2000 });
    } finally {
      await t.close();
      await sim.unload();
    }
  });
});

describe('logs page', () => {
  it('shows log lines live and keeps streaming after a llama-swap config reload', async () => {
    const t = await signedIn();
    try {
      await t.page.getByRole('link', { name: 'Logs' }).click();
      const lines = t.page.locator('.log-lines');
      sim.log('proxy', '[INFO] first live line from the simulator');
      await lines.getByText('first live line from the simulator').waitFor({ timeout: 3000 });
      await sim.reload();
      // Logged while the gateway may still be reconnecting: llama-swap's history brings it.
      sim.log('proxy', '[INFO] a line after the reload');
      await lines.getByText('a line after the reload').waitFor({ timeout: 5000 });
      await lines.getByText('— llama-swap restarted the stream (config reload) —').waitFor({ timeout: 5000 });
      expect(await lines.locator('.marker').count()).toBe(1);
      expect(await lines.getByText('a line after the reload').count()).toBe(1);
      await t.screenshot('e2e-real-logs');
    } finally {
      await t.close();
    }
  });
});

describe('keys page', () => {
  it('creates a key that works against /v1 and is never shown again', async () => {
    const t = await signedIn();
    try {
      await t.page.getByRole('link', { name: 'API keys' }).click();
      await t.page.getByRole('button', { name: 'Create key' }).first().click();
      const dialog = t.page.getByRole('dialog', { name: 'Create an API key' });
      await dialog.getByLabel('Name').fill('browser-made');
      await dialog.getByRole('button', { name: 'Create key' }).click();
      const created = t.page.getByRole('dialog', { name: 'Key created' });
      await created.getByText('You will not see it again.').waitFor();
      const secret = await created.getByLabel('The new API key').inputValue();
      expect(secret).toMatch(/^sk-[0-9A-Za-z]{43}$/);
      await t.screenshot('e2e-real-key-created');
      await created.getByRole('button', { name: 'Copy', exact: true }).click();
      await created.getByRole('button', { name: 'Done' }).click();

      const call = await rawRequest(`${gateway.url}/v1/chat/completions`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', authorization: `Bearer ${secret}` },
        body: '{"model":"qwen","messages":[{"role":"user","content":"hi"}]}',
      });
      expect(call.status).toBe(200);
      expect((await rawRequest(`${gateway.url}/v1/models`)).status).toBe(401);

      await t.page.reload();
      await t.page
        .getByRole('cell', { name: /browser-made/ })
        .first()
        .waitFor();
      await t.screenshot('e2e-real-keys');
      expect(await t.page.content()).not.toContain(secret);
      const listed = await t.page.evaluate(async () => JSON.stringify(await (await fetch('/api/keys')).json()));
      expect(listed).not.toContain(secret);
    } finally {
      await t.close();
    }
  });
});
