/**
 * The config editor page in headless Chromium against the real gateway, whose ConfigEditor
 * saves a temp config.yaml that the llama-swap simulator watches (-watch-config, polled every
 * 100 ms). Validates with the llama-swap schema Gatehouse bundles.
 * Tests run in order on one file. Screenshots: test-results/screenshots/config-*.png.
 */
import { readFileSync } from 'node:fs';
import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ConfigEditor } from '../../src/config-editor/config-editor.js';
import { createLlamaSwapClient } from '../../src/management-client/llama-swap-client.js';
import { SCHEMA_PATH, tempDir } from '../config-editor/helpers.js';
import { startSimulator, type Simulator } from '../fakes/llama-swap/index.js';
import { startTestGateway, type TestGateway } from '../helpers/gateway.js';
import {
  DESKTOP,
  inPage,
  launchBrowser,
  openPage,
  PHONE,
  requireDashboardBuild,
  signIn,
  type OpenPageOptions,
  type TestPage,
} from './helpers.js';

const PASSWORD = 'config editor password';
const INITIAL = `# llama-swap config, edited from Gatehouse
healthCheckTimeout: 60
models:
  qwen:
    cmd: llama-server --port \${PORT} -m qwen.gguf
    aliases: [gpt-4o-mini]
  llama:
    cmd: llama-server --port \${PORT} -m llama.gguf
`;

let browser: Browser;
let dir: string;
let file: string;
let sim: Simulator;
let gateway: TestGateway;
let disabledGateway: TestGateway;
let schemaPath: string;

beforeAll(async () => {
  requireDashboardBuild();
  schemaPath = SCHEMA_PATH();
  browser = await launchBrowser();
  dir = await tempDir('gh-config-e2e-');
  file = join(dir, 'config.yaml');
  await writeFile(file, INITIAL);
  sim = await startSimulator({ configFile: file, watchConfig: true, watchIntervalMs: 100 });
  const llamaSwap = createLlamaSwapClient({ baseUrl: new URL(sim.url) });
  const editor = new ConfigEditor({ configFile: file, schemaSource: schemaPath, dataDir: dir, proxyLog: llamaSwap });
  gateway = await startTestGateway(
    sim.url,
    { adminPassword: PASSWORD },
    { configEditor: editor, closeables: [editor, llamaSwap] },
    { withStore: true },
  );
  const off = new ConfigEditor({ configFile: undefined, dataDir: dir });
  disabledGateway = await startTestGateway(
    sim.url,
    { adminPassword: PASSWORD },
    { configEditor: off, closeables: [off] },
    { withStore: true },
  );
}, 60_000);
afterAll(async () => {
  await browser?.close();
  for (const g of [gateway, disabledGateway]) {
    await g?.close();
    await g?.index?.close();
    await g?.store?.close();
  }
  await sim?.close();
});

async function configPage(target = gateway, options: OpenPageOptions = {}): Promise<TestPage> {
  const t = await openPage(browser, target.url, options);
  await signIn(t.page, PASSWORD, { next: '/config' });
  await t.page.getByRole('heading', { name: /^Config editor/ }).waitFor();
  return t;
}

async function editorReady(t: TestPage, settled: string | RegExp = 'No problems'): Promise<void> {
  await t.page.locator('.cm-content').waitFor();
  await status(t, settled);
}

const status = (t: TestPage, text: string | RegExp) =>
  t.page.locator('.lint-status').getByText(text).waitFor({ timeout: 5000 });

/** The editor's text as rendered, line by line (the file is small: every line is in the DOM). */
const editorText = (t: TestPage) =>
  inPage<string>(
    t.page,
    "Array.from(document.querySelectorAll('.cm-content .cm-line')).map((l) => l.textContent).join('\\n')",
  );

async function goToEnd(t: TestPage): Promise<void> {
  await t.page.locator('.cm-content').click();
  await t.page.keyboard.press('Control+End');
}

/** Ctrl+S; the reload warning is confirmed when it shows. */
async function save(t: TestPage, options: { dontAskAgain?: boolean; expectWarning?: boolean } = {}): Promise<void> {
  await t.page.keyboard.press('Control+s');
  if (options.expectWarning === false) return;
  const dialog = t.page.getByRole('dialog', { name: 'Save and reload llama-swap?' });
  await dialog.waitFor();
  if (options.dontAskAgain) await dialog.getByLabel("Don't ask again this session").check();
  await dialog.getByRole('button', { name: 'Save and reload' }).click();
}

const reloadState = (t: TestPage, state: string) => t.page.locator(`[data-reload-state="${state}"]`);

describe('the config editor', () => {
  it('fetches the editor (CodeMirror) only when /config is opened', async () => {
    const t = await openPage(browser, gateway.url);
    try {
      await signIn(t.page, PASSWORD);
      await t.page.getByRole('heading', { name: 'Models' }).waitFor();
      const chunk = (url: string) => /\/assets\/ConfigPage-[\w-]+\.js$/.test(url);
      expect(t.requests.filter(chunk)).toEqual([]);
      await t.page.getByRole('link', { name: 'Config' }).click();
      await t.page.locator('.cm-content').waitFor();
      expect(t.requests.filter(chunk)).toHaveLength(1);
    } finally {
      await t.close();
    }
  });

  it('loads the file, names the schema used and its llama-swap version, and completes and documents keys from it', async () => {
    const t = await configPage();
    try {
      await editorReady(t);
      expect(await editorText(t)).toBe(INITIAL.replace(/\n$/, '\n'));
      await t.page.getByLabel('Schema used for validation').getByText(schemaPath).waitFor();
      await t.page.getByText('from INFERENCE_CONFIG_SCHEMA').waitFor();
      await t.page.getByLabel('Schema used for validation').getByText('llama-swap 0bdb3720 (2026-08-22)').waitFor();

      // Hover docs come from the schema.
      const schema = JSON.parse(readFileSync(schemaPath, 'utf8')) as {
        properties: { healthCheckTimeout: { description: string } };
      };
      await t.page
        .locator('.cm-line')
        .filter({ hasText: 'healthCheckTimeout' })
        .getByText('healthCheckTimeout')
        .hover();
      await t.page.locator('.cm-hover-doc').getByText(schema.properties.healthCheckTimeout.description).waitFor();
      await t.screenshot('config-editor-hover');
      expect(t.console.errors).toEqual([]);
      expect(t.externalRequests()).toEqual([]);
    } finally {
      await t.close();
    }
  });

  it('types an edit with completion, shows no diagnostics, saves with Ctrl+S byte for byte, and shows that llama-swap reloaded', async () => {
    const t = await configPage();
    try {
      await editorReady(t);
      // A top-level key from the schema's completions, then a value from its enum.
      await t.page.locator('.cm-content').click();
      await t.page.keyboard.press('Control+Home');
      await t.page.keyboard.type('logLe');
      await expect
        .poll(() => t.page.locator('.cm-tooltip-autocomplete .cm-completionLabel').allTextContents())
        .toEqual(['logLevel']);
      await t.page.waitForTimeout(150);
      await t.screenshot('config-editor-completion');
      await t.page.keyboard.press('Enter');
      await t.page.keyboard.press('Control+Space');
      const values = t.page.locator('.cm-tooltip-autocomplete .cm-completionLabel');
      await expect
        .poll(() => values.allTextContents())
        .toEqual(expect.arrayContaining(['debug', 'info', 'warn', 'error']));
      await t.page.keyboard.type('wa');
      await expect.poll(() => values.allTextContents()).toEqual(['warn']);
      // CodeMirror ignores Enter for 75 ms after the list changes (its interactionDelay).
      await t.page.waitForTimeout(150);
      await t.page.keyboard.press('Enter');
      await t.page.keyboard.press('Enter');

      // A new model at the end, typed line by line (Enter keeps the indentation).
      await goToEnd(t);
      await t.page.keyboard.type('  mistral:');
      await t.page.keyboard.press('Enter');
      await t.page.keyboard.type('cmd: llama-server --port ${PORT} -m mistral.gguf');
      await t.page.keyboard.press('Enter');
      for (let i = 0; i < 4; i++) await t.page.keyboard.press('Backspace');

      const expected = `logLevel: warn\n${INITIAL}  mistral:\n    cmd: llama-server --port \${PORT} -m mistral.gguf\n`;
      expect(await editorText(t)).toBe(expected);
      await t.page.getByText('Unsaved changes').waitFor();
      await status(t, 'No problems');
      expect(await t.page.locator('.cm-lintRange-error, .cm-lintRange-warning').count()).toBe(0);

      await save(t, { dontAskAgain: true });
      await t.page
        .getByLabel('Schema that validated the last save')
        .getByText('llama-swap 0bdb3720 (2026-08-22)')
        .waitFor();
      await reloadState(t, 'reloaded').waitFor({ timeout: 8000 });
      expect(await readFile(file, 'utf8')).toBe(expected);
      expect(await editorText(t)).toBe(expected);
      expect(await t.page.getByText('Unsaved changes').count()).toBe(0);
      await t.screenshot('config-saved-reloaded');

      // Dismissed, so the banner that comes back is about the next save, not this one.
      await reloadState(t, 'reloaded').getByRole('button', { name: 'Dismiss' }).click();
      await expect.poll(() => reloadState(t, 'reloaded').count()).toBe(0);

      // "Don't ask again this session": the next save goes straight through.
      await goToEnd(t);
      await t.page.keyboard.type('# second save');
      await t.page.keyboard.press('Enter');
      await status(t, 'No problems');
      await save(t, { expectWarning: false });
      await expect.poll(() => readFile(file, 'utf8')).toBe(`${expected}# second save\n`);
      await reloadState(t, 'reloaded').waitFor({ timeout: 8000 });
      expect(t.console.errors).toEqual([]);
    } finally {
      await t.close();
    }
  });

  it('marks invalid YAML inline as you type, lists it, refuses to save it, and guards leaving with unsaved edits', async () => {
    const t = await configPage();
    try {
      await editorReady(t);
      const onDisk = await readFile(file, 'utf8');
      await goToEnd(t);
      await t.page.keyboard.type('broken: [unclosed');
      await t.page.locator('.cm-lintRange-error').first().waitFor({ timeout: 5000 });
      await status(t, /1 error/);
      const problem = t.page.getByRole('button', { name: /^error: .*Go to line/ }).first();
      await problem.waitFor();
      await t.screenshot('config-invalid-yaml');
      // Clicking a problem puts the cursor on its line.
      await t.page.keyboard.press('Control+Home');
      await expect.poll(() => t.page.locator('.cm-activeLine').textContent()).not.toContain('broken');
      await problem.click();
      await expect.poll(() => t.page.locator('.cm-activeLine').textContent()).toContain('broken: [unclosed');

      // Ctrl+S: the server refuses with every error; nothing is written.
      await save(t);
      await t.page.getByText(/Not saved: the config has \d+ errors?/).waitFor();
      expect(await readFile(file, 'utf8')).toBe(onDisk);
      await t.screenshot('config-not-saved-422');

      // Leaving through the app asks first; "Cancel" stays.
      await t.page.getByRole('link', { name: 'Models' }).click();
      const leave = t.page.getByRole('dialog', { name: 'Leave without saving?' });
      await leave.waitFor();
      await t.screenshot('config-leave-guard');
      await leave.getByRole('button', { name: 'Cancel' }).click();
      expect(new URL(t.page.url()).pathname).toBe('/config');

      // Undo brings the saved text back: no longer dirty, leaving is free.
      await t.page.locator('.cm-content').click();
      for (let i = 0; i < 6 && (await editorText(t)) !== onDisk; i++) await t.page.keyboard.press('Control+z');
      expect(await editorText(t)).toBe(onDisk);
      await expect.poll(() => t.page.getByText('Unsaved changes').count()).toBe(0);
      await t.page.getByRole('link', { name: 'Models' }).click();
      await t.page.waitForURL((url) => url.pathname === '/models');
    } finally {
      await t.close();
    }
  });

  it("saves a config the schema accepts but llama-swap refuses (an alias on two models), then shows llama-swap's error", async () => {
    const t = await configPage();
    try {
      await editorReady(t);
      // Under the last model (mistral), after the "# second save" comment line.
      await goToEnd(t);
      await t.page.keyboard.type('    aliases: [gpt-4o-mini]');
      // The loader check finds it (a warning: llama-swap is the authority), the schema does not.
      await status(t, /0 errors, 1 warning/);
      await save(t);
      const failed = reloadState(t, 'failed');
      await failed.waitFor({ timeout: 8000 });
      await failed.getByText(/duplicate alias gpt-4o-mini/).waitFor();
      expect(await readFile(file, 'utf8')).toContain('    aliases: [gpt-4o-mini]');
      await t.screenshot('config-reload-failed');
    } finally {
      await t.close();
    }
  });

  it('refuses to save over a file changed on disk (409), shows the diff, and reloads from disk on request', async () => {
    const t = await configPage();
    try {
      // The previous test left a loader warning in the file.
      await editorReady(t, /1 warning/);
      const external = `# edited elsewhere\n${INITIAL}`;
      await writeFile(file, external);
      await goToEnd(t);
      await t.page.keyboard.type('# mine');
      await save(t);
      const conflict = t.page.getByRole('dialog', { name: 'The file changed on disk' });
      await conflict.waitFor();
      await conflict.locator('.row.removed').getByText('# edited elsewhere').waitFor();
      await conflict.locator('.row.added').getByText('# mine').waitFor();
      await t.screenshot('config-conflict');
      expect(await readFile(file, 'utf8')).toBe(external);

      await conflict.getByRole('button', { name: 'Reload from disk (discard my edits)' }).click();
      await expect.poll(() => editorText(t)).toBe(external);
      await status(t, 'No problems');
      expect(await t.page.getByText('Unsaved changes').count()).toBe(0);
    } finally {
      await t.close();
    }
  });

  it('warns before formatting, then re-prints only in the editor', async () => {
    const t = await configPage();
    try {
      await editorReady(t);
      const onDisk = await readFile(file, 'utf8');
      await goToEnd(t);
      await t.page.keyboard.type('startPort:      10001');
      await t.page.getByRole('button', { name: 'Format' }).click();
      const dialog = t.page.getByRole('dialog', { name: 'Format the whole file?' });
      await dialog.getByText(/comments may move, and quoting, key order and layout may change/).waitFor();
      await t.screenshot('config-format-warning');
      await dialog.getByRole('button', { name: 'Format' }).click();
      await expect.poll(() => editorText(t)).toContain('\nstartPort: 10001');
      expect(await readFile(file, 'utf8')).toBe(onDisk);
      await t.page.getByText('Unsaved changes').waitFor();
    } finally {
      await t.close();
    }
  });

  it('keeps a BOM and CRLF line breaks byte for byte, including on the lines it adds', async () => {
    const crlf =
      '\uFEFF# a Windows-edited file\r\nmodels:\r\n  qwen:\r\n    cmd: llama-server --port ${PORT} -m qwen.gguf\r\n';
    await writeFile(file, crlf);
    const t = await configPage();
    try {
      await editorReady(t);
      await goToEnd(t);
      await t.page.keyboard.type('  llama:');
      await t.page.keyboard.press('Enter');
      await t.page.keyboard.type('cmd: llama-server --port ${PORT} -m llama.gguf');
      await t.page.keyboard.press('Enter');
      for (let i = 0; i < 4; i++) await t.page.keyboard.press('Backspace');
      await status(t, 'No problems');
      await save(t);
      await reloadState(t, 'reloaded').waitFor({ timeout: 8000 });
      expect((await readFile(file)).toString('hex')).toBe(
        Buffer.from(`${crlf}  llama:\r\n    cmd: llama-server --port \${PORT} -m llama.gguf\r\n`).toString('hex'),
      );
    } finally {
      await t.close();
    }
  });

  it('looks finished in the dark theme and at phone width', async () => {
    for (const [name, options] of [
      ['config-editor-dark', { colorScheme: 'dark', viewport: DESKTOP }],
      ['config-editor-phone', { viewport: PHONE }],
    ] as const) {
      const t = await configPage(gateway, options);
      try {
        await editorReady(t);
        await t.screenshot(name);
        const overflow = await inPage<number>(
          t.page,
          'document.documentElement.scrollWidth - document.documentElement.clientWidth',
        );
        expect(overflow, name).toBeLessThanOrEqual(0);
      } finally {
        await t.close();
      }
    }
  });
});

describe('the config editor when it is off', () => {
  it('says exactly what to set', async () => {
    const t = await configPage(disabledGateway);
    try {
      await t.page.getByRole('heading', { name: 'The config editor is off' }).waitFor();
      await t.page.getByText('INFERENCE_CONFIG_FILE is not set', { exact: false }).waitFor();
      await t.page.getByText('-watch-config', { exact: true }).waitFor();
      await t.page.getByText('absolute path', { exact: true }).waitFor();
      expect(await t.page.locator('.cm-content').count()).toBe(0);
      await t.screenshot('config-disabled');
    } finally {
      await t.close();
    }
  });
});
