/**
 * Browser test harness: playwright-core driving Debian's Chromium (`chromium.ts`). No browser
 * download, no network: every test can assert that the page asked nothing of a host other than
 * loopback.
 *
 * A test file connects to the run's shared Chromium (`launchBrowser`; `browser.close()` only
 * disconnects) and opens a fresh context per test (`openPage`); `signIn`, `screenshot` and the
 * recorded requests/console errors make end-to-end tests against the real gateway short to write.
 */
import { existsSync } from 'node:fs';
import { mkdir } from 'node:fs/promises';
import path from 'node:path';
import Fastify, { type FastifyInstance } from 'fastify';
import { chromium, type Browser, type BrowserContext, type ConsoleMessage, type Page } from 'playwright-core';
import { expect, inject } from 'vitest';
import { defaultDashboardRoot, registerDashboard } from '../../src/http/dashboard.js';
import { CHROMIUM_ARGS, CHROMIUM_PATH, requireChromium } from './chromium.js';

const DASHBOARD_DIST = defaultDashboardRoot();
const SCREENSHOT_DIR = path.resolve('test-results', 'screenshots');

/**
 * This worker's Chromium (started by `chromium-server.ts`, the browser project's globalSetup; a
 * worker's files run one at a time), or one of this file's own when the run has none.
 */
export async function launchBrowser(): Promise<Browser> {
  requireChromium();
  const endpoints = inject('chromiumEndpoints') ?? [];
  const worker = Number(process.env.VITEST_POOL_ID ?? '1');
  const endpoint = endpoints[(worker - 1) % Math.max(1, endpoints.length)];
  if (endpoint) return chromium.connect(endpoint);
  return chromium.launch({ executablePath: CHROMIUM_PATH, args: CHROMIUM_ARGS });
}

/** Fails when web/dist has not been built (npm ci builds it through `prepare`). */
export function requireDashboardBuild(): string {
  const index = path.join(DASHBOARD_DIST, 'index.html');
  if (!existsSync(index))
    throw new Error(`${index} does not exist: build the dashboard with \`npm run build\` before the browser tests.`);
  return DASHBOARD_DIST;
}

export interface ConsoleErrors {
  /** Errors from the page's own code: console.error, uncaught exceptions, CSP violations. */
  errors: string[];
  /** The browser's "Failed to load resource" lines (HTTP errors the app may handle on purpose). */
  failedResources: string[];
}

/**
 * Records console errors and uncaught exceptions of a page from now on. Chromium logs every
 * HTTP error response as a console error; those are kept apart in `failedResources` so a test
 * can expect an API 404 and still demand zero errors from the code.
 */
function collectConsoleErrors(page: Page): ConsoleErrors {
  const collected: ConsoleErrors = { errors: [], failedResources: [] };
  page.on('console', (message: ConsoleMessage) => {
    if (message.type() !== 'error') return;
    const text = message.text();
    if (text.startsWith('Failed to load resource'))
      collected.failedResources.push(`${text} (${message.location().url})`);
    else collected.errors.push(text);
  });
  page.on('pageerror', (error) => collected.errors.push(`uncaught: ${error.stack ?? error.message}`));
  return collected;
}

export interface TestPage {
  context: BrowserContext;
  page: Page;
  /** Every URL the page requested, in order (documents, scripts, fetches, event streams, icons). */
  requests: string[];
  /** `METHOD /path?query` of every request the page sent to the admin API (`/api/...`), in order. */
  apiCalls: string[];
  console: ConsoleErrors;
  /** Requests to anything but loopback (data:, blob: and about: are local too). */
  externalRequests(): string[];
  screenshot(name: string, options?: { fullPage?: boolean }): Promise<string | null>;
  close(): Promise<void>;
}

export interface OpenPageOptions {
  viewport?: { width: number; height: number };
  colorScheme?: 'light' | 'dark';
  /** Sets localStorage before any page script runs (e.g. a theme choice). */
  localStorage?: Record<string, string>;
}

export const DESKTOP = { width: 1280, height: 800 };
export const PHONE = { width: 390, height: 844 };

/** A fresh context (no cookies, no storage) and page with request and console recording. */
export async function openPage(browser: Browser, baseURL: string, options: OpenPageOptions = {}): Promise<TestPage> {
  const context = await browser.newContext({
    baseURL,
    viewport: options.viewport ?? DESKTOP,
    colorScheme: options.colorScheme ?? 'light',
    reducedMotion: 'reduce',
    serviceWorkers: 'block',
    locale: 'en-GB',
    timezoneId: 'UTC',
  });
  if (options.localStorage) {
    const entries = JSON.stringify(options.localStorage);
    await context.addInitScript({
      content: `for (const [k, v] of Object.entries(${entries})) localStorage.setItem(k, v);`,
    });
  }
  // Well under the browser project's test timeout, so a stuck step fails with the locator it waited for.
  context.setDefaultTimeout(30_000);
  const requests: string[] = [];
  const apiCalls: string[] = [];
  context.on('request', (request) => {
    requests.push(request.url());
    const url = new URL(request.url());
    if (url.pathname.startsWith('/api/')) apiCalls.push(`${request.method()} ${url.pathname}${url.search}`);
  });
  const page = await context.newPage();
  const consoleErrors = collectConsoleErrors(page);
  return {
    context,
    page,
    requests,
    apiCalls,
    console: consoleErrors,
    externalRequests: () => requests.filter((url) => !isLocalUrl(url)),
    screenshot: (name, screenshotOptions) => screenshot(page, name, screenshotOptions),
    close: () => context.close(),
  };
}

function isLocalUrl(url: string): boolean {
  const parsed = new URL(url);
  if (parsed.protocol === 'data:' || parsed.protocol === 'blob:' || parsed.protocol === 'about:') return true;
  return parsed.hostname === '127.0.0.1' || parsed.hostname === 'localhost' || parsed.hostname === '[::1]';
}

/**
 * With GATEHOUSE_TEST_SCREENSHOTS=1, saves test-results/screenshots/<name>.png (git-ignored) and
 * returns the path; otherwise does nothing and returns null. The pictures are for people: no test
 * reads them, and taking them is most of what Chromium does in a run.
 */
async function screenshot(page: Page, name: string, options: { fullPage?: boolean } = {}): Promise<string | null> {
  if (process.env.GATEHOUSE_TEST_SCREENSHOTS !== '1') return null;
  await mkdir(SCREENSHOT_DIR, { recursive: true });
  const file = path.join(SCREENSHOT_DIR, `${name.replace(/[^\w.-]+/g, '-')}.png`);
  // Let the last poll's DOM update and fonts settle; animations are off (reducedMotion).
  await page.evaluate('document.fonts.ready.then(() => new Promise((resolve) => requestAnimationFrame(resolve)))');
  await page.screenshot({ path: file, fullPage: options.fullPage ?? false, animations: 'disabled' });
  return file;
}

/**
 * Evaluates a JavaScript expression in the page. Strings rather than functions: the server's
 * tsconfig has no DOM library, so `document` would not type-check in a test file.
 */
export async function inPage<T = unknown>(page: Page, expression: string): Promise<T> {
  return page.evaluate<T>(expression);
}

/** Signs in through the form (as `name`, else the first admin) and waits for the app to leave the sign-in page. */
export async function signIn(
  page: Page,
  password: string,
  options: { next?: string; name?: string } = {},
): Promise<void> {
  await page.goto(options.next ? `/sign-in?next=${encodeURIComponent(options.next)}` : '/sign-in');
  if (options.name !== undefined) await page.getByLabel('Name').fill(options.name);
  await page.getByLabel('Password', { exact: true }).fill(password);
  await page.getByRole('button', { name: 'Sign in' }).click();
  await page.waitForURL((url) => url.pathname !== '/sign-in');
}

/** First-run setup through the form: `setupUrl` is the link the gateway prints (/setup#token=...). */
export async function completeSetup(page: Page, setupUrl: string, password: string): Promise<void> {
  await page.goto(setupUrl);
  await page.getByLabel('New password').fill(password);
  await page.getByLabel('Repeat the password').fill(password);
  await page.getByRole('button', { name: 'Set password and sign in' }).click();
  await page.waitForURL((url) => url.pathname !== '/setup');
}

export interface DashboardServer {
  app: FastifyInstance;
  url: string;
  close(): Promise<void>;
}

/** A bare Fastify on 127.0.0.1:0 serving the built dashboard with registerDashboard, and no API. */
export async function serveDashboard(options: { root?: string } = {}): Promise<DashboardServer> {
  // forceCloseConnections: open event streams must not hold close() up.
  const app = Fastify({ logger: false, forceCloseConnections: true });
  registerDashboard(app, { root: options.root ?? DASHBOARD_DIST });
  const address = await app.listen({ port: 0, host: '127.0.0.1' });
  return { app, url: address, close: () => app.close() };
}

/** Closes the pages a test opened, once it checked that none logged a console error or left loopback. */
export async function closeCheckedPages(open: TestPage[]): Promise<void> {
  for (const t of open.splice(0)) {
    expect(t.console.errors).toEqual([]);
    expect(t.externalRequests()).toEqual([]);
    await t.close();
  }
}
