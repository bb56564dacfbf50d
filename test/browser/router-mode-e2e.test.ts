/**
 * The dashboard in headless Chromium against the real gateway in front of the llama-server
 * router simulator, the upstream kind detected: the Models page lists, loads and unloads, and the
 * Logs page says plainly that this upstream streams no logs.
 */
import type { Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startRouterSimulator, type RouterSimulator } from '../fakes/llama-server-router/index.js';
import { startTestGateway, type TestGateway } from '../helpers/gateway.js';
import { completeSetup, launchBrowser, openPage, requireDashboardBuild } from './helpers.js';

const PASSWORD = 'correct horse battery staple';
let browser: Browser;
let sim: RouterSimulator;
let gateway: TestGateway;

beforeAll(async () => {
  requireDashboardBuild();
  browser = await launchBrowser();
  sim = await startRouterSimulator({
    models: [{ id: 'qwen', aliases: ['gpt-4o-mini'] }, { id: 'llama' }],
    loadDelayMs: 100,
  });
  gateway = await startTestGateway(sim.url, {}, {}, { withStore: true, upstreamKind: 'auto' });
}, 60_000);
afterAll(async () => {
  await browser?.close();
  await gateway?.close();
  await sim?.close();
});

describe('the dashboard in front of llama-server in router mode', () => {
  it('loads and unloads a model from the Models page, and the Logs page says there are no upstream logs', async () => {
    const link = /(http:\/\/\S+\/setup#token=[A-Za-z0-9_-]+)/.exec(gateway.logText());
    if (!link) throw new Error(`no setup link in the log:\n${gateway.logText()}`);
    const t = await openPage(browser, gateway.url);
    try {
      await completeSetup(t.page, link[1]!, PASSWORD);
      await t.page.getByRole('heading', { name: 'Models', exact: true }).waitFor();
      await t.page.getByRole('button', { name: 'Load qwen' }).click();
      await t.page.getByRole('button', { name: 'Unload qwen' }).waitFor({ timeout: 5000 });
      expect(sim.model('qwen').status).toBe('loaded');
      await t.screenshot('e2e-router-models');
      await t.page.getByRole('button', { name: 'Unload qwen' }).click();
      await t.page.getByRole('button', { name: 'Load qwen' }).waitFor({ timeout: 5000 });
      expect(sim.model('qwen').status).toBe('unloaded');

      await t.page.goto('/logs');
      const note = t.page.getByRole('note');
      await note.getByText('No llama-server logs here').waitFor();
      expect(await note.textContent()).toMatch(/no log or event stream/);
      await t.screenshot('e2e-router-logs');
    } finally {
      await t.close();
    }
  });
});
