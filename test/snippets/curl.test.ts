/**
 * Every curl snippet, executed verbatim with the real curl against a real gateway in front of
 * the llama-swap simulator: with a key created through the admin API, and in open mode.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { EMBEDDING_DIMS } from '../fakes/llama-swap/index.js';
import { startRecordingUpstream } from '../fakes/recording-upstream.js';
import { SNIPPETS, type SnippetContext } from '../../src/snippets/index.js';
import { requireCases } from './expectations.js';
import {
  ANSWER,
  cleanEnv,
  EMBEDDING_MODEL,
  liveContext,
  MODEL,
  requireProgram,
  runBash,
  scratchDir,
  startLiveGateways,
  type LiveGateways,
} from './harness.js';

/** What each snippet must print, and the path that must reach llama-swap. */
interface CurlCase {
  path: string;
  assertOutput(stdout: string): void;
}

const parsed = <T>(stdout: string): T => JSON.parse(stdout) as T;

const CASES = requireCases<CurlCase>('curl', {
  'curl-openai-chat': {
    path: '/v1/chat/completions',
    assertOutput: (out) =>
      expect(parsed(out)).toMatchObject({
        object: 'chat.completion',
        model: MODEL,
        choices: [{ message: { role: 'assistant', content: ANSWER } }],
      }),
  },
  'curl-openai-chat-stream': {
    path: '/v1/chat/completions',
    assertOutput: (out) => {
      expect(out.endsWith('data: [DONE]\n\n')).toBe(true);
      const chunks = out
        .split('\n\n')
        .filter((f) => f.startsWith('data: {'))
        .map(
          (f) =>
            JSON.parse(f.slice('data: '.length)) as {
              choices: Array<{ delta?: { content?: string } }>;
              usage?: unknown;
            },
        );
      expect(chunks.map((c) => c.choices[0]?.delta?.content ?? '').join('')).toBe(ANSWER);
      expect(chunks.at(-1)).toMatchObject({ choices: [], usage: { completion_tokens: 6 } });
    },
  },
  'curl-anthropic-messages': {
    path: '/v1/messages',
    assertOutput: (out) =>
      expect(parsed(out)).toMatchObject({
        id: expect.stringMatching(/^msg_/),
        type: 'message',
        content: [{ type: 'text', text: ANSWER }],
      }),
  },
  'curl-models': {
    path: '/v1/models',
    assertOutput: (out) => {
      const body = parsed<{ object: string; data: Array<{ id: string }> }>(out);
      expect(body.object).toBe('list');
      expect(body.data.map((m) => m.id)).toEqual(expect.arrayContaining([MODEL, EMBEDDING_MODEL]));
    },
  },
  'curl-embeddings': {
    path: '/v1/embeddings',
    assertOutput: (out) =>
      expect(parsed<{ data: Array<{ embedding: number[] }> }>(out).data[0]?.embedding).toHaveLength(EMBEDDING_DIMS),
  },
  'claude-code-preflight': {
    path: '/v1/messages',
    // A JSON body starting {"id":"msg_ means the URL and the key work.
    assertOutput: (out) => expect(out.startsWith('{"id":"msg_')).toBe(true),
  },
});

let live: LiveGateways;
let home: string;

beforeAll(async () => {
  requireProgram('curl');
  requireProgram('bash');
  home = scratchDir('curl-home');
  live = await startLiveGateways();
});
afterAll(async () => {
  await live?.close();
});

async function runSnippet(render: (ctx: SnippetContext) => string, ctx: SnippetContext): Promise<string> {
  const result = await runBash(render(ctx), cleanEnv(home));
  expect(result.code, result.stderr).toBe(0);
  return result.stdout;
}

describe.each(CASES)('%s', (id, c) => {
  const snippet = SNIPPETS.find((s) => s.id === id)!;

  it('answers 200 through a protected gateway with the real key', async () => {
    const before = live.sim.received.length;
    const out = await runSnippet(snippet.render, liveContext(live, 'protected'));
    c.assertOutput(out);
    // /v1/models is answered by the gateway itself; everything else reaches llama-swap.
    if (c.path !== '/v1/models')
      expect(live.sim.received.slice(before).map((r) => r.path.split('?')[0])).toEqual([c.path]);
  });

  it('answers 200 through a gateway in open mode, with no auth header at all', async () => {
    const text = snippet.render(liveContext(live, 'open'));
    expect(text).not.toMatch(/authorization|x-api-key/i);
    c.assertOutput(await runSnippet(snippet.render, liveContext(live, 'open')));
  });

  it('is refused with 401 when the placeholder for a key chosen by prefix is left in', async () => {
    const out = await runSnippet(snippet.render, {
      ...liveContext(live, 'protected'),
      key: { kind: 'prefix', prefix: live.secret.slice(0, 9) },
    });
    expect(out).toMatch(/"type":\s*"authentication_error"/);
  });
});

describe('the curl snippets authenticate the way each wire format expects', () => {
  it('sends the Anthropic message to /v1/messages with x-api-key and anthropic-version, and no Bearer', () => {
    const text = SNIPPETS.find((s) => s.id === 'curl-anthropic-messages')!.render(liveContext(live, 'protected'));
    expect(text.split('\n')[0]).toBe(`curl ${live.protectedGateway.url}/v1/messages \\`);
    expect(text).toContain(`-H "x-api-key: ${live.secret}"`);
    expect(text).toContain('-H "anthropic-version: 2023-06-01"');
    expect(text).not.toMatch(/authorization/i);
    expect(text).toContain('"max_tokens": 1024');
  });

  it('streams with -N and asks for usage in the last chunk', () => {
    const text = SNIPPETS.find((s) => s.id === 'curl-openai-chat-stream')!.render(liveContext(live, 'protected'));
    expect(text.startsWith(`curl -N ${live.protectedGateway.url}/v1/chat/completions`)).toBe(true);
    expect(text).toContain('"stream_options": {"include_usage": true}');
  });

  it('keeps a model id with quotes and $ intact through the shell', async () => {
    const echo = await startRecordingUpstream((_req, res, body) => void res.end(body));
    try {
      const model = `it's "$HOME" \`x\``;
      const ctx: SnippetContext = {
        origin: echo.url,
        model,
        embeddingModel: model,
        key: { kind: 'secret', value: live.secret },
      };
      for (const id of [
        'curl-openai-chat',
        'curl-openai-chat-stream',
        'curl-anthropic-messages',
        'curl-embeddings',
        'claude-code-preflight',
      ] as const) {
        const out = await runSnippet(SNIPPETS.find((s) => s.id === id)!.render, ctx);
        expect(parsed<{ model: string }>(out).model, id).toBe(model);
      }
      expect(echo.received.map((r) => r.headers.authorization ?? r.headers['x-api-key'])).toEqual(
        expect.arrayContaining([`Bearer ${live.secret}`, live.secret]),
      );
    } finally {
      await echo.close();
    }
  });
});
