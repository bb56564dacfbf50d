/**
 * The official TypeScript SDKs and the Vercel AI SDK. The text is valid
 * JavaScript as well (no type annotations), so it runs as an `.mjs` file too.
 */
import { defineSnippet } from './define.js';
import { optionalKey, requiredKey } from './keys.js';
import { lines, str } from './quoting.js';
import { anthropicBaseUrl, openaiBaseUrl } from './urls.js';

/**
 * Node 20 runs neither a .ts file nor top-level await in CommonJS: the text runs as an .mjs file,
 * and as TypeScript through tsx only as .mts (tsx compiles a .ts file outside a "type": "module"
 * package to CommonJS, which refuses top-level await).
 */
function runWhere(packages: string): string {
  return (
    `Save as app.mjs, npm install ${packages}, then node app.mjs (Node.js 20+); ` +
    'as TypeScript: app.mts, npx tsx app.mts.'
  );
}

const BROWSER =
  'In a browser the SDK refuses to run unless dangerouslyAllowBrowser: true is set, which exposes the key ' +
  'to every visitor: keep it server-side.';

const typescriptOpenai = defineSnippet({
  id: 'typescript-openai',
  title: 'TypeScript: openai',
  client: 'openai (npm)',
  group: 'typescript',
  language: 'typescript',
  where: runWhere('openai'),
  pitfalls: [
    'baseURL must end in /v1: the SDK appends /chat/completions to it.',
    'The SDK throws when apiKey is empty (and OPENAI_API_KEY is unset), even though the gateway in open ' +
      'mode needs none.',
    BROWSER,
  ],
  baseUrlKind: 'openai',
  keyRequired: true,
  keyField: 'apiKey',
  render: (ctx) => {
    const request = lines(`  model: ${str(ctx.model)},`, '  messages: [{ role: "user", content: "Hello!" }],');
    return lines(
      'import OpenAI from "openai";',
      '',
      `const client = new OpenAI({ baseURL: ${str(openaiBaseUrl(ctx.origin))}, apiKey: ` +
        `${str(requiredKey(ctx.key))} });`,
      '',
      'const completion = await client.chat.completions.create({',
      request,
      '});',
      'console.log(completion.choices[0]?.message.content);',
      '',
      'const stream = await client.chat.completions.create({',
      request,
      '  stream: true,',
      '});',
      'for await (const chunk of stream) {',
      '  process.stdout.write(chunk.choices[0]?.delta?.content ?? "");',
      '}',
      'process.stdout.write("\\n");',
    );
  },
});

const typescriptAnthropic = defineSnippet({
  id: 'typescript-anthropic',
  title: 'TypeScript: @anthropic-ai/sdk',
  client: '@anthropic-ai/sdk',
  group: 'typescript',
  language: 'typescript',
  where: runWhere('@anthropic-ai/sdk'),
  pitfalls: [
    'baseURL has no /v1: the SDK adds /v1/messages itself, so …/v1 gives /v1/v1/messages and a 404.',
    'apiKey is sent as X-Api-Key; authToken instead sends Authorization: Bearer. The gateway accepts both.',
    'ANTHROPIC_API_KEY / ANTHROPIC_AUTH_TOKEN left in the environment are picked up too.',
    BROWSER,
  ],
  baseUrlKind: 'anthropic',
  keyRequired: true,
  keyField: 'apiKey',
  render: (ctx) => {
    const request = lines(
      `  model: ${str(ctx.model)},`,
      '  max_tokens: 1024,',
      '  messages: [{ role: "user", content: "Hello!" }],',
    );
    return lines(
      'import Anthropic from "@anthropic-ai/sdk";',
      '',
      `const client = new Anthropic({ baseURL: ${str(anthropicBaseUrl(ctx.origin))}, apiKey: ` +
        `${str(requiredKey(ctx.key))} });`,
      '',
      'const msg = await client.messages.create({',
      request,
      '});',
      'for (const block of msg.content) if (block.type === "text") console.log(block.text);',
      '',
      'const stream = client.messages.stream({',
      request,
      '});',
      'stream.on("text", (delta) => process.stdout.write(delta));',
      'await stream.finalMessage();',
      'process.stdout.write("\\n");',
    );
  },
});

const typescriptAiSdk = defineSnippet({
  id: 'typescript-ai-sdk',
  title: 'TypeScript: Vercel AI SDK (@ai-sdk/openai-compatible)',
  client: 'Vercel AI SDK',
  group: 'typescript',
  language: 'typescript',
  where: runWhere('ai @ai-sdk/openai-compatible'),
  pitfalls: [
    'baseURL must end in /v1.',
    'Use gatehouse.chatModel(…): it calls /chat/completions, which every model server behind the gateway speaks.',
    '@ai-sdk/anthropic is the opposite of the official Anthropic SDK: it wants …/v1 in baseURL and reads ' +
      'the same ANTHROPIC_BASE_URL variable Claude Code uses without /v1, so pass baseURL explicitly if you ' +
      'use it.',
  ],
  baseUrlKind: 'openai',
  keyRequired: false,
  keyField: 'apiKey',
  render: (ctx) => {
    const key = optionalKey(ctx.key);
    const model = `gatehouse.chatModel(${str(ctx.model)})`;
    return lines(
      'import { createOpenAICompatible } from "@ai-sdk/openai-compatible";',
      'import { generateText, streamText } from "ai";',
      '',
      'const gatehouse = createOpenAICompatible({',
      '  name: "gatehouse",',
      `  baseURL: ${str(openaiBaseUrl(ctx.origin))},`,
      key !== undefined && `  apiKey: ${str(key)},`,
      '});',
      '',
      'const { text } = await generateText({',
      `  model: ${model},`,
      '  prompt: "Hello!",',
      '});',
      'console.log(text);',
      '',
      `const result = streamText({ model: ${model}, prompt: "Hello!" });`,
      'for await (const delta of result.textStream) process.stdout.write(delta);',
      'process.stdout.write("\\n");',
    );
  },
});

export const TYPESCRIPT_SNIPPETS = [typescriptOpenai, typescriptAnthropic, typescriptAiSdk] as const;
