/**
 * The Python snippets compile with python3 -m py_compile, and name the right base URL, key and
 * model in the right arguments. (The openai / anthropic / ollama packages are not installed here, so
 * the same requests are made on the SDK's behalf from the values the snippet passes.)
 */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { anthropicBaseUrl, openaiBaseUrl, SNIPPETS } from '../../src/snippets/index.js';
import { requireCases } from './expectations.js';
import {
  cleanEnv,
  expectAnthropicMessage,
  expectOllamaChat,
  expectOpenaiChat,
  liveContext,
  MODEL,
  requireProgram,
  run,
  scratchDir,
  startLiveGateways,
  type LiveGateways,
} from './harness.js';

interface PythonCase {
  constructor: RegExp;
  /** The request the SDK makes with what the snippet gave it. */
  request(baseUrl: string, key: string, model: string): Promise<void>;
  stream: boolean;
}

const CASES = requireCases<PythonCase>('python', {
  'python-openai': {
    constructor: /^client = OpenAI\(base_url="([^"]+)", api_key="([^"]+)"\)$/m,
    request: (b, k, m) => expectOpenaiChat(b, k, m),
    stream: false,
  },
  'python-openai-stream': {
    constructor: /^client = OpenAI\(base_url="([^"]+)", api_key="([^"]+)"\)$/m,
    request: (b, k, m) => expectOpenaiChat(b, k, m, { stream: true }),
    stream: true,
  },
  // The anthropic SDK sends api_key as X-Api-Key to {base_url}/v1/messages.
  'python-anthropic': {
    constructor: /^client = Anthropic\(base_url="([^"]+)", api_key="([^"]+)"\)$/m,
    request: (b, k, m) => expectAnthropicMessage(b, k, m, 'x-api-key'),
    stream: true,
  },
  // The ollama package sends headers= as given, to {host}/api/chat: the Ollama door.
  'ollama-python': {
    constructor: /^client = Client\(host="([^"]+)", headers=\{"Authorization": "Bearer ([^"]+)"\}\)$/m,
    request: (b, k, m) => expectOllamaChat(b, k, m, { stream: true }),
    stream: true,
  },
});

let live: LiveGateways;
let dir: string;

beforeAll(async () => {
  requireProgram('python3');
  dir = scratchDir('python');
  live = await startLiveGateways();
});
afterAll(async () => {
  await live?.close();
});

describe.each(CASES)('%s', (id, c) => {
  const snippet = SNIPPETS.find((s) => s.id === id)!;

  it.each(['protected', 'open'] as const)('compiles with python3 -m py_compile (%s gateway)', async (mode) => {
    const file = join(dir, `${id.replaceAll('-', '_')}_${mode}.py`);
    writeFileSync(file, snippet.render(liveContext(live, mode)));
    const result = await run('python3', ['-m', 'py_compile', file], { env: cleanEnv(dir) });
    expect(result.code, result.stderr).toBe(0);
  });

  it('passes the base URL of its kind, the key and the model, and those values work', async () => {
    const ctx = liveContext(live, 'protected');
    const text = snippet.render(ctx);
    const [, baseUrl, key] = c.constructor.exec(text) ?? [];
    const expectedBase = {
      openai: openaiBaseUrl(ctx.origin),
      anthropic: anthropicBaseUrl(ctx.origin),
      ollama: ctx.ollamaOrigin,
    }[snippet.baseUrlKind];
    expect(baseUrl).toBe(expectedBase);
    expect(key).toBe(live.secret);
    expect(text.match(/model="([^"]+)"/g)).toEqual(expect.arrayContaining([`model="${MODEL}"`]));
    expect(text.includes('stream=True') || text.includes('messages.stream(')).toBe(c.stream);
    await c.request(baseUrl!, key!, MODEL);
  });
});
