/**
 * The Usage page's Export button in headless Chromium against the real gateway (real SQLite
 * store, calls recorded through the simulator): the file the browser downloads holds exactly the
 * calls the request log's filter selects, quoted for a spreadsheet, or their sums.
 */
import type { Browser } from 'playwright-core';
import { afterAll, afterEach, beforeAll, expect, it } from 'vitest';
import { DEMO_CONFIG, startSimulator, type Simulator } from '../fakes/llama-swap/index.js';
import type { TestGateway } from '../helpers/gateway.js';
import { rawRequest } from '../helpers/http.js';
import { createKey, recordFor, requestId, startUsageGateway } from '../usage/usage-helpers.js';
import { closeCheckedPages, launchBrowser, openPage, requireDashboardBuild, signIn, type TestPage } from './helpers.js';

const PASSWORD = 'usage export passphrase';
const AWKWARD = 'Zoë, "the" tester';

let browser: Browser;
let sim: Simulator;
let gateway: TestGateway;
let zoe: { id: string; secret: string };
const open: TestPage[] = [];

async function call(secret: string, model: string): Promise<void> {
  const id = requestId('export-e2e');
  const res = await rawRequest(`${gateway.url}/v1/chat/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: `Bearer ${secret}`, 'x-request-id': id },
    body: JSON.stringify({ model, messages: [{ role: 'user', content: 'hello' }] }),
  });
  expect(res.status).toBe(200);
  await recordFor(gateway, id);
}

beforeAll(async () => {
  requireDashboardBuild();
  browser = await launchBrowser();
  sim = await startSimulator({ config: DEMO_CONFIG, knobs: { tokens: 3 } });
  gateway = await startUsageGateway(sim.url, { adminPassword: PASSWORD });
  zoe = await createKey(gateway, { name: AWKWARD });
  const bob = await createKey(gateway, { name: 'bob' });
  await call(zoe.secret, 'qwen');
  await call(bob.secret, 'llama-3.2-3b');
  await call(zoe.secret, 'llama-3.2-3b');
}, 60_000);

afterEach(() => closeCheckedPages(open));

afterAll(async () => {
  await browser?.close();
  await gateway?.close();
  await sim?.close();
});

async function usagePage(query: string): Promise<TestPage> {
  const t = await openPage(browser, gateway.url);
  open.push(t);
  await signIn(t.page, PASSWORD, { next: `/usage?${query}` });
  await t.page.locator('table.requests tbody tr').first().waitFor();
  return t;
}

/** Opens the export dialog, picks rows and format, and returns the downloaded file. */
async function download(t: TestPage, rows: string, format: string): Promise<{ name: string; text: string }> {
  await t.page.getByRole('button', { name: 'Export' }).click();
  const dialog = t.page.getByRole('dialog', { name: 'Export usage' });
  await dialog.getByRole('radio', { name: rows }).check();
  await dialog.getByRole('radio', { name: format }).check();
  const [file] = await Promise.all([
    t.page.waitForEvent('download'),
    dialog.getByRole('link', { name: `Download ${format}` }).click(),
  ]);
  // The browser is the run's shared one, reached remotely: the file comes over its connection.
  const chunks: Buffer[] = [];
  for await (const chunk of await file.createReadStream()) chunks.push(chunk as Buffer);
  const text = Buffer.concat(chunks).toString('utf8');
  await dialog.waitFor({ state: 'detached' });
  return { name: file.suggestedFilename(), text };
}

it("downloads the filtered calls as a CSV a spreadsheet reads: BOM, header, the key's name quoted", async () => {
  const t = await usagePage(`key=${zoe.id}&since=24h`);
  await t.page.getByRole('button', { name: 'Export' }).click();
  const dialog = t.page.getByRole('dialog', { name: 'Export usage' });
  expect(await dialog.textContent()).toContain(`key ${AWKWARD} · last 24 hours`);
  await t.screenshot('e2e-usage-export-dialog');
  await dialog.getByRole('button', { name: 'Cancel' }).click();

  const { name, text } = await download(t, 'Each call', 'CSV');
  expect(name).toMatch(/^gatehouse-usage-call-\d{8}T\d{6}Z-\d{8}T\d{6}Z\.csv$/);
  expect(text.startsWith('\uFEFFid,at,requestId,keyId,keyName,model,')).toBe(true);
  const lines = text.slice(1).split('\r\n');
  expect(lines.at(-1)).toBe('');
  const calls = lines.slice(1, -1);
  // Zoë's two calls, oldest first; bob's is filtered out.
  expect(calls).toHaveLength(2);
  for (const line of calls) expect(line).toContain(`,${zoe.id},"Zoë, ""the"" tester",`);
  expect(calls[0]).toContain(',qwen,POST,/v1/chat/completions,200,');
  expect(calls[1]).toContain(',llama-3.2-3b,POST,/v1/chat/completions,200,');
  expect(text).not.toContain('bob');
});

it('downloads the same filter summed per model as JSON', async () => {
  const t = await usagePage(`key=${zoe.id}`);
  const { name, text } = await download(t, 'Per model', 'JSON');
  expect(name).toMatch(/^gatehouse-usage-model-until-\d{8}T\d{6}Z\.json$/);
  const rows = JSON.parse(text) as Array<{ model: string; requests: number; outputTokens: number }>;
  expect(rows.map((r) => [r.model, r.requests, r.outputTokens])).toEqual([
    ['llama-3.2-3b', 1, 3],
    ['qwen', 1, 3],
  ]);
});
