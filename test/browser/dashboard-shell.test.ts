/**
 * Smoke test of the built dashboard served by registerDashboard on a bare Fastify: no admin
 * API exists, so every /api call answers 404. The app must show its "admin API did not
 * answer" state (not a blank page), log no error of its own, violate no CSP rule and ask
 * nothing of any host but loopback.
 */
import type { Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  inPage,
  launchBrowser,
  openPage,
  PHONE,
  requireDashboardBuild,
  serveDashboard,
  type DashboardServer,
} from './helpers.js';

describe('dashboard shell without an admin API', () => {
  let browser: Browser;
  let server: DashboardServer;

  beforeAll(async () => {
    requireDashboardBuild();
    server = await serveDashboard();
    browser = await launchBrowser();
  });

  afterAll(async () => {
    await browser?.close();
    await server?.close();
  });

  it('shows the admin-API error state with no console errors and only loopback requests', async () => {
    const t = await openPage(browser, server.url);
    try {
      const response = await t.page.goto('/');
      expect(response?.status()).toBe(200);
      expect(response?.headers()['content-security-policy']).toContain("default-src 'self'");

      await t.page.getByRole('heading', { name: 'The admin API did not answer' }).waitFor();
      await t.page.getByText('The gateway has no GET /api/session route (HTTP 404)').waitFor();
      expect(await t.page.getByRole('button', { name: 'Try again' }).isVisible()).toBe(true);
      expect(await inPage(t.page, 'document.documentElement.dataset.theme')).toBe('light');
      await t.screenshot('shell-no-api-light');

      expect(t.console.errors).toEqual([]);
      // The only failed load is the session probe the page is built to survive.
      expect(t.console.failedResources).toHaveLength(1);
      expect(t.console.failedResources[0]).toContain('/api/session');
      expect(t.externalRequests()).toEqual([]);
      const paths = t.requests.map((url) => new URL(url).pathname);
      expect(paths).toContain('/api/session');
      expect(paths.some((p) => /^\/assets\/index-[\w-]+\.js$/.test(p))).toBe(true);
      expect(paths.some((p) => /^\/assets\/index-[\w-]+\.css$/.test(p))).toBe(true);
    } finally {
      await t.close();
    }
  });

  it('answers a deep link with the app, follows a dark system theme, and fits a phone', async () => {
    const t = await openPage(browser, server.url, { colorScheme: 'dark', viewport: PHONE });
    try {
      const response = await t.page.goto('/keys?x=1');
      expect(response?.status()).toBe(200);
      await t.page.getByRole('heading', { name: 'The admin API did not answer' }).waitFor();
      expect(new URL(t.page.url()).pathname).toBe('/keys');
      expect(await inPage(t.page, 'document.documentElement.dataset.theme')).toBe('dark');
      // Nothing wider than the screen.
      expect(await inPage(t.page, 'document.documentElement.scrollWidth')).toBeLessThanOrEqual(PHONE.width);
      await t.screenshot('shell-no-api-dark-phone');
      expect(t.console.errors).toEqual([]);
      expect(t.externalRequests()).toEqual([]);
    } finally {
      await t.close();
    }
  });
});
