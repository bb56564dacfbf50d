/**
 * Snippets that list form fields to fill in (Home Assistant integrations, Open WebUI's admin
 * settings): the fields carry the OpenAI base URL with /v1 (or the Ollama door's, for Ollama
 * connections), the key and the model, and a client using those values (validation by listing
 * models, then chat) works against a real gateway.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { NO_KEY_PLACEHOLDER, SNIPPETS, type SnippetContext } from '../../src/snippets/index.js';
import { requireCases } from './expectations.js';
import {
  expectModelsList,
  expectOllamaChat,
  expectOllamaTags,
  expectOpenaiChat,
  fieldsOf,
  fromContainer,
  liveContext,
  MODEL,
  startLiveGateways,
  type LiveGateways,
} from './harness.js';

interface FieldsCase {
  /** The fields and values the snippet must show; `key` is the secret or the open-mode text. */
  expected(ctx: SnippetContext, key: string | undefined): Record<string, string>;
  /** Field names holding URL, key and model, for the live requests (no key field: the client sends none). */
  url: string;
  key?: string;
  /** The client speaks Ollama's API to the Ollama door (else OpenAI's to /v1). */
  ollama?: true;
  model?: string;
  stream: boolean;
  /** Not part of the form (e.g. Open WebUI picks the model in the chat). */
  chatModel?: string;
}

const CASES = requireCases<FieldsCase>('fields', {
  'home-assistant-local-openai': {
    expected: (ctx, key) => ({
      'Server Name': 'Gatehouse',
      'Server URL': `${ctx.origin}/v1`,
      'API key': key ?? '(leave empty)',
      'Server Type': 'Generic OpenAI-Compatible',
      Model: MODEL,
      'Tool Providers': 'Assist',
    }),
    url: 'Server URL',
    key: 'API key',
    model: 'Model',
    // The integration streams chat completions.
    stream: true,
  },
  'home-assistant-extended-openai': {
    expected: (ctx, key) => ({
      Name: 'Gatehouse',
      'API Key': key ?? NO_KEY_PLACEHOLDER,
      'Base Url': `${ctx.origin}/v1`,
      'Api Version': '(leave empty)',
      Organization: '(leave empty)',
      'Skip Authentication': 'off',
      'Api Provider': 'OpenAI',
      'Completion Model': MODEL,
    }),
    url: 'Base Url',
    key: 'API Key',
    model: 'Completion Model',
    // Requests are not streamed.
    stream: false,
  },
  'open-webui-admin': {
    expected: (ctx, key) => ({
      URL: `http://host.docker.internal:${new URL(ctx.origin).port}/v1`,
      Key: key ?? '(leave empty)',
    }),
    url: 'URL',
    key: 'Key',
    stream: true,
    chatModel: MODEL,
  },
  // No key field: keyless calls act as the protected gateway's key (GATEHOUSE_OLLAMA_KEY).
  'ollama-home-assistant': {
    expected: (ctx) => ({ URL: ctx.ollamaOrigin!, Model: `${MODEL}:latest`, 'Control Home Assistant': 'Assist' }),
    url: 'URL',
    model: 'Model',
    stream: true,
    ollama: true,
  },
  'ollama-open-webui': {
    expected: (ctx, key) => ({
      URL: `http://host.docker.internal:${new URL(ctx.ollamaOrigin!).port}`,
      Auth: key === undefined ? 'None' : 'Bearer',
      ...(key === undefined ? {} : { Key: key }),
    }),
    url: 'URL',
    key: 'Key',
    stream: true,
    chatModel: MODEL,
    ollama: true,
  },
});

let live: LiveGateways;

beforeAll(async () => {
  live = await startLiveGateways();
});
afterAll(async () => {
  await live?.close();
});

describe.each(CASES)('%s', (id, c) => {
  const snippet = SNIPPETS.find((s) => s.id === id)!;

  it.each(['protected', 'open'] as const)(
    'shows URL, key and model, and they pass validation and chat through a %s gateway',
    async (mode) => {
      const ctx = liveContext(live, mode);
      const key = mode === 'protected' ? live.secret : snippet.keyRequired ? NO_KEY_PLACEHOLDER : undefined;
      const fields = fieldsOf(snippet.render(ctx));
      expect(fields).toEqual(c.expected(ctx, key));
      const baseUrl = fromContainer(fields[c.url]!);
      const typed = c.key === undefined ? undefined : fields[c.key];
      const sentKey = typed === '(leave empty)' ? undefined : typed;
      const model = c.model === undefined ? c.chatModel! : fields[c.model]!;
      if (c.ollama) {
        expect(baseUrl).toBe(ctx.ollamaOrigin);
        await expectOllamaTags(baseUrl, sentKey, model);
        await expectOllamaChat(baseUrl, sentKey, model, { stream: c.stream });
        return;
      }
      expect(fields[c.url]).toMatch(/\/v1$/);
      await expectModelsList(baseUrl, sentKey, model);
      await expectOpenaiChat(baseUrl, sentKey, model, { stream: c.stream });
    },
  );
});

describe('Home Assistant with a LAN origin', () => {
  it('shows the LAN address as typed, with /v1', () => {
    for (const id of ['home-assistant-local-openai', 'home-assistant-extended-openai'] as const) {
      const text = SNIPPETS.find((s) => s.id === id)!.render({
        origin: 'http://192.168.1.5:3000/',
        model: MODEL,
        key: { kind: 'none' },
      });
      expect(Object.values(fieldsOf(text))).toContain('http://192.168.1.5:3000/v1');
    }
  });
});
