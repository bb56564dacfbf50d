/** curl against the OpenAI and Anthropic wire formats. */
import { defineSnippet } from './define.js';
import { optionalKey } from './keys.js';
import { lines, shDouble, shSingleBody, str } from './quoting.js';
import { anthropicBaseUrl, openaiBaseUrl } from './urls.js';
import type { SnippetContext } from './types.js';

const WINDOWS =
  'Windows cmd.exe does not understand the single-quoted JSON: use PowerShell with curl.exe, or put the ' +
  'body in a file and pass --data @body.json.';
const OPEN_MODE = 'In open mode (no key yet) the auth header is left out; once a key exists every request needs it.';

/** `-H "Authorization: Bearer …"`, or nothing in open mode. */
function bearerHeader(ctx: SnippetContext): string | undefined {
  const key = optionalKey(ctx.key);
  return key === undefined ? undefined : `  -H ${shDouble(`Authorization: Bearer ${key}`)} \\`;
}

/** The `-d '…'` body: the JSON text between single quotes. */
function body(json: string): string {
  return `  -d '${shSingleBody(json)}'`;
}

const chatBody = (model: string, stream: boolean) =>
  lines(
    '{',
    `    "model": ${str(model)},`,
    stream && '    "stream": true,',
    stream && '    "stream_options": {"include_usage": true},',
    '    "messages": [{"role": "user", "content": "Hello!"}]',
    '  }',
  );

const curlOpenaiChat = defineSnippet({
  id: 'curl-openai-chat',
  title: 'curl: OpenAI chat completion',
  client: 'curl',
  group: 'curl',
  language: 'bash',
  where: 'Any shell on a machine that can reach the gateway.',
  pitfalls: [
    'The URL is the full path …/v1/chat/completions; the /v1 is part of it.',
    'The key goes in "Authorization: Bearer <key>".',
    OPEN_MODE,
    WINDOWS,
  ],
  baseUrlKind: 'openai',
  keyRequired: false,
  keyField: 'an -H "Authorization: Bearer <key>" header',
  render: (ctx) =>
    lines(
      `curl ${openaiBaseUrl(ctx.origin)}/chat/completions \\`,
      '  -H "Content-Type: application/json" \\',
      bearerHeader(ctx),
      body(chatBody(ctx.model, false)),
    ),
});

const curlOpenaiChatStream = defineSnippet({
  id: 'curl-openai-chat-stream',
  title: 'curl: OpenAI chat completion, streaming',
  client: 'curl',
  group: 'curl',
  language: 'bash',
  where: 'Any shell on a machine that can reach the gateway.',
  pitfalls: [
    "-N turns off curl's output buffering so tokens appear as they arrive.",
    'The answer is Server-Sent Events: data: {chunk} lines ending with data: [DONE]; with include_usage ' +
      'the last chunk before [DONE] has "choices": [] and the usage.',
    OPEN_MODE,
    WINDOWS,
  ],
  baseUrlKind: 'openai',
  keyRequired: false,
  keyField: 'an -H "Authorization: Bearer <key>" header',
  render: (ctx) =>
    lines(
      `curl -N ${openaiBaseUrl(ctx.origin)}/chat/completions \\`,
      '  -H "Content-Type: application/json" \\',
      bearerHeader(ctx),
      body(chatBody(ctx.model, true)),
    ),
});

const curlAnthropicMessages = defineSnippet({
  id: 'curl-anthropic-messages',
  title: 'curl: Anthropic message',
  client: 'curl',
  group: 'curl',
  language: 'bash',
  where: 'Any shell on a machine that can reach the gateway.',
  pitfalls: [
    'max_tokens is required in Anthropic requests (unlike OpenAI chat completions).',
    'The key goes in x-api-key, as with the real Anthropic API; the gateway also accepts "Authorization: ' +
      'Bearer <key>".',
    'anthropic-version: 2023-06-01 is the header the Anthropic SDKs send.',
    'Streaming ("stream": true, with curl -N) uses named events (message_start … message_stop) and has no [DONE] line.',
    OPEN_MODE,
    WINDOWS,
  ],
  baseUrlKind: 'anthropic',
  keyRequired: false,
  keyField: 'an -H "x-api-key: <key>" header',
  render: (ctx) => {
    const key = optionalKey(ctx.key);
    return lines(
      `curl ${anthropicBaseUrl(ctx.origin)}/v1/messages \\`,
      '  -H "content-type: application/json" \\',
      key !== undefined && `  -H ${shDouble(`x-api-key: ${key}`)} \\`,
      '  -H "anthropic-version: 2023-06-01" \\',
      body(
        lines(
          '{',
          `    "model": ${str(ctx.model)},`,
          '    "max_tokens": 1024,',
          '    "messages": [{"role": "user", "content": "Hello!"}]',
          '  }',
        ),
      ),
    );
  },
});

const curlModels = defineSnippet({
  id: 'curl-models',
  title: 'curl: list models',
  client: 'curl',
  group: 'curl',
  language: 'bash',
  where: 'Any shell on a machine that can reach the gateway.',
  pitfalls: [
    'The ids listed here are the exact model names every client must use.',
    'A key limited to some models sees only those.',
    OPEN_MODE,
  ],
  baseUrlKind: 'openai',
  keyRequired: false,
  needs: ['models-list'],
  keyField: 'an -H "Authorization: Bearer <key>" header',
  render: (ctx) => {
    const key = optionalKey(ctx.key);
    const url = `${openaiBaseUrl(ctx.origin)}/models`;
    return key === undefined ? `curl ${url}` : `curl ${url} -H ${shDouble(`Authorization: Bearer ${key}`)}`;
  },
});

/** Shown when the page has no embedding model to fill in. */
export const EMBEDDING_MODEL_PLACEHOLDER = 'EMBEDDING-MODEL';

const curlEmbeddings = defineSnippet({
  id: 'curl-embeddings',
  title: 'curl: embeddings',
  client: 'curl',
  group: 'curl',
  language: 'bash',
  where: 'Any shell on a machine that can reach the gateway.',
  pitfalls: [
    'The model must be an embedding model (llama-server started with --embeddings); a chat model answers ' +
      'with an error.',
    OPEN_MODE,
    WINDOWS,
  ],
  baseUrlKind: 'openai',
  keyRequired: false,
  needs: ['embeddings'],
  keyField: 'an -H "Authorization: Bearer <key>" header',
  extraNote: (ctx) =>
    ctx.embeddingModel === undefined
      ? `Replace ${EMBEDDING_MODEL_PLACEHOLDER} with an embedding model id from /v1/models.`
      : undefined,
  render: (ctx) => {
    const key = optionalKey(ctx.key);
    const model = ctx.embeddingModel ?? EMBEDDING_MODEL_PLACEHOLDER;
    const headers = [
      '-H "Content-Type: application/json"',
      key !== undefined && `-H ${shDouble(`Authorization: Bearer ${key}`)}`,
    ]
      .filter(Boolean)
      .join(' ');
    return lines(
      `curl ${openaiBaseUrl(ctx.origin)}/embeddings \\`,
      `  ${headers} \\`,
      `  -d '${shSingleBody(`{"model": ${str(model)}, "input": "hello world"}`)}'`,
    );
  },
});

export const CURL_SNIPPETS = [
  curlOpenaiChat,
  curlOpenaiChatStream,
  curlAnthropicMessages,
  curlModels,
  curlEmbeddings,
] as const;
