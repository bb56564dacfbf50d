/**
 * Every dashboard page in Chromium against the real gateway (real store, real admin API) in
 * front of the llama-swap simulator, with the demo household of demo-admin.ts and a month of
 * traffic (demo-usage.ts) written straight into the store: the flows of each page and the states
 * that are hard to meet on demand (unreachable llama-swap, last-key deletion, a log gap, Redis
 * gone). Each test also demands zero console errors and no request off loopback. Screenshots of
 * every page, in both themes and at phone width, land in test-results/screenshots/.
 */
import type { Browser, Page } from 'playwright-core';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it, vi } from 'vitest';
import type { UsageRecord } from '../../src/store/records.js';
import { startSimulator, type Simulator } from '../fakes/llama-swap/index.js';
import { startTestGateway, type TestGateway } from '../helpers/gateway.js';
import { json, rawRequest } from '../helpers/http.js';
import { startTcpRelay, type TcpRelay } from '../helpers/tcp-relay.js';
import {
  DEMO_HOUSE_CONFIG,
  DEMO_LOADED,
  resetAdmin,
  seedDemoKeys,
  writeDemoLog,
  type DemoKeyIds,
} from './demo-admin.js';
import { demoUsage } from './demo-usage.js';
import {
  closeCheckedPages,
  inPage,
  launchBrowser,
  openPage,
  PHONE,
  requireDashboardBuild,
  signIn,
  completeSetup,
  type OpenPageOptions,
  type TestPage,
} from './helpers.js';

const PASSWORD = 'correct horse battery';
const ADMIN_TOKEN = 'dashboard-pages-admin-token';
const REDIS = new URL(process.env.GATEHOUSE_TEST_REDIS_URL ?? 'redis://127.0.0.1:6379');

let browser: Browser;
let sim: Simulator;
const open: TestPage[] = [];

async function startDemoSimulator(port?: number): Promise<Simulator> {
  const started = await startSimulator({ config: DEMO_HOUSE_CONFIG, knobs: { loadDelayMs: 600 }, port });
  writeDemoLog(started);
  return started;
}

beforeAll(async () => {
  requireDashboardBuild();
  browser = await launchBrowser();
  sim = await startDemoSimulator();
}, 60_000);

// Every page of every test: nothing wrong in the console, nothing fetched from outside.
afterEach(() => closeCheckedPages(open));

afterAll(async () => {
  await browser?.close();
  await sim?.close();
});

async function openOn(gateway: TestGateway, options: OpenPageOptions = {}): Promise<TestPage> {
  const t = await openPage(browser, gateway.url, options);
  open.push(t);
  return t;
}

async function signedIn(page: Page, next = '/models') {
  await signIn(page, PASSWORD, { next });
}

/** Whether the gateway takes `password` for the first admin (a real sign-in over HTTP). */
async function acceptsPassword(gateway: TestGateway, password: string): Promise<boolean> {
  const res = await rawRequest(`${gateway.url}/api/login`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', origin: gateway.url },
    body: JSON.stringify({ password }),
  });
  return res.status === 200;
}

describe('a gateway before its first password, and before its first call', () => {
  let fresh: TestGateway;

  beforeAll(async () => {
    fresh = await startTestGateway(sim.url, { logLevel: 'warn' }, {}, { withStore: true });
  }, 60_000);
  afterAll(() => fresh?.close());

  function setupPath(): string {
    const link = /http:\/\/\S+(\/setup#token=[A-Za-z0-9_-]+)/.exec(fresh.logText());
    if (!link) throw new Error(`no setup link in the log:\n${fresh.logText()}`);
    return link[1]!;
  }

  it('tells an operator without a password to use the setup link', async () => {
    const t = await openOn(fresh, { viewport: PHONE, colorScheme: 'dark' });
    await t.page.goto('/models');
    await t.page.getByText('No admin password has been set yet.').waitFor();
    expect(new URL(t.page.url()).pathname).toBe('/sign-in');
    await t.screenshot('sign-in-setup-required-dark-phone');
  });

  it('sets the first password from the setup link and lands signed in on Models', async () => {
    const t = await openOn(fresh);
    const setup = setupPath();
    await t.page.goto(setup);
    await t.page.getByRole('heading', { name: 'Set up Gatehouse' }).waitFor();
    const submit = t.page.getByRole('button', { name: 'Set password and sign in' });
    await t.page.getByLabel('New password').fill('short');
    expect(await submit.isDisabled()).toBe(true);
    await t.screenshot('setup-light');
    await completeSetup(t.page, setup, 'a long enough passphrase');
    expect(new URL(t.page.url()).pathname).toBe('/models');
    expect(await acceptsPassword(fresh, 'a long enough passphrase')).toBe(true);
    await t.page.getByRole('heading', { name: 'Models' }).waitFor();
  });

  it('shows usage before the first call, and when the usage store fails', async () => {
    await resetAdmin(fresh, PASSWORD);
    const t = await openOn(fresh, { colorScheme: 'dark' });
    await signedIn(t.page, '/usage');
    await t.page.getByRole('heading', { name: 'No calls yet' }).waitFor();
    expect(await t.page.getByRole('link', { name: /Client setup on Endpoints/ }).getAttribute('href')).toBe(
      '/endpoints',
    );
    await t.screenshot('usage-empty-dark');

    // The store stops answering (a locked or lost database) for as long as the spies stay.
    const usage = fresh.store!.usage;
    const failure = () => Promise.reject(new Error('database is locked'));
    const spies = [
      vi.spyOn(usage, 'rollup').mockImplementation(failure),
      vi.spyOn(usage, 'list').mockImplementation(failure),
    ];
    try {
      await t.page.reload();
      await t.page.getByRole('heading', { name: 'Could not load usage' }).waitFor();
      await t.screenshot('usage-error-dark');
    } finally {
      for (const spy of spies) spy.mockRestore();
    }
    await t.page.getByRole('button', { name: 'Try again' }).click();
    await t.page.getByRole('heading', { name: 'No calls yet' }).waitFor();
  });
});

describe('dashboard pages of a household in use', () => {
  let gateway: TestGateway;
  let redis: TcpRelay;
  let keys: DemoKeyIds;
  let usage: UsageRecord[];

  beforeAll(async () => {
    redis = await startTcpRelay({ host: REDIS.hostname, port: Number(REDIS.port || 6379) });
    gateway = await startTestGateway(
      sim.url,
      {
        adminToken: ADMIN_TOKEN,
        // The Logs page's gateway source stays empty: nothing here is about the gateway's own lines.
        logLevel: 'silent',
        usageCaptureBytes: 4096,
        redisUrl: `redis://127.0.0.1:${redis.port}/0`,
      },
      {},
      { withStore: true },
    );
    keys = await seedDemoKeys(gateway);
    usage = demoUsage(keys);
    await gateway.store!.usage.append(usage);
  }, 60_000);

  beforeEach(async () => {
    await resetAdmin(gateway, PASSWORD);
    keys = await seedDemoKeys(gateway, { ids: keys });
  });

  afterAll(async () => {
    await gateway?.close();
    await redis?.close();
  });

  async function start(options: OpenPageOptions = {}): Promise<TestPage> {
    return openOn(gateway, options);
  }

  async function summary(query: string) {
    const res = await rawRequest(`${gateway.url}/api/usage/summary?${query}`, {
      headers: { authorization: `Bearer ${ADMIN_TOKEN}` },
    });
    expect(res.status).toBe(200);
    return json(res.body) as {
      from: string;
      to: string;
      totals: { requests: number };
      groups: Array<{ key?: { id: string | null; name: string | null } }>;
    };
  }

  it('signs in, rejects a wrong password, and returns to the page asked for', async () => {
    const t = await start();
    await t.page.goto('/keys');
    await t.page.waitForURL('**/sign-in?next=%2Fkeys');
    await t.page.getByLabel('Password', { exact: true }).fill('wrong password');
    await t.page.getByRole('button', { name: 'Sign in' }).click();
    await t.page.getByText('That password is not right.').waitFor();
    await t.screenshot('sign-in-error-light');
    await t.page.getByLabel('Password', { exact: true }).fill(PASSWORD);
    await t.page.getByRole('button', { name: 'Sign in' }).click();
    await t.page.waitForURL('**/keys');
    await t.page.getByRole('heading', { name: 'API keys' }).waitFor();
  });

  it('shows an unreachable llama-swap as an error state, never an empty list, and recovers by itself', async () => {
    const port = sim.port;
    await sim.close();
    const t = await start();
    try {
      await signedIn(t.page);
      await t.page.getByRole('heading', { name: 'llama-swap is not answering' }).waitFor();
      await t.page.getByRole('link', { name: /llama-swap unreachable/ }).waitFor();
      expect(await t.page.getByRole('table').count()).toBe(0);
      expect(await t.page.getByText('No models configured').count()).toBe(0);
      await t.screenshot('models-unreachable-light');
    } finally {
      sim = await startDemoSimulator(port);
    }
    // The gateway retries llama-swap with a backoff of up to 5 s.
    await t.page
      .getByRole('cell', { name: /qwen3-30b-a3b/ })
      .first()
      .waitFor({ timeout: 10_000 });
  });

  it('loads a model, shows changes made elsewhere within 2 s, and unloads all after confirming', async () => {
    await sim.unload();
    await Promise.all(DEMO_LOADED.map((model) => sim.load(model)));
    const t = await start({ colorScheme: 'dark' });
    await signedIn(t.page);
    await t.page.getByRole('button', { name: 'Load nomic-embed-text' }).click();
    // The model's own row: the rows of its aliases name it too.
    const unload = t.page.getByRole('button', { name: 'Unload nomic-embed-text' });
    await unload.waitFor({ timeout: 3000 });
    const row = t.page.getByRole('row').filter({ has: unload });
    await row.getByText('ready').waitFor({ timeout: 3000 });
    expect(t.apiCalls).toContain('POST /api/models/nomic-embed-text/load');
    expect(sim.state('nomic-embed-text')).toBe('ready');

    // Another operator (or llama-swap's TTL) stops a model: the table follows within 2 s.
    await t.page.getByRole('button', { name: 'Unload gemma-3-12b' }).waitFor();
    await sim.unload('gemma-3-12b');
    await t.page.getByRole('button', { name: 'Load gemma-3-12b' }).waitFor({ timeout: 2000 });

    await t.page.getByRole('button', { name: 'Unload all' }).click();
    const dialog = t.page.getByRole('dialog', { name: 'Unload all models?' });
    await dialog.waitFor();
    await t.screenshot('models-unload-all-dialog-dark');
    await t.page.keyboard.press('Escape');
    await dialog.waitFor({ state: 'hidden' });
    expect(t.apiCalls).not.toContain('POST /api/models/unload-all');
    expect(sim.state('qwen3-30b-a3b')).toBe('ready');
    await t.page.getByRole('button', { name: 'Unload all' }).click();
    await dialog.getByRole('button', { name: 'Unload all' }).click();
    await dialog.waitFor({ state: 'hidden' });
    await expect.poll(() => t.apiCalls).toContain('POST /api/models/unload-all');
    await t.page.getByRole('button', { name: 'Load qwen3-30b-a3b' }).waitFor({ timeout: 2000 });
    expect(sim.running()).toEqual([]);
  });

  it('creates a key and shows its secret once, with a copy button and a warning', async () => {
    const t = await start();
    await t.context.grantPermissions(['clipboard-read', 'clipboard-write']);
    await signedIn(t.page, '/keys');
    await t.page.getByRole('button', { name: 'Create key' }).click();
    const dialog = t.page.getByRole('dialog', { name: 'Create an API key' });
    await dialog.waitFor();
    // Focus starts in the first field and Tab stays inside the modal.
    expect(await inPage(t.page, 'document.activeElement?.id')).toBe('key-name');
    await dialog.getByLabel('Name').fill('ci-runner');
    await dialog.getByText('Only these models').click();
    await dialog.getByRole('checkbox', { name: 'gemma-3-12b' }).check();
    await dialog.getByLabel('Expires').selectOption('30d');
    await dialog.getByLabel('Note').fill('Nightly evals');
    await t.screenshot('keys-create-dialog-light');
    for (let i = 0; i < 25; i++) await t.page.keyboard.press('Tab');
    expect(await inPage(t.page, "document.querySelector('dialog[open]').contains(document.activeElement)")).toBe(true);

    await dialog.getByRole('button', { name: 'Create key' }).click();
    const created = t.page.getByRole('dialog', { name: 'Key created' });
    await created.getByText('You will not see it again.').waitFor();
    const secret = await created.getByLabel('The new API key').inputValue();
    expect(secret).toMatch(/^sk-/);
    const stored = (await gateway.store!.keys.list()).find((k) => k.name === 'ci-runner');
    expect(stored).toMatchObject({ name: 'ci-runner', models: ['gemma-3-12b'], note: 'Nightly evals' });
    const days = ((stored?.expiresAt ?? 0) - Date.now()) / 86_400_000;
    expect(days).toBeGreaterThan(29.9);
    expect(days).toBeLessThan(30.1);

    // Closing before copying asks first.
    await t.page.keyboard.press('Escape');
    await created.getByText('You have not copied the key.').waitFor();
    await created.getByRole('button', { name: 'Go back' }).click();
    await created.getByRole('button', { name: 'Copy', exact: true }).click();
    await created.getByRole('button', { name: 'Copied' }).waitFor();
    expect(await inPage(t.page, 'navigator.clipboard.readText()')).toBe(secret);
    await t.screenshot('keys-created-secret-light');
    await created.getByRole('button', { name: 'Done' }).click();
    await created.waitFor({ state: 'hidden' });
    await t.page
      .getByRole('cell', { name: /ci-runner/ })
      .first()
      .waitFor();
    expect(await t.page.content()).not.toContain(secret);
  });

  it('edits and revokes a key', async () => {
    const t = await start({ viewport: PHONE });
    await signedIn(t.page, '/keys');
    await t.page.getByRole('button', { name: 'Edit home-assistant' }).click();
    const dialog = t.page.getByRole('dialog', { name: 'Edit “home-assistant”' });
    await dialog.getByLabel('Name').fill('home-assistant-2');
    await t.screenshot('keys-edit-dialog-phone');
    await dialog.getByRole('button', { name: 'Save changes' }).click();
    await dialog.waitFor({ state: 'hidden' });
    const edited = await gateway.store!.keys.get(keys['home-assistant']);
    expect(edited?.name).toBe('home-assistant-2');
    expect(edited?.models).toEqual(['qwen', 'whisper-large-v3']);

    await t.page.getByRole('button', { name: 'Revoke home-assistant-2' }).click();
    const confirm = t.page.getByRole('dialog', { name: 'Revoke “home-assistant-2”?' });
    await confirm.getByRole('button', { name: 'Revoke key' }).click();
    await confirm.waitFor({ state: 'hidden' });
    expect((await gateway.store!.keys.get(keys['home-assistant']))?.revokedAt).toEqual(expect.any(Number));
    expect(await t.page.getByRole('button', { name: 'Revoke home-assistant-2' }).count()).toBe(0);
  });

  it('deletes the last key only after showing the server warning and confirming again', async () => {
    await seedDemoKeys(gateway, { ids: keys, only: ['open-webui'] });
    const id = keys['open-webui'];
    const t = await start();
    await signedIn(t.page, '/keys');
    await t.page.getByRole('button', { name: 'Delete open-webui' }).click();
    await t.page
      .getByRole('dialog', { name: 'Delete “open-webui”?' })
      .getByRole('button', { name: 'Delete key' })
      .click();
    const warning = t.page.getByRole('dialog', { name: 'This is the last API key' });
    await warning.getByText('Deleting it reopens the API').waitFor();
    expect(await gateway.store!.keys.count()).toBe(1);
    await t.screenshot('keys-delete-last-light');
    await warning.getByRole('button', { name: 'Delete and open the API' }).click();
    await t.page.getByText('No API keys yet').waitFor();
    await t.page.getByText('That was the last API key').waitFor();
    expect(t.apiCalls).toEqual(
      expect.arrayContaining([`DELETE /api/keys/${id}`, `DELETE /api/keys/${id}?confirm=last`]),
    );
    expect(await gateway.store!.keys.count()).toBe(0);
    await t.screenshot('keys-empty-light');
  });

  it('streams logs with colours, pauses, filters, and marks a gap and a dropped stream', async () => {
    const t = await start({ colorScheme: 'dark' });
    await signedIn(t.page, '/logs');
    const lines = t.page.locator('.log-lines');
    await lines.getByText('llama-swap listening on :8080').waitFor();
    expect(await lines.locator('.fg-1.b').first().textContent()).toBe('ERROR');
    expect(await lines.textContent()).not.toContain('\u001b');

    sim.logChunk('proxy', 'first half of a line, ');
    sim.logChunk('proxy', 'second half\n');
    await lines.getByText('first half of a line, second half').waitFor();

    // A config reload restarts llama-swap's log stream.
    await sim.reload();
    await lines.getByText('— llama-swap restarted the stream (config reload) —').waitFor({ timeout: 5000 });

    await t.page.getByRole('button', { name: 'Pause' }).click();
    sim.log('proxy', 'written while paused');
    await t.page.getByRole('button', { name: 'Resume · 1 new' }).waitFor();
    expect(await lines.getByText('written while paused').count()).toBe(0);
    await t.page.getByRole('button', { name: 'Resume · 1 new' }).click();
    await lines.getByText('written while paused').waitFor();

    await t.page.getByLabel('Filter lines').fill('error');
    // The one ERROR line, and the marker (markers survive filters so a gap stays visible).
    await t.page.getByText('2 shown').waitFor();
    expect(await lines.locator('.line:not(.marker)').allTextContents()).toEqual([
      expect.stringContaining('ERROR <whisper-large-v3>'),
    ]);
    await t.page.getByLabel('Filter lines').fill('');

    // The connection breaks (gateway restart, proxy timeout): the page reconnects on its own.
    gateway.app.server.closeAllConnections();
    await t.page.getByRole('status').getByText('Reconnecting…').waitFor({ timeout: 5000 });
    await t.page.getByText('Live', { exact: true }).waitFor({ timeout: 5000 });
    sim.log('proxy', 'after the reconnect');
    await lines.getByText('after the reconnect').waitFor();
    expect(t.apiCalls.filter((r) => r === 'GET /api/live')).toHaveLength(2);
    // The history sent again on reconnect was joined, not repeated.
    expect(await lines.getByText('llama-swap listening on :8080').count()).toBe(1);
    expect(await lines.getByText('written while paused').count()).toBe(1);
    await t.screenshot('logs-reconnected-dark');

    await t.page.getByLabel('Log source').selectOption('gateway');
    await t.page.waitForURL('**/logs?source=gateway');
    await t.page.getByText('No output yet.').waitFor();
    // The gateway's log rides on the same stream.
    expect(t.apiCalls.some((r) => r.startsWith('GET /api/logs/stream'))).toBe(false);
  });

  it('sends the operator to sign in when the session ends, then back', async () => {
    const t = await start();
    await signedIn(t.page, '/models');
    await t.page.getByRole('heading', { name: 'Models' }).waitFor();
    // Signed out everywhere, and the open stream dropped (as a gateway restart does).
    await gateway.store!.sessions.deleteAllExcept(null);
    gateway.app.server.closeAllConnections();
    await t.page.getByText('Your session has ended.').waitFor({ timeout: 3000 });
    expect(new URL(t.page.url()).pathname).toBe('/sign-in');
    await t.page.getByLabel('Password', { exact: true }).fill(PASSWORD);
    await t.page.getByRole('button', { name: 'Sign in' }).click();
    // Exact: while its stream reconnects the page may say "Could not load the models" for a moment.
    await t.page.getByRole('heading', { name: 'Models', exact: true }).waitFor();
    await t.page.getByRole('heading', { name: 'Could not load the models' }).waitFor({ state: 'hidden' });
  });

  it('changes the password, switches the theme, and signs out', async () => {
    const t = await start();
    await signedIn(t.page, '/settings');
    await t.page.getByLabel('Current password').fill('not it at all');
    await t.page.getByLabel('New password').fill('a brand new passphrase');
    await t.page.getByLabel('Repeat the password').fill('a brand new passphrase');
    await t.page.getByRole('button', { name: 'Change password' }).click();
    await t.page.getByText('The current password is not right.').waitFor();
    await t.page.getByLabel('Current password').fill(PASSWORD);
    await t.page.getByRole('button', { name: 'Change password' }).click();
    await t.page.getByText('Password changed.').waitFor();
    expect(await acceptsPassword(gateway, 'a brand new passphrase')).toBe(true);
    expect(await acceptsPassword(gateway, PASSWORD)).toBe(false);

    await t.page.locator('label', { hasText: 'Dark' }).click();
    expect(await t.page.getByRole('radio', { name: 'Dark' }).isChecked()).toBe(true);
    expect(
      await inPage(t.page, "[document.documentElement.dataset.theme, localStorage.getItem('gatehouse.theme')]"),
    ).toEqual(['dark', 'dark']);
    await t.screenshot('settings-after-change-dark');

    await t.page.getByRole('main').getByRole('button', { name: 'Sign out' }).click();
    await t.page.waitForURL('**/sign-in');
    await expect.poll(() => t.apiCalls).toContain('POST /api/logout');
    // The stored theme outlives the session, and applies before the app starts.
    await t.page.reload();
    expect(await inPage(t.page, 'document.documentElement.dataset.theme')).toBe('dark');
  });

  it('works from the keyboard: skip link, visible focus, dialogs that close on Escape and give focus back', async () => {
    const t = await start();
    await signedIn(t.page, '/keys');
    await t.page.getByText('home-assistant', { exact: true }).waitFor();
    await t.page.keyboard.press('Tab');
    expect(await inPage(t.page, 'document.activeElement.textContent.trim()')).toBe('Skip to content');
    await t.page.keyboard.press('Tab');
    expect(await inPage(t.page, 'document.activeElement.textContent.trim()')).toBe('Models');
    // The focus ring is drawn (outline or box-shadow), not suppressed.
    const ring = await inPage<string>(
      t.page,
      'getComputedStyle(document.activeElement).outlineStyle + " " + ' +
        'getComputedStyle(document.activeElement).boxShadow',
    );
    expect(ring).not.toBe('none none');
    await t.screenshot('focus-ring-light');

    const create = t.page.getByRole('button', { name: 'Create key' });
    await create.focus();
    await t.page.keyboard.press('Enter');
    await t.page.getByRole('dialog', { name: 'Create an API key' }).waitFor();
    await t.page.keyboard.press('Escape');
    await t.page.getByRole('dialog').waitFor({ state: 'hidden' });
    expect(await inPage(t.page, 'document.activeElement.textContent.trim()')).toBe('Create key');
  });

  it('shows usage: totals, a chart with tooltips, groups, and a filtered request log a page at a time', async () => {
    const t = await start();
    await signedIn(t.page, '/usage');
    const requests = t.page.locator('[data-stat="requests"] dd').first();
    await requests.waitFor();
    const expected = await summary('range=24h&groupBy=key');
    // The server counted every seeded call of its window, and the page shows that count.
    const inWindow = usage.filter((r) => r.at >= Date.parse(expected.from) && r.at < Date.parse(expected.to));
    expect(expected.totals.requests).toBe(inWindow.length);
    expect(await requests.textContent()).toBe(expected.totals.requests.toLocaleString('en-GB'));
    expect(await t.page.locator('[data-stat="p95"] dd').textContent()).toMatch(/^≈ /);
    // One row per key, in the server's order, with the chart's colours in the legend.
    const names = await t.page.locator('.groups-card tbody th').locator('button, .plain').allTextContents();
    expect(names.map((n) => n.trim())).toEqual(
      expected.groups.map((g) => (g.key?.id === null ? 'No key' : g.key?.name)),
    );
    expect(expected.groups).toHaveLength(4);
    expect(await t.page.locator('.chart .legend li').count()).toBe(expected.groups.length);
    // The chart is one tab stop; the arrow keys read the buckets out.
    await t.page.locator('.chart .plot').focus();
    await t.page.keyboard.press('End');
    await t.page.keyboard.press('ArrowLeft');
    await t.page.locator('.chart .tip').waitFor();
    expect(await t.page.locator('.chart [aria-live="polite"]').textContent()).toMatch(/requests/);
    await t.screenshot('usage-chart-focus-light');

    // 30 days by model, as tokens.
    await t.page.getByRole('radio', { name: 'Last 30 days' }).check();
    await t.page.getByRole('radio', { name: 'By model' }).check();
    await t.page.getByRole('radio', { name: 'Tokens' }).check();
    await t.page.waitForURL('**/usage?range=30d&group=model&chart=tokens');
    await t.page.locator('.groups-card h2', { hasText: 'By model' }).waitFor();
    await t.page.locator('.stat-title', { hasText: 'last 30 days' }).waitFor();
    await expect.poll(() => t.apiCalls).toContain('GET /api/usage/summary?range=30d&groupBy=model');
    await t.screenshot('usage-30d-by-model-light');

    // The log: 50 at a time, then "Load more" with the cursor.
    const rows = t.page.locator('table.requests tbody tr');
    expect(await rows.count()).toBe(50);
    await t.page.getByRole('button', { name: 'Load more' }).click();
    await rows.nth(99).waitFor();
    expect(t.apiCalls.some((r) => r.startsWith('GET /api/usage/requests?cursor='))).toBe(true);
    // Filters go to the server and into the URL.
    await t.page.getByLabel('Status').selectOption('5xx');
    await t.page.waitForURL('**status=5xx');
    await t.page.locator('table.requests tbody tr .error-class', { hasText: 'upstream_unreachable' }).first().waitFor();
    // The unfiltered rows stay until the server answers: wait for the filtered set.
    await expect
      .poll(
        async () => new Set(await t.page.locator('table.requests tbody td.status .status-line').allTextContents()).size,
      )
      .toBe(1);
    const homeAssistant = keys['home-assistant'];
    await t.page.getByLabel('Key', { exact: true }).selectOption({ label: 'home-assistant' });
    await t.page.waitForURL(`**key=${homeAssistant}**`);
    await expect.poll(() => t.apiCalls).toContain(`GET /api/usage/requests?key=${homeAssistant}&status=5xx&limit=50`);
    await t.page.getByRole('button', { name: 'Clear filters' }).first().click();
    await t.page.waitForURL((url) => !url.search.includes('status='));

    // A captured call in the drawer: JSON re-indented.
    const captured = usage.find((r) => r.responseBody !== null && !r.streamed);
    if (!captured) throw new Error('no captured demo call');
    await t.page.getByLabel('Model', { exact: true }).fill(captured.model ?? '');
    await t.page.getByLabel('Model', { exact: true }).press('Enter');
    await t.page.waitForURL('**model=**');
    await t.page.locator('table.requests tbody tr').first().waitFor();
    const at = new Date(captured.at).toISOString();
    const row = t.page.locator('table.requests tbody tr', { has: t.page.locator(`time[datetime="${at}"]`) });
    await row.getByRole('button', { name: /Details of the call/ }).click();
    const drawer = t.page.getByRole('dialog', { name: `POST ${captured.endpoint}` });
    await drawer.locator('pre.body').nth(1).waitFor();
    expect(await drawer.locator('pre.body').nth(1).textContent()).toContain('\n  "object": "chat.completion"');
    await t.screenshot('usage-drawer-captured-light');
    await t.page.keyboard.press('Escape');
    await drawer.waitFor({ state: 'hidden' });
  });

  it('sets and clears a key’s limits, and says where limits are counted', async () => {
    const t = await start();
    await signedIn(t.page, '/keys');
    const row = t.page.getByRole('row').filter({ has: t.page.getByText('open-webui', { exact: true }) });
    const limits = row.locator('td[data-label="Limits"] li');
    // The keys arrive after the page shows: read the list once the row holds it.
    await limits.first().waitFor();
    expect(await limits.allTextContents()).toEqual(['120 rpm', '200K tpm', '4 at once']);
    expect(await t.page.getByTestId('limits-scope').textContent()).toContain('Limits are shared');
    await t.page.getByRole('button', { name: 'Edit open-webui' }).click();
    const dialog = t.page.getByRole('dialog', { name: 'Edit “open-webui”' });
    await dialog.getByLabel('Tokens / minute').fill('');
    await dialog.getByLabel('Requests / minute').fill('1,000');
    await dialog.getByLabel('Concurrent').fill('two');
    await dialog.getByRole('button', { name: 'Save changes' }).click();
    await dialog.getByText('A whole number, or empty for no limit.').waitFor();
    await t.screenshot('keys-limits-invalid-light');
    await dialog.getByLabel('Concurrent').fill('4');
    await dialog.getByRole('button', { name: 'Save changes' }).click();
    await dialog.waitFor({ state: 'hidden' });
    expect((await gateway.store!.keys.get(keys['open-webui']))?.limits).toEqual({
      rpm: 1000,
      tpm: null,
      concurrent: 4,
    });
    await expect.poll(() => limits.allTextContents()).toEqual(['1,000 rpm', '4 at once']);

    // Redis gone: the line turns into a warning.
    redis.cut();
    try {
      await t.page.reload();
      await t.page.getByText('Redis is unreachable').waitFor();
    } finally {
      redis.restore();
    }
    // A gateway from before `GET /api/limits` answers 404 there: limits are then per process.
    await t.page.route('**/api/limits', (route) =>
      route.fulfill({ status: 404, json: { error: { code: 'not_found', message: 'Not found.' } } }),
    );
    await t.page.reload();
    await t.page.getByText('Limits are enforced per gateway process').waitFor();
  });

  for (const variant of [
    { name: 'light', options: {} },
    { name: 'dark', options: { colorScheme: 'dark' as const } },
    { name: 'phone', options: { viewport: PHONE } },
  ]) {
    it(`renders every page (${variant.name})`, async () => {
      const t = await start(variant.options);
      await signedIn(t.page);
      await t.page
        .getByRole('cell', { name: /qwen3-30b-a3b/ })
        .first()
        .waitFor();
      await t.screenshot(`models-${variant.name}`);

      await t.page.goto('/keys');
      await t.page.getByText('home-assistant', { exact: true }).waitFor();
      await t.screenshot(`keys-${variant.name}`);

      await t.page.goto('/usage');
      await t.page.locator('table.requests tbody tr').first().waitFor();
      await t.page.locator('.chart svg rect.bar').first().waitFor();
      await t.screenshot(`usage-${variant.name}`);
      if (variant.name === 'phone')
        expect(await inPage(t.page, 'document.documentElement.scrollWidth')).toBeLessThanOrEqual(PHONE.width);

      await t.page.goto('/logs');
      await t.page.getByText('llama-swap listening on :8080').waitFor();
      await t.screenshot(`logs-${variant.name}`);

      await t.page.goto('/settings');
      await t.page.getByRole('heading', { name: 'Admin password' }).waitFor();
      await t.screenshot(`settings-${variant.name}`);

      if (variant.name === 'phone') {
        expect(await inPage(t.page, 'document.documentElement.scrollWidth')).toBeLessThanOrEqual(PHONE.width);
        await t.page.getByRole('button', { name: 'Open menu' }).click();
        await t.page.getByRole('link', { name: 'Logs' }).waitFor();
        await t.screenshot('menu-phone');
        await t.page.keyboard.press('Escape');
        await t.page.getByRole('link', { name: 'Logs' }).waitFor({ state: 'hidden' });
      }
    });
  }
});
