/**
 * The dashboard's live stream in headless Chromium against the real gateway and the llama-swap
 * simulator: open dashboards cost llama-swap nothing while they stay open, the Logs page says
 * why llama-swap is not live, and ten tabs of one browser share one stream.
 */
import type { Browser, Page } from 'playwright-core';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { DEMO_CONFIG, startSimulator, type Simulator } from '../fakes/llama-swap/index.js';
import { startTestGateway, type TestGateway } from '../helpers/gateway.js';
import { completeSetup, launchBrowser, openPage, requireDashboardBuild, signIn, type TestPage } from './helpers.js';

const PASSWORD = 'correct horse battery staple';
let browser: Browser;
let sim: Simulator;
let gateway: TestGateway;
const opened: TestPage[] = [];

beforeAll(async () => {
  requireDashboardBuild();
  browser = await launchBrowser();
  sim = await startSimulator({ config: DEMO_CONFIG, knobs: { loadDelayMs: 200 } });
  gateway = await startTestGateway(sim.url, {}, {}, { withStore: true });
  const link = /(http:\/\/\S+\/setup#token=[A-Za-z0-9_-]+)/.exec(gateway.logText());
  if (!link) throw new Error(`no setup link in the log:\n${gateway.logText()}`);
  const t = await openPage(browser, gateway.url);
  await completeSetup(t.page, link[1]!, PASSWORD);
  await t.close();
}, 60_000);
afterEach(async () => {
  for (const t of opened.splice(0)) await t.close();
  await sim.unload();
});
afterAll(async () => {
  await browser?.close();
  await gateway?.close();
  await sim?.close();
});

/** A signed-in browser (its own context), its first page on `path`. */
async function dashboard(path: string, options: { fakeClock?: boolean } = {}): Promise<TestPage> {
  const t = await openPage(browser, gateway.url);
  opened.push(t);
  if (options.fakeClock) await t.context.clock.install();
  await signIn(t.page, PASSWORD, { next: path });
  return t;
}

async function tab(t: TestPage, path: string): Promise<Page> {
  const page = await t.context.newPage();
  await page.goto(path);
  return page;
}

const modelsLoaded = (page: Page) => page.getByRole('button', { name: /^(Load|Unload) qwen3-8b$/ }).waitFor();
const logsLoaded = (page: Page, text: string) => page.locator('.log-lines').getByText(text).first().waitFor();
/** Lines llama-swap's proxy log holds for requests Gatehouse made. */
const gatehouseLines = () =>
  sim
    .logHistory('proxy')
    .split('\n')
    .filter((line) => line.includes('"gatehouse"'));

describe('live dashboards', () => {
  it('keep llama-swap quiet: three open dashboards on Models and Logs add no request over two minutes of their time', async () => {
    sim.log('proxy', '[INFO] ready for the dashboards');
    const pages: Page[] = [];
    for (let i = 0; i < 3; i++) {
      const t = await dashboard('/models', { fakeClock: true });
      await modelsLoaded(t.page);
      const logs = await tab(t, '/logs');
      await logsLoaded(logs, 'ready for the dashboards');
      pages.push(t.page, logs);
    }
    const requestsBefore = sim.received.length;
    const linesBefore = gatehouseLines().length;

    // Two minutes pass in every page (each page's timers run), then llama-swap changes.
    for (const page of pages) await page.clock.runFor(120_000);
    await sim.load('qwen3-8b');
    sim.log('proxy', '[INFO] after two minutes');
    for (const page of pages.filter((_, i) => i % 2 === 0))
      await page.getByRole('button', { name: 'Unload qwen3-8b' }).waitFor({ timeout: 5000 });
    for (const page of pages.filter((_, i) => i % 2 === 1)) await logsLoaded(page, 'after two minutes');

    // The load itself, plus at most one read of the started model's TTL.
    const fromGatehouse = sim.received.slice(requestsBefore).filter((r) => r.headers['user-agent'] === 'gatehouse');
    expect(fromGatehouse.map((r) => `${r.method} ${r.path}`)).toEqual(
      fromGatehouse.length === 0 ? [] : ['GET /running'],
    );
    expect(gatehouseLines().length - linesBefore).toBeLessThanOrEqual(1);
    expect(sim.received.filter((r) => r.path === '/api/events' && r.closedAt === undefined)).toHaveLength(1);
  });

  it('shows Unavailable with the reason while llama-swap is down, and Live again once it is back', async () => {
    const t = await dashboard('/logs');
    const status = t.page.getByRole('status').filter({ hasText: /Live|Reconnecting|Unavailable|Connecting/ });
    await status.getByText('Live').waitFor();
    const port = sim.port;
    await sim.close();
    try {
      await status.filter({ hasText: /Reconnecting|Unavailable/ }).waitFor({ timeout: 10_000 });
      await t.page.locator('#log-status-reason').filter({ hasText: 'ECONNREFUSED' }).waitFor({ timeout: 10_000 });
      await status.filter({ hasText: 'Unavailable' }).waitFor({ timeout: 10_000 });
      await t.screenshot('live-logs-unavailable');
      expect(await t.page.locator('.marker').allTextContents()).toEqual(['— lost llama-swap; reconnecting —']);
    } finally {
      sim = await startSimulator({ config: DEMO_CONFIG, knobs: { loadDelayMs: 200 }, port });
    }
    await status.getByText('Live', { exact: true }).waitFor({ timeout: 10_000 });
    expect(await t.page.getByText('ECONNREFUSED').count()).toBe(0);
  });

  it('serves ten tabs of one browser from one stream: all load, and all follow a change made after', async () => {
    sim.log('proxy', '[INFO] ten tabs are opening');
    const first = await dashboard('/models');
    const models: Page[] = [first.page];
    const logs: Page[] = [];
    for (let i = 1; i < 10; i++) {
      if (i % 2 === 0) models.push(await tab(first, '/models'));
      else logs.push(await tab(first, '/logs'));
    }
    for (const page of models) await modelsLoaded(page);
    for (const page of logs) await logsLoaded(page, 'ten tabs are opening');

    await sim.load('qwen3-8b');
    sim.log('proxy', '[INFO] written after all ten opened');
    for (const page of models) await page.getByRole('button', { name: 'Unload qwen3-8b' }).waitFor({ timeout: 5000 });
    for (const page of logs) await logsLoaded(page, 'written after all ten opened');

    // One stream for the ten tabs (closed dashboards of earlier tests may still be leaving).
    await expect.poll(() => gateway.view!.watchers, { timeout: 3000 }).toBe(1);

    // The leading tab closes: another takes over the stream, and the tabs stay live.
    await first.page.close();
    await expect.poll(() => gateway.view!.watchers, { timeout: 5000 }).toBe(1);
    sim.log('proxy', '[INFO] written after the leader left');
    for (const page of logs) await logsLoaded(page, 'written after the leader left');
  });

  it('pauses the stream while no tab is visible, and resumes with what was written meanwhile', async () => {
    const t = await dashboard('/logs', { fakeClock: true });
    await t.page.getByRole('status').getByText('Live').waitFor();
    await expect.poll(() => gateway.view!.watchers, { timeout: 3000 }).toBe(1);
    const setVisibility = (state: string) =>
      t.page.evaluate(
        `Object.defineProperty(document, 'visibilityState', { configurable: true, get: () => '${state}' });` +
          `document.dispatchEvent(new Event('visibilitychange'))`,
      );
    await setVisibility('hidden');
    await t.page.clock.runFor(2000);
    await expect.poll(() => gateway.view!.watchers, { timeout: 3000 }).toBe(0);
    sim.log('proxy', '[INFO] written while no tab was visible');
    await setVisibility('visible');
    await logsLoaded(t.page, 'written while no tab was visible');
    expect(await t.page.locator('.log-lines').getByText('written while no tab was visible').count()).toBe(1);
    await t.page.getByRole('status').getByText('Live').waitFor();
  });
});
