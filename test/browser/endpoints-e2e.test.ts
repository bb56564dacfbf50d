/**
 * The Endpoints page in headless Chromium against the real gateway and the llama-swap
 * simulator: the snippets shown are exactly src/snippets' output, the copied curl snippet
 * runs with the real curl, and the host, key and open-mode cases read right.
 * Screenshots: test-results/screenshots/endpoints-*.png.
 */
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import type { Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  keyPlaceholder,
  NO_KEY_PLACEHOLDER,
  renderSnippet,
  SNIPPETS,
  type SnippetContext,
  type SnippetId,
} from '../../src/snippets/index.js';
import { DEMO_CONFIG, startSimulator, type Simulator } from '../fakes/llama-swap/index.js';
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

const run = promisify(execFile);
const PASSWORD = 'endpoints page password';
const PUBLIC_URL = 'https://gatehouse.example.test:8443/llm';
let browser: Browser;
let sim: Simulator;
let gateway: TestGateway;
let publicGateway: TestGateway;

beforeAll(async () => {
  requireDashboardBuild();
  browser = await launchBrowser();
  sim = await startSimulator({ config: DEMO_CONFIG });
  gateway = await startTestGateway(sim.url, { adminPassword: PASSWORD }, {}, { withStore: true });
  publicGateway = await startTestGateway(
    sim.url,
    { adminPassword: PASSWORD, publicUrl: PUBLIC_URL },
    {},
    { withStore: true },
  );
}, 60_000);
afterAll(async () => {
  await browser?.close();
  await gateway?.close();
  await publicGateway?.close();
  await sim?.close();
});

async function endpointsPage(target: TestGateway, options: OpenPageOptions = {}): Promise<TestPage> {
  const t = await openPage(browser, target.url, options);
  await t.context.grantPermissions(['clipboard-read', 'clipboard-write'], { origin: target.url });
  await signIn(t.page, PASSWORD, { next: '/endpoints' });
  await t.page.getByRole('heading', { name: 'Endpoints' }).waitFor();
  await t.page.getByRole('textbox', { name: 'OpenAI-style base URL' }).waitFor();
  return t;
}

const snippet = (t: TestPage, id: SnippetId) => t.page.locator(`[data-snippet-id="${id}"]`);
const shownText = async (t: TestPage, id: SnippetId) => (await snippet(t, id).locator('pre').textContent()) ?? '';

async function openClient(t: TestPage, group: string, client?: string): Promise<void> {
  await t.page.getByRole('tab', { name: group, exact: true }).click();
  if (client) await t.page.getByRole('tab', { name: client, exact: true }).click();
}

describe('the Endpoints page in open mode', () => {
  it('shows both base URLs, says the API is open, and leaves the key out where it can', async () => {
    const t = await endpointsPage(gateway);
    try {
      expect(await t.page.getByRole('textbox', { name: 'OpenAI-style base URL' }).inputValue()).toBe(
        `${gateway.url}/v1`,
      );
      expect(await t.page.getByRole('textbox', { name: 'Anthropic-style base URL' }).inputValue()).toBe(gateway.url);
      await t.page.getByText('Open mode:', { exact: false }).first().waitFor();

      const curl = await shownText(t, 'curl-openai-chat');
      expect(curl).not.toContain('Authorization');
      expect(
        await snippet(t, 'curl-openai-chat')
          .getByText(/Open mode: no key exists yet/)
          .count(),
      ).toBe(1);

      // A client that refuses an empty key gets the module's placeholder, and the note says why.
      await openClient(t, 'Python', 'openai');
      const python = await shownText(t, 'python-openai');
      expect(python).toContain(`api_key="${NO_KEY_PLACEHOLDER}"`);
      await snippet(t, 'python-openai')
        .getByText(/wants a non-empty one/)
        .waitFor();
      await t.screenshot('endpoints-open-mode');

      // The open-mode curl snippet works as shown.
      await openClient(t, 'curl');
      const { stdout } = await run('bash', ['-c', await shownText(t, 'curl-openai-chat')]);
      expect(JSON.parse(stdout)).toMatchObject({ object: 'chat.completion' });
      expect(t.console.errors).toEqual([]);
      expect(t.externalRequests()).toEqual([]);
    } finally {
      await t.close();
    }
  });
});

describe('the Endpoints page with the Ollama door on', () => {
  it("shows the door's base URL and an Ollama group whose snippets are the module's, with the notice about keyless clients", async () => {
    const door = await startTestGateway(
      sim.url,
      { adminPassword: PASSWORD, ollamaListen: { host: '127.0.0.1', port: 11500 } },
      {},
      { withStore: true },
    );
    const t = await endpointsPage(door);
    try {
      const ollamaUrl = `http://127.0.0.1:11500`;
      expect(await t.page.getByRole('textbox', { name: 'Ollama base URL' }).inputValue()).toBe(ollamaUrl);
      await openClient(t, 'Ollama', 'ollama (npm)');
      const shown = await shownText(t, 'ollama-javascript');
      expect(shown).toContain(`host: "${ollamaUrl}",`);
      const model = await t.page.getByLabel('Model', { exact: true }).inputValue();
      const ctx: SnippetContext = {
        origin: door.url,
        ollamaOrigin: ollamaUrl,
        model,
        embeddingModel: 'nomic-embed',
        key: { kind: 'none' },
      };
      expect(shown).toBe(renderSnippet('ollama-javascript', ctx));
      await t.page.getByText(/Home Assistant and Copilot send no key/).waitFor();
      await t.screenshot('endpoints-ollama');
      expect(t.console.errors).toEqual([]);
    } finally {
      await t.close();
      await door.close();
    }
  });

  it('has no Ollama base URL or group while the door is off', async () => {
    const t = await endpointsPage(gateway);
    try {
      expect(await t.page.getByRole('textbox', { name: 'Ollama base URL' }).count()).toBe(0);
      expect(await t.page.getByRole('tab', { name: 'Ollama', exact: true }).count()).toBe(0);
    } finally {
      await t.close();
    }
  });
});

describe('creating a key for a client', () => {
  it('creates a key in one click; the copied curl snippet is the text shown and runs with curl (200, a chat completion)', async () => {
    const t = await endpointsPage(gateway);
    try {
      await t.page.getByLabel('Model', { exact: true }).selectOption('llama-3.2-3b');
      await t.page.getByRole('button', { name: 'Create a key for curl' }).click();
      await t.page.getByText(/is in every snippet below/).waitFor();

      const shown = await shownText(t, 'curl-openai-chat');
      expect(shown).toMatch(/Authorization: Bearer sk-[0-9A-Za-z]{43}/);
      expect(shown).toContain('"model": "llama-3.2-3b"');
      await snippet(t, 'curl-openai-chat').getByRole('button', { name: /^Copy/ }).click();
      await snippet(t, 'curl-openai-chat')
        .getByRole('button', { name: /Copied|^Copy/ })
        .waitFor();
      const copied = await inPage<string>(t.page, 'navigator.clipboard.readText()');
      expect(copied).toBe(shown);

      const before = gateway.logLines().length;
      const { stdout } = await run('bash', ['-c', copied]);
      const body = JSON.parse(stdout) as {
        object: string;
        model: string;
        choices: Array<{ message: { role: string; content: string } }>;
      };
      expect(body.object).toBe('chat.completion');
      expect(body.choices[0]?.message.role).toBe('assistant');
      expect(body.choices[0]?.message.content.length).toBeGreaterThan(0);
      const call = gateway
        .logLines()
        .slice(before)
        .find((line) => line.path === '/v1/chat/completions');
      expect(call?.status).toBe(200);

      // The key is real and now required: without it, 401.
      const { stdout: refused } = await run('bash', [
        '-c',
        copied.replace(/ {2}-H "Authorization: Bearer [^"]+" \\\n/, ''),
      ]);
      expect(JSON.parse(refused)).toMatchObject({ error: { code: 'missing_api_key' } });
      await t.screenshot('endpoints-key-created');

      // The secret stays in page memory: not in storage, not in the URL.
      const secret = /Bearer (sk-[0-9A-Za-z]+)/.exec(shown)![1]!;
      const stored = await inPage<string>(
        t.page,
        'JSON.stringify([Object.entries(localStorage), Object.entries(sessionStorage), location.href])',
      );
      expect(stored).not.toContain(secret);

      // Every snippet of every client is exactly the module's rendering for this context.
      const ctx: SnippetContext = {
        origin: gateway.url,
        model: 'llama-3.2-3b',
        embeddingModel: 'nomic-embed',
        key: { kind: 'secret', value: secret },
      };
      let checked = 0;
      for (const group of ['curl', 'Python', 'TypeScript', 'Home Assistant', 'Coding agents', 'Editors', 'Chat UIs']) {
        await t.page.getByRole('tab', { name: group, exact: true }).click();
        const clientTabs = t.page.getByRole('tablist', { name: `${group} clients` }).getByRole('tab');
        const clients = (await clientTabs.count()) || 1;
        for (let i = 0; i < clients; i++) {
          if ((await clientTabs.count()) > 0) await clientTabs.nth(i).click();
          for (const card of await t.page.locator('[data-snippet-id]').all()) {
            const id = (await card.getAttribute('data-snippet-id')) as SnippetId;
            expect((await card.locator('pre').textContent()) ?? '', id).toBe(renderSnippet(id, ctx));
            checked++;
          }
        }
      }
      // This gateway's Ollama door is off, so the page has no Ollama group.
      expect(checked).toBe(SNIPPETS.filter((s) => s.group !== 'ollama').length);
      expect(t.console.errors).toEqual([]);
    } finally {
      await t.close();
    }
  });

  it('never shows /v1 on the Anthropic base URL and always on the OpenAI one, and the Anthropic snippets follow', async () => {
    const t = await endpointsPage(gateway);
    try {
      const openai = await t.page.getByRole('textbox', { name: 'OpenAI-style base URL' }).inputValue();
      const anthropic = await t.page.getByRole('textbox', { name: 'Anthropic-style base URL' }).inputValue();
      expect(openai.endsWith('/v1')).toBe(true);
      expect(anthropic.endsWith('/v1')).toBe(false);
      expect(anthropic.endsWith('/')).toBe(false);
      await openClient(t, 'Coding agents', 'Claude Code');
      const claude = await shownText(t, 'claude-code-shell');
      expect(claude).toContain(`ANTHROPIC_BASE_URL="${anthropic}"`);
      expect(claude).not.toContain('/v1');
      await openClient(t, 'Python', 'anthropic');
      expect(await shownText(t, 'python-anthropic')).toContain(`base_url="${anthropic}"`);
    } finally {
      await t.close();
    }
  });

  it('with an existing key picked: its prefix placeholder, a note, and only the models it may use', async () => {
    const t = await endpointsPage(gateway);
    try {
      const created = await t.page.evaluate(async () => {
        const res = await fetch('/api/keys', {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify({ name: 'Restricted', models: ['qwen3-8b'] }),
        });
        return (await res.json()) as { key: { id: string; prefix: string } };
      });
      await t.page.reload();
      await t.page.getByRole('textbox', { name: 'OpenAI-style base URL' }).waitFor();
      await t.page.getByText('Existing key', { exact: true }).click();
      await t.page.getByLabel('Key', { exact: true }).selectOption(created.key.id);
      const shown = await shownText(t, 'curl-openai-chat');
      expect(shown).toContain(`Authorization: Bearer ${keyPlaceholder(created.key.prefix)}`);
      await snippet(t, 'curl-openai-chat')
        .getByText(`Replace ${keyPlaceholder(created.key.prefix)} with your full key`, { exact: false })
        .waitFor();
      const models = await t.page.getByLabel('Model', { exact: true }).locator('option').allTextContents();
      expect(models).toEqual(['qwen3-8b — Qwen3 8B']);
      expect(shown).toContain('"model": "qwen3-8b"');
      await t.screenshot('endpoints-existing-key');

      // A pasted key fills the snippets as is.
      await t.page.getByText('Paste a key', { exact: true }).click();
      await t.page.getByLabel('Your key').fill('sk-pasted-by-hand');
      expect(await shownText(t, 'curl-openai-chat')).toContain('Authorization: Bearer sk-pasted-by-hand');
    } finally {
      await t.close();
    }
  });

  it('moves between tabs with the arrow keys', async () => {
    const t = await endpointsPage(gateway);
    try {
      await t.page.getByRole('tab', { name: 'curl', exact: true }).focus();
      await t.page.keyboard.press('ArrowRight');
      await expect
        .poll(() => t.page.getByRole('tab', { name: 'Python', exact: true }).getAttribute('aria-selected'))
        .toBe('true');
      await snippet(t, 'python-openai').waitFor();
      await t.page.keyboard.press('End');
      await expect
        .poll(() => t.page.getByRole('tab', { name: 'Chat UIs', exact: true }).getAttribute('aria-selected'))
        .toBe('true');
      expect(await inPage(t.page, 'document.activeElement?.textContent?.trim()')).toBe('Chat UIs');
      expect(t.page.url()).toContain('client=Open+WebUI');
    } finally {
      await t.close();
    }
  });

  it('looks finished in the dark theme and at phone width', async () => {
    for (const [name, options] of [
      ['endpoints-dark', { colorScheme: 'dark', viewport: DESKTOP }],
      ['endpoints-phone', { viewport: PHONE }],
      ['endpoints-phone-dark', { colorScheme: 'dark', viewport: PHONE }],
    ] as const) {
      const t = await endpointsPage(gateway, options);
      try {
        await openClient(t, 'Chat UIs');
        await snippet(t, 'open-webui-docker').waitFor();
        await t.screenshot(name, { fullPage: true });
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

describe('GATEHOUSE_PUBLIC_URL', () => {
  it('is the host in both base URLs and every snippet', async () => {
    const t = await endpointsPage(publicGateway);
    try {
      expect(await t.page.getByRole('textbox', { name: 'OpenAI-style base URL' }).inputValue()).toBe(
        `${PUBLIC_URL}/v1`,
      );
      expect(await t.page.getByRole('textbox', { name: 'Anthropic-style base URL' }).inputValue()).toBe(PUBLIC_URL);
      await t.page.getByText('Host from GATEHOUSE_PUBLIC_URL').waitFor();
      expect(await shownText(t, 'curl-openai-chat')).toContain(`curl ${PUBLIC_URL}/v1/chat/completions`);
      expect(await shownText(t, 'curl-anthropic-messages')).toContain(`curl ${PUBLIC_URL}/v1/messages`);
      expect(await t.page.content()).not.toContain(publicGateway.url.replace('http://', ''));
      await t.screenshot('endpoints-public-url');
    } finally {
      await t.close();
    }
  });
});

describe('the models the page fills in first', () => {
  it('with only an embedding model loaded: a chat model for chat, the embedding model for embeddings, and both run', async () => {
    await sim.load('nomic-embed');
    const t = await endpointsPage(gateway);
    try {
      expect(sim.state('nomic-embed')).toBe('ready');
      const chatModel = t.page.getByLabel('Model', { exact: true });
      await expect.poll(() => chatModel.inputValue()).toBe('llama-3.2-3b');
      expect(await t.page.getByLabel(/^Embedding model/).inputValue()).toBe('nomic-embed');
      const chat = await shownText(t, 'curl-openai-chat');
      expect(chat).toContain('"model": "llama-3.2-3b"');
      const embeddings = await shownText(t, 'curl-embeddings');
      expect(embeddings).toContain('"model": "nomic-embed"');
      await t.screenshot('endpoints-embedding-loaded');

      // Both run as shown, with a key made here: the chat one through a chat model, the embedding one
      // through nomic-embed.
      await t.page.getByRole('button', { name: 'Create a key for curl' }).click();
      await t.page.getByText(/is in every snippet below/).waitFor();
      const { stdout: answer } = await run('bash', ['-c', await shownText(t, 'curl-openai-chat')]);
      expect(JSON.parse(answer)).toMatchObject({ object: 'chat.completion', model: 'llama-3.2-3b' });
      const { stdout: vectors } = await run('bash', ['-c', await shownText(t, 'curl-embeddings')]);
      expect(JSON.parse(vectors)).toMatchObject({ object: 'list', data: [{ object: 'embedding' }] });
      expect(t.console.errors).toEqual([]);
    } finally {
      await t.close();
      await sim.unload();
    }
  });

  it("fills OpenCode's context window from the size llama-swap declares for the model", async () => {
    const t = await endpointsPage(gateway);
    try {
      await t.page.getByLabel('Model', { exact: true }).selectOption('qwen3-8b');
      await openClient(t, 'Coding agents', 'OpenCode');
      const config = JSON.parse(await shownText(t, 'opencode-json')) as {
        provider: { gatehouse: { models: Record<string, { limit: { context: number } }> } };
      };
      expect(config.provider.gatehouse.models['qwen3-8b']?.limit.context).toBe(32768);
      expect(
        await snippet(t, 'opencode-json')
          .getByText(/declares no context size/)
          .count(),
      ).toBe(0);
    } finally {
      await t.close();
    }
  });
});

describe('pasting a key', () => {
  it('hints gently when the text does not look like a Gatehouse key, and uses it anyway', async () => {
    const t = await endpointsPage(gateway);
    try {
      await t.page.getByText('Paste a key', { exact: true }).click();
      const input = t.page.getByLabel('Your key');
      await input.fill('my-llama-swap-key');
      const hint = t.page.getByText('This does not look like a Gatehouse key: those start with sk-.');
      await hint.waitFor();
      expect(await shownText(t, 'curl-openai-chat')).toContain('Authorization: Bearer my-llama-swap-key');
      expect(await input.getAttribute('aria-describedby')).toContain('pasted-key-shape');
      await t.screenshot('endpoints-pasted-key-hint');

      await input.fill('sk-7Qm2Xb9LpV4nT8cK1wZ6');
      await t.page.getByText('(this has 20 characters after sk-)', { exact: false }).waitFor();

      const created = await t.page.evaluate(async () => {
        const res = await fetch('/api/keys', {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify({ name: 'Pasted' }),
        });
        return ((await res.json()) as { secret: string }).secret;
      });
      await input.fill(created);
      await t.page.getByText(/does not look like/).waitFor({ state: 'detached' });
      expect(await shownText(t, 'curl-openai-chat')).toContain(`Authorization: Bearer ${created}`);
    } finally {
      await t.close();
    }
  });
});
