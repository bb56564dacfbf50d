/** The official Python SDKs. */
import { defineSnippet } from './define.js';
import { requiredKey } from './keys.js';
import { lines, str } from './quoting.js';
import { anthropicBaseUrl, openaiBaseUrl } from './urls.js';
import type { SnippetContext } from './types.js';

const OPENAI_BASE = 'base_url must end in /v1: without it the SDK posts to /chat/completions and gets a 404.';
const OPENAI_RESPONSES =
  'Use client.chat.completions.create as shown; the openai README now leads with client.responses.create ' +
  '(the Responses API, POST /v1/responses), which only works if the model server implements it.';
const OPENAI_ENV =
  'Alternatively set OPENAI_BASE_URL and OPENAI_API_KEY in the environment and call OpenAI() without arguments.';

const openaiClient = (ctx: SnippetContext) =>
  lines(
    'from openai import OpenAI',
    '',
    `client = OpenAI(base_url=${str(openaiBaseUrl(ctx.origin))}, api_key=${str(requiredKey(ctx.key))})`,
    '',
  );

const pythonOpenai = defineSnippet({
  id: 'python-openai',
  title: 'Python: openai',
  client: 'openai (Python)',
  group: 'python',
  language: 'python',
  where: 'A Python file, after pip install openai.',
  pitfalls: [
    OPENAI_BASE,
    'The SDK raises before sending anything when api_key is empty, even though the gateway in open mode needs none.',
    OPENAI_RESPONSES,
    OPENAI_ENV,
  ],
  baseUrlKind: 'openai',
  keyRequired: true,
  keyField: 'api_key',
  render: (ctx) =>
    lines(
      openaiClient(ctx),
      'resp = client.chat.completions.create(',
      `    model=${str(ctx.model)},`,
      '    messages=[{"role": "user", "content": "Hello!"}],',
      ')',
      'print(resp.choices[0].message.content)',
    ),
});

const pythonOpenaiStream = defineSnippet({
  id: 'python-openai-stream',
  title: 'Python: openai, streaming',
  client: 'openai (Python)',
  group: 'python',
  language: 'python',
  where: 'A Python file, after pip install openai.',
  pitfalls: [
    OPENAI_BASE,
    'Keep the `if chunk.choices` guard: with stream_options={"include_usage": True} the last chunk has no ' +
      'choices, only the usage.',
    OPENAI_RESPONSES,
  ],
  baseUrlKind: 'openai',
  keyRequired: true,
  keyField: 'api_key',
  render: (ctx) =>
    lines(
      openaiClient(ctx),
      'stream = client.chat.completions.create(',
      `    model=${str(ctx.model)},`,
      '    messages=[{"role": "user", "content": "Hello!"}],',
      '    stream=True,',
      ')',
      'for chunk in stream:',
      '    if chunk.choices and chunk.choices[0].delta.content:',
      '        print(chunk.choices[0].delta.content, end="", flush=True)',
      'print()',
    ),
});

const pythonAnthropic = defineSnippet({
  id: 'python-anthropic',
  title: 'Python: anthropic',
  client: 'anthropic (Python)',
  group: 'python',
  language: 'python',
  where: 'A Python file, after pip install anthropic.',
  pitfalls: [
    'base_url has no /v1: the SDK adds /v1/messages itself, so …/v1 gives /v1/v1/messages and a 404. This ' +
      'is the most common mistake.',
    'api_key is sent as X-Api-Key; auth_token= instead sends Authorization: Bearer. The gateway accepts both.',
    'ANTHROPIC_API_KEY / ANTHROPIC_AUTH_TOKEN left in the shell are picked up automatically: passing ' +
      'api_key while ANTHROPIC_AUTH_TOKEN is exported sends both headers.',
    'The SDK raises before sending anything when neither a key nor a token is set.',
  ],
  baseUrlKind: 'anthropic',
  keyRequired: true,
  keyField: 'api_key',
  render: (ctx) => {
    const args = lines(
      `    model=${str(ctx.model)},`,
      '    max_tokens=1024,',
      '    messages=[{"role": "user", "content": "Hello!"}],',
    );
    return lines(
      'from anthropic import Anthropic',
      '',
      `client = Anthropic(base_url=${str(anthropicBaseUrl(ctx.origin))}, api_key=${str(requiredKey(ctx.key))})`,
      '',
      'msg = client.messages.create(',
      args,
      ')',
      'print(msg.content[0].text)',
      '',
      '# streaming',
      'with client.messages.stream(',
      args,
      ') as stream:',
      '    for text in stream.text_stream:',
      '        print(text, end="", flush=True)',
      'print()',
    );
  },
});

export const PYTHON_SNIPPETS = [pythonOpenai, pythonOpenaiStream, pythonAnthropic] as const;
