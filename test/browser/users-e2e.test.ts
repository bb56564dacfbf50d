/**
 * Users in headless Chromium against the real gateway and the llama-swap simulator: an admin
 * invites a member on the Users page and copies the link; the member opens it in another
 * browser, sets a password, and lands on a dashboard with only Usage, API keys and Endpoints,
 * where they make a key of their own. A member's key dialog shows the maximum budget an admin set,
 * also one changed after the member signed in. A role change or disabling asks first, naming the
 * person and the role, and sends nothing until confirmed. Screenshots: test-results/screenshots/users-*.png.
 */
import type { Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DEMO_CONFIG, startSimulator, type Simulator } from '../fakes/llama-swap/index.js';
import { startTestGateway, type TestGateway } from '../helpers/gateway.js';
import { rawRequest } from '../helpers/http.js';
import { launchBrowser, openPage, requireDashboardBuild, signIn } from './helpers.js';

const ADMIN_PASSWORD = 'users page admin password';
const MEMBER_PASSWORD = 'the member chose this one';
const ADMIN_TOKEN = 'users-page-admin-token';
let browser: Browser;
let sim: Simulator;
let gateway: TestGateway;

beforeAll(async () => {
  requireDashboardBuild();
  browser = await launchBrowser();
  sim = await startSimulator({ config: DEMO_CONFIG });
  gateway = await startTestGateway(
    sim.url,
    { adminPassword: ADMIN_PASSWORD, adminToken: ADMIN_TOKEN },
    {},
    { withStore: true },
  );
}, 60_000);
afterAll(async () => {
  await browser?.close();
  await gateway?.close();
  await sim?.close();
});

describe('inviting a member', () => {
  it('the admin invites, the member accepts the link and sees only their restricted dashboard', async () => {
    const admin = await openPage(browser, gateway.url);
    const member = await openPage(browser, gateway.url);
    try {
      await signIn(admin.page, ADMIN_PASSWORD, { next: '/users' });
      await admin.page.getByRole('heading', { name: 'Users', exact: true }).waitFor();
      await admin.page.getByLabel('Name').fill('Maya');
      await admin.page.getByLabel('Role').selectOption('member');
      await admin.page.getByRole('button', { name: 'Create invitation link' }).click();
      const linkField = admin.page.getByRole('textbox', { name: 'Invitation link for Maya' });
      await linkField.waitFor();
      const link = await linkField.inputValue();
      expect(link).toMatch(new RegExp(`^${gateway.url}/invite#token=[A-Za-z0-9_-]{43}$`));
      await admin.page.getByRole('cell', { name: 'invited' }).waitFor();
      await admin.screenshot('users-invited');

      await member.page.goto(link);
      await member.page.getByLabel('New password').fill(MEMBER_PASSWORD);
      await member.page.getByLabel('Repeat the password').fill(MEMBER_PASSWORD);
      await member.page.getByRole('button', { name: 'Set password and sign in' }).click();
      await member.page.waitForURL((url) => url.pathname === '/endpoints');
      await member.page.getByRole('heading', { name: 'Endpoints' }).waitFor();
      const nav = member.page.getByRole('complementary', { name: 'Main' });
      expect(await nav.getByRole('link').allTextContents()).toEqual(
        expect.arrayContaining([expect.stringContaining('Usage'), expect.stringContaining('API keys')]),
      );
      const labels = (await nav.getByRole('link').allTextContents()).map((t) => t.trim());
      expect(labels).toEqual(['Usage', 'API keys', 'Endpoints', 'Settings']);

      // Pages outside the role send the member back to their start page.
      await member.page.goto('/models');
      await member.page.waitForURL((url) => url.pathname === '/endpoints');

      await member.page.goto('/keys');
      await member.page.getByRole('button', { name: 'Create key' }).first().click();
      const dialog = member.page.getByRole('dialog', { name: 'Create an API key' });
      await dialog.getByLabel('Name').fill('maya laptop');
      await dialog.getByRole('button', { name: 'Create key' }).click();
      const created = member.page.getByRole('dialog', { name: 'Key created' });
      const secret = await created.getByLabel('The new API key').inputValue();
      expect(secret).toMatch(/^sk-[0-9A-Za-z]{43}$/);
      await created.getByRole('button', { name: 'Done' }).click();
      const call = await rawRequest(`${gateway.url}/v1/chat/completions`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', authorization: `Bearer ${secret}` },
        body: JSON.stringify({ model: 'qwen', messages: [{ role: 'user', content: 'hi' }] }),
      });
      expect(call.status).toBe(200);
      await member.screenshot('users-member-keys');
      const keys = await gateway.store!.keys.list();
      const users = await gateway.store!.users.list();
      const maya = users.find((u) => u.name === 'Maya')!;
      expect(keys.map((k) => ({ name: k.name, ownerId: k.ownerId }))).toEqual([
        { name: 'maya laptop', ownerId: maya.id },
      ]);
      expect(member.console.errors).toEqual([]);
      expect(member.console.failedResources).toEqual([]);
    } finally {
      await admin.close();
      await member.close();
    }
  }, 60_000);
});

describe('a member with a maximum budget', () => {
  const asAdmin = (method: string, path: string, body: unknown) =>
    rawRequest(`${gateway.url}${path}`, {
      method,
      headers: { authorization: `Bearer ${ADMIN_TOKEN}`, 'content-type': 'application/json' },
      body: JSON.stringify(body),
    });

  it('sees in the key dialog the cap an admin set, also one changed after signing in', async () => {
    const created = await asAdmin('POST', '/api/users', {
      name: 'Ravi',
      role: 'member',
      password: MEMBER_PASSWORD,
      maxBudget: { tokens: 100000, period: 'month' },
    });
    expect(created.status, created.body.toString()).toBe(201);
    const ravi = (JSON.parse(created.body.toString()) as { user: { id: string } }).user;
    const member = await openPage(browser, gateway.url);
    try {
      await signIn(member.page, MEMBER_PASSWORD, { name: 'Ravi', next: '/keys' });
      const capHint = async () => {
        await member.page.getByRole('button', { name: 'Create key' }).first().click();
        const dialog = member.page.getByRole('dialog', { name: 'Create an API key' });
        const text = await dialog.getByTestId('key-budget-cap').textContent();
        await dialog.getByRole('button', { name: 'Cancel' }).click();
        await dialog.waitFor({ state: 'hidden' });
        return text;
      };
      expect(await capHint()).toContain('100,000 tokens per month');

      const changed = await asAdmin('PATCH', `/api/users/${ravi.id}`, { maxBudget: { tokens: 4000 } });
      expect(changed.status, changed.body.toString()).toBe(200);
      // The same signed-in page, no reload: the dialog reads the cap again as it opens.
      expect(await capHint()).toContain('4,000 tokens per month');
      expect(member.console.errors).toEqual([]);
    } finally {
      await member.close();
    }
  }, 60_000);
});

describe('changing a role or disabling someone', () => {
  const asAdmin = (method: string, path: string, body: unknown) =>
    rawRequest(`${gateway.url}${path}`, {
      method,
      headers: { authorization: `Bearer ${ADMIN_TOKEN}`, 'content-type': 'application/json' },
      body: JSON.stringify(body),
    });

  it('asks first, naming the person and the role: an arrow key sends nothing, cancel restores, confirm changes it', async () => {
    const created = await asAdmin('POST', '/api/users', { name: 'Noor', role: 'member', password: MEMBER_PASSWORD });
    expect(created.status, created.body.toString()).toBe(201);
    const noor = (JSON.parse(created.body.toString()) as { user: { id: string } }).user;
    /** PATCHes of Noor that reached the gateway (its access log). */
    const patches = () =>
      gateway.logLines().filter((l) => l.method === 'PATCH' && l.path === `/api/users/${noor.id}`).length;
    const stored = async () => (await gateway.store!.users.get(noor.id))!;
    const admin = await openPage(browser, gateway.url);
    try {
      await signIn(admin.page, ADMIN_PASSWORD, { next: '/users' });
      const select = admin.page.getByRole('combobox', { name: 'Role of Noor' });
      await select.waitFor();

      // One arrow key moves the select to the next role: a question, not a change.
      await select.focus();
      await admin.page.keyboard.press('ArrowDown');
      const demote = admin.page.getByRole('dialog', { name: 'Make Noor a viewer?' });
      await demote.waitFor();
      expect(await demote.textContent()).toContain('Noor will be a viewer');
      await admin.screenshot('users-role-confirm');
      await demote.getByRole('button', { name: 'Cancel' }).click();
      await demote.waitFor({ state: 'hidden' });
      expect(await select.inputValue()).toBe('member');
      expect(patches()).toBe(0);
      expect((await stored()).role).toBe('member');

      await select.focus();
      await admin.page.keyboard.press('ArrowUp');
      const promote = admin.page.getByRole('dialog', { name: 'Make Noor an admin?' });
      await promote.waitFor();
      expect(patches()).toBe(0);
      await promote.getByRole('button', { name: 'Make admin' }).click();
      await promote.waitFor({ state: 'hidden' });
      await expect.poll(async () => (await stored()).role).toBe('admin');
      expect(await select.inputValue()).toBe('admin');
      expect(patches()).toBe(1);
      const changes = await gateway.store!.audit.list({ action: 'user.role_change', limit: 10 });
      expect(changes.map((e) => [e.target?.name, e.outcome, e.changes])).toEqual([
        ['Noor', 'success', { role: { from: 'member', to: 'admin' } }],
      ]);

      // Disabling asks too; cancel leaves Noor enabled, confirm disables.
      await admin.page.getByRole('button', { name: 'Disable Noor' }).click();
      const disable = admin.page.getByRole('dialog', { name: 'Disable Noor?' });
      await disable.waitFor();
      await disable.getByRole('button', { name: 'Cancel' }).click();
      await disable.waitFor({ state: 'hidden' });
      expect(patches()).toBe(1);
      expect((await stored()).disabledAt).toBeNull();
      await admin.page.getByRole('button', { name: 'Disable Noor' }).click();
      await disable.getByRole('button', { name: 'Disable Noor' }).click();
      await disable.waitFor({ state: 'hidden' });
      await expect.poll(async () => (await stored()).disabledAt).not.toBeNull();
      expect(patches()).toBe(2);
      expect(admin.console.errors).toEqual([]);
    } finally {
      await admin.close();
    }
  }, 60_000);
});
