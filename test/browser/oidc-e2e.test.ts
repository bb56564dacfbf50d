/**
 * Single sign-on in headless Chromium: a person signs in through the real OpenID Provider's
 * login page (oidc-provider, on `localhost`: another site than the gateway on 127.0.0.1), lands
 * on the dashboard as a member, makes a key on the Endpoints page, uses it and sees only their
 * own calls; an admin disables them and the key stops at once.
 * Screenshots: test-results/screenshots/oidc-*.png.
 */
import type { Browser, Page } from 'playwright-core';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import type { ApiKey, Me, UserList } from '../../src/admin-api/types.js';
import { DEMO_CONFIG, startSimulator, type Simulator } from '../fakes/llama-swap/index.js';
import { api, login } from '../helpers/admin.js';
import { startTestGateway, type TestGateway } from '../helpers/gateway.js';
import { json, rawRequest, type RawResponse } from '../helpers/http.js';
import { startTestProvider, type TestProvider } from '../helpers/oidc-provider.js';
import { freePort } from '../helpers/ports.js';
import { inPage, launchBrowser, openPage, requireDashboardBuild, type TestPage } from './helpers.js';

const PASSWORD = 'single sign-on admin password';
const PROVIDER = 'Test ID';

let browser: Browser;
let sim: Simulator;
let provider: TestProvider;
let gateway: TestGateway;
const open: TestPage[] = [];

beforeAll(async () => {
  requireDashboardBuild();
  browser = await launchBrowser();
  sim = await startSimulator({ config: DEMO_CONFIG });
  const port = await freePort();
  provider = await startTestProvider({ redirectUris: [`http://127.0.0.1:${port}/api/oidc/callback`] });
  provider.setAccount('mia', { name: 'Mia', email: 'mia@example.com', email_verified: true, groups: ['llm-users'] });
  gateway = await startTestGateway(
    sim.url,
    {
      adminPassword: PASSWORD,
      logLevel: 'warn',
      publicUrl: `http://127.0.0.1:${port}`,
      oidcIssuer: new URL(provider.issuer),
      oidcClientId: provider.clientId,
      oidcClientSecret: provider.clientSecret,
      oidcName: PROVIDER,
      oidcAutoCreate: true,
      oidcAdminValues: ['llm-admins'],
      oidcMemberValues: ['llm-users'],
    },
    {},
    { withStore: true, port },
  );
}, 60_000);

afterEach(async () => {
  for (const t of open.splice(0)) {
    expect(t.console.errors).toEqual([]);
    await t.close();
  }
});

afterAll(async () => {
  await browser?.close();
  await gateway?.close();
  await provider?.close();
  await sim?.close();
});

/** Through the sign-in page's button and the provider's own login form, back to the gateway. */
async function throughProvider(page: Page, login: string, next?: string): Promise<void> {
  await page.goto(next ? `/sign-in?next=${encodeURIComponent(next)}` : '/sign-in');
  await page.getByRole('link', { name: `Sign in with ${PROVIDER}` }).click();
  await page.waitForURL((url) => url.hostname === 'localhost');
  await page.getByPlaceholder('Enter any login').fill(login);
  await page.getByPlaceholder('and password').fill('any password');
  await page.getByRole('button', { name: 'Sign-in' }).click();
  await page.waitForURL((url) => url.origin === gateway.url && url.pathname !== '/api/oidc/callback');
}

async function signInWithProvider(page: Page, login: string, next?: string): Promise<void> {
  await throughProvider(page, login, next);
  await page.waitForURL((url) => url.pathname !== '/sign-in');
}

function chat(secret: string): Promise<RawResponse> {
  return rawRequest(`${gateway.url}/v1/chat/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: `Bearer ${secret}` },
    body: JSON.stringify({ model: 'llama-3.2-3b', messages: [{ role: 'user', content: 'hello' }] }),
  });
}

describe('single sign-on through an OpenID Provider', () => {
  it("signs a member in through the provider's login page and shows the member's restricted dashboard", async () => {
    const t = await openPage(browser, gateway.url);
    open.push(t);
    await signInWithProvider(t.page, 'mia');
    await t.page.waitForURL((url) => url.pathname === '/endpoints');
    await t.page.getByRole('heading', { name: 'Endpoints' }).waitFor();
    const nav = t.page.getByRole('complementary', { name: 'Main' });
    expect((await nav.getByRole('link').allTextContents()).map((l) => l.trim())).toEqual([
      'Usage',
      'API keys',
      'Endpoints',
      'Settings',
    ]);
    const me = await inPage<Me>(t.page, "fetch('/api/me').then((r) => r.json())");
    expect(me).toMatchObject({ role: 'member', user: { name: 'Mia', signIn: 'oidc' } });
    // A member's session does not open what only admins and viewers may see.
    expect(await inPage<number>(t.page, "fetch('/api/live').then((r) => r.status)")).toBe(403);
    await t.page.goto('/models');
    await t.page.waitForURL((url) => url.pathname === '/endpoints');
    await t.screenshot('oidc-member-endpoints');
  });

  it('shows why a sign-in was refused, on the sign-in page', async () => {
    provider.setAccount('outsider', { name: 'Outsider', groups: ['accounting'] });
    const t = await openPage(browser, gateway.url);
    open.push(t);
    await throughProvider(t.page, 'outsider');
    await t.page
      .getByRole('alert')
      .filter({ hasText: `Your ${PROVIDER} account is in none of the groups` })
      .waitFor();
    expect(new URL(t.page.url()).pathname).toBe('/sign-in');
    await t.screenshot('oidc-refused');
  });

  it('lets a member make a key on the Endpoints page, use it and see only their own calls; disabling them stops the key at once', async () => {
    // Someone else's traffic, which the member must not see.
    const admin = await login(gateway, PASSWORD);
    const made = await api(gateway, 'POST', '/api/keys', { cookie: admin, body: { name: 'admin-script' } });
    expect(made.status, made.body.toString()).toBe(201);
    const adminSecret = (json(made.body) as { secret: string }).secret;
    expect((await chat(adminSecret)).status).toBe(200);

    const t = await openPage(browser, gateway.url);
    open.push(t);
    await signInWithProvider(t.page, 'mia', '/endpoints');
    await t.page.getByRole('button', { name: 'Create a key for curl' }).click();
    await t.page.getByText(/is in every snippet below/).waitFor();
    const snippet = (await t.page.locator('[data-snippet-id="curl-openai-chat"] pre').textContent()) ?? '';
    const secret = /Authorization: Bearer (sk-[0-9A-Za-z]{43})/.exec(snippet)?.[1];
    expect(secret, snippet).toBeDefined();

    const keys = json((await api(gateway, 'GET', '/api/keys', { cookie: admin })).body) as { keys: ApiKey[] };
    const users = json((await api(gateway, 'GET', '/api/users', { cookie: admin })).body) as UserList;
    const mia = users.users.find((u) => u.name === 'Mia')!;
    expect(keys.keys.find((k) => k.name === 'curl')).toMatchObject({ ownerId: mia.id });

    expect((await chat(secret!)).status).toBe(200);
    expect((await chat(secret!)).status).toBe(200);

    await t.page.goto('/usage');
    await t.page.locator('table.requests tbody tr').nth(1).waitFor();
    const who = await t.page.locator('table.requests tbody tr td.who .who-key').allTextContents();
    expect(who.map((w) => w.trim())).toEqual(['curl', 'curl']);
    await t.screenshot('oidc-member-usage');

    const disabled = await api(gateway, 'PATCH', `/api/users/${mia.id}`, { cookie: admin, body: { disabled: true } });
    expect(disabled.status, disabled.body.toString()).toBe(200);
    // The first call after the admin's answer is refused: no cache or poll to wait for.
    expect((await chat(secret!)).status).toBe(401);
    expect((await chat(adminSecret)).status).toBe(200);
    // And the member's browser is signed out.
    expect(await inPage<number>(t.page, "fetch('/api/me').then((r) => r.status)")).toBe(401);
  });
});
