/**
 * Ollama request bodies → the OpenAI request llama-swap is sent (docs/ollama.md has the table).
 * Pure functions: a body that cannot be translated throws a `TypeError` with the reason, which
 * the door answers 400.
 */
import { mapOptions } from './options.js';

/** One Ollama call as llama-swap will get it. */
export interface UpstreamRequest {
  /** llama-swap's path. */
  path: '/v1/chat/completions' | '/v1/completions' | '/v1/embeddings';
  body: Record<string, unknown>;
  /** Option names that were not passed on. */
  ignored: string[];
}

/** What an Ollama call asks for: a model turn, or (empty prompt) a load or an unload of the model. */
export type OllamaCall = { kind: 'forward'; request: UpstreamRequest } | { kind: 'load' } | { kind: 'unload' };

export type OllamaRoute = '/api/chat' | '/api/generate' | '/api/embed' | '/api/embeddings';

/** Translates the body of a call on `route`; `model` is llama-swap's name for the model asked for. */
export function translateRequest(route: OllamaRoute, body: Record<string, unknown>, model: string): OllamaCall {
  switch (route) {
    case '/api/chat':
      return chatCall(body, model);
    case '/api/generate':
      return generateCall(body, model);
    case '/api/embed':
      return { kind: 'forward', request: embedRequest(body, model) };
    case '/api/embeddings':
      return { kind: 'forward', request: legacyEmbeddingsRequest(body, model) };
  }
}

/** Ollama streams unless told `"stream": false`. */
function wantsStream(body: Record<string, unknown>): boolean {
  return body.stream !== false;
}

function chatCall(body: Record<string, unknown>, model: string): OllamaCall {
  const messages = body.messages ?? [];
  if (!Array.isArray(messages)) throw new TypeError('"messages" must be an array');
  // An empty conversation loads the model, or unloads it with keep_alive 0 (as Ollama does).
  if (messages.length === 0) return isZero(body.keep_alive) ? { kind: 'unload' } : { kind: 'load' };
  const out = turnFields(body, model);
  out.body.messages = chatMessages(messages);
  if (body.tools !== undefined) out.body.tools = tools(body.tools);
  return { kind: 'forward', request: out };
}

function generateCall(body: Record<string, unknown>, model: string): OllamaCall {
  const prompt = optionalString(body.prompt, 'prompt') ?? '';
  const images = imageList(body.images, 'images');
  if (prompt === '' && images.length === 0) return isZero(body.keep_alive) ? { kind: 'unload' } : { kind: 'load' };
  const suffix = optionalString(body.suffix, 'suffix');
  const out = turnFields(body, model);
  if (body.raw === true || suffix !== undefined) {
    // No chat template: the prompt goes to the model as it is (`raw`), or around the suffix (fill-in-the-middle).
    if (images.length > 0) throw new TypeError('"images" cannot be sent with "raw" or "suffix"');
    out.path = '/v1/completions';
    out.body.prompt = prompt;
    if (suffix !== undefined) out.body.suffix = suffix;
    return { kind: 'forward', request: out };
  }
  const messages: Record<string, unknown>[] = [];
  const system = optionalString(body.system, 'system');
  if (system !== undefined && system !== '') messages.push({ role: 'system', content: system });
  messages.push({ role: 'user', content: withImages(prompt, images) });
  out.body.messages = messages;
  return { kind: 'forward', request: out };
}

/** The fields shared by chat and generate: model, stream, format, options, think. */
function turnFields(body: Record<string, unknown>, model: string): UpstreamRequest {
  const { fields, ignored } = mapOptions(body.options);
  const out: Record<string, unknown> = { model, ...fields };
  const stream = wantsStream(body);
  out.stream = stream;
  const format = body.format;
  if (format === 'json') out.response_format = { type: 'json_object' };
  else if (typeof format === 'object' && format !== null && !Array.isArray(format))
    out.response_format = { type: 'json_schema', json_schema: { name: 'response', schema: format } };
  else if (format !== undefined && format !== null && format !== '')
    throw new TypeError('"format" must be "json" or a JSON schema object');
  const think = body.think;
  if (think === true || think === false) out.chat_template_kwargs = { enable_thinking: think };
  else if (think === 'low' || think === 'medium' || think === 'high') out.reasoning_effort = think;
  else if (think !== undefined && think !== null)
    throw new TypeError('"think" must be true, false, "low", "medium" or "high"');
  return { path: '/v1/chat/completions', body: out, ignored };
}

function chatMessages(messages: unknown[]): Record<string, unknown>[] {
  const out: Record<string, unknown>[] = [];
  // Ollama's tool results name the tool, OpenAI's the call: calls not yet answered, in order.
  const pending: Array<{ id: string; name: string }> = [];
  let serial = 0;
  for (const [i, raw] of messages.entries()) {
    if (typeof raw !== 'object' || raw === null) throw new TypeError(`"messages[${i}]" must be an object`);
    const m = raw as Record<string, unknown>;
    const role = m.role;
    if (role !== 'system' && role !== 'user' && role !== 'assistant' && role !== 'tool')
      throw new TypeError(`"messages[${i}].role" must be system, user, assistant or tool`);
    const content = optionalString(m.content, `messages[${i}].content`) ?? '';
    const images = imageList(m.images, `messages[${i}].images`);
    if (role === 'tool') {
      const name = optionalString(m.tool_name, `messages[${i}].tool_name`);
      const byId = optionalString(m.tool_call_id, `messages[${i}].tool_call_id`);
      const at = byId !== undefined ? -1 : pending.findIndex((p) => name === undefined || p.name === name);
      const id = byId ?? (at >= 0 ? pending.splice(at, 1)[0]!.id : `call_${serial++}`);
      out.push({ role: 'tool', tool_call_id: id, content, ...(name !== undefined ? { name } : {}) });
      continue;
    }
    const message: Record<string, unknown> = { role, content: withImages(content, images) };
    if (role === 'assistant') {
      const thinking = optionalString(m.thinking, `messages[${i}].thinking`);
      if (thinking) message.reasoning_content = thinking;
      if (m.tool_calls !== undefined) {
        if (!Array.isArray(m.tool_calls)) throw new TypeError(`"messages[${i}].tool_calls" must be an array`);
        message.tool_calls = m.tool_calls.map((call: unknown, j) => {
          const fn = (call as { function?: { name?: unknown; arguments?: unknown } } | null)?.function;
          if (typeof fn?.name !== 'string')
            throw new TypeError(`"messages[${i}].tool_calls[${j}].function.name" is missing`);
          const given = (call as { id?: unknown }).id;
          const id = typeof given === 'string' && given !== '' ? given : `call_${serial++}`;
          pending.push({ id, name: fn.name });
          const args = typeof fn.arguments === 'string' ? fn.arguments : JSON.stringify(fn.arguments ?? {});
          return { id, type: 'function', function: { name: fn.name, arguments: args } };
        });
      }
    }
    out.push(message);
  }
  return out;
}

function tools(raw: unknown): unknown[] {
  if (!Array.isArray(raw)) throw new TypeError('"tools" must be an array');
  return raw.map((tool: unknown, i) => {
    const fn = (tool as { function?: Record<string, unknown> } | null)?.function;
    if (typeof fn?.name !== 'string') throw new TypeError(`"tools[${i}].function.name" is missing`);
    return { type: 'function', function: fn };
  });
}

/** Text with Ollama's base64 images → OpenAI content parts (the text alone when there are none). */
function withImages(text: string, images: string[]): string | unknown[] {
  if (images.length === 0) return text;
  const parts: unknown[] = text === '' ? [] : [{ type: 'text', text }];
  for (const image of images)
    parts.push({ type: 'image_url', image_url: { url: `data:${imageType(image)};base64,${image}` } });
  return parts;
}

/** The media type from the first bytes of a base64 image (llama-server decodes by content, but needs a data URL). */
function imageType(base64: string): string {
  if (base64.startsWith('iVBOR')) return 'image/png';
  if (base64.startsWith('/9j/')) return 'image/jpeg';
  if (base64.startsWith('R0lGOD')) return 'image/gif';
  if (base64.startsWith('UklGR')) return 'image/webp';
  return 'image/jpeg';
}

function embedRequest(body: Record<string, unknown>, model: string): UpstreamRequest {
  const input = body.input;
  const valid = typeof input === 'string' || (Array.isArray(input) && input.every((i) => typeof i === 'string'));
  if (!valid) throw new TypeError('"input" must be a string or an array of strings');
  const out: Record<string, unknown> = { model, input, encoding_format: 'float' };
  if (body.dimensions !== undefined) {
    if (typeof body.dimensions !== 'number' || !Number.isInteger(body.dimensions) || body.dimensions < 1)
      throw new TypeError('"dimensions" must be a positive integer');
    out.dimensions = body.dimensions;
  }
  return { path: '/v1/embeddings', body: out, ignored: ignoredEmbedOptions(body) };
}

function legacyEmbeddingsRequest(body: Record<string, unknown>, model: string): UpstreamRequest {
  const prompt = optionalString(body.prompt, 'prompt') ?? '';
  return {
    path: '/v1/embeddings',
    body: { model, input: prompt, encoding_format: 'float' },
    ignored: ignoredEmbedOptions(body),
  };
}

function ignoredEmbedOptions(body: Record<string, unknown>): string[] {
  const options = body.options;
  return typeof options === 'object' && options !== null ? Object.keys(options) : [];
}

function imageList(raw: unknown, name: string): string[] {
  if (raw === undefined || raw === null) return [];
  if (!Array.isArray(raw) || !raw.every((i) => typeof i === 'string'))
    throw new TypeError(`"${name}" must be an array of base64 strings`);
  return raw;
}

function optionalString(raw: unknown, name: string): string | undefined {
  if (raw === undefined || raw === null) return undefined;
  if (typeof raw !== 'string') throw new TypeError(`"${name}" must be a string`);
  return raw;
}

/** `keep_alive: 0` in any of Ollama's spellings (a number of seconds or a duration). */
function isZero(keepAlive: unknown): boolean {
  if (keepAlive === 0) return true;
  return typeof keepAlive === 'string' && /^0+(?:\.0*)?(?:ns|us|µs|ms|s|m|h)?$/.test(keepAlive.trim());
}
