/**
 * The Ollama door's own steps, between the key check and the `/v1` steps they share (limits,
 * allow-list, budgets, queue): `ollamaCall` reads the body and either answers the call itself
 * (`/api/tags`, `/api/ps`, `/api/show`, a model load or unload, the 501s) or translates it to
 * the OpenAI call llama-swap gets, with the translator of its answer (`ctx.decided.translation`).
 */
import type { Logger } from 'pino';
import type { BodyHead, ModelAllowance, ProxyContext } from '../core/context.js';
import { GatewayError } from '../core/errors.js';
import type { ProxyStep } from '../core/steps.js';
import { allowanceCovers, allowanceRestricts, type ModelCatalog } from '../auth/model-access.js';
import { readJsonMembers } from '../proxy/request-json.js';
import { JSON_MEMBERS } from '../proxy/request-model.js';
import type { BodyReceiver } from '../proxy/read-model.js';
import { answerJson } from '../proxy/answer-json.js';
import type { ModelEntry, RunningModel } from '../management-client/types.js';
import { listedName, upstreamName } from './names.js';
import { runningEntry, showAnswer, tagEntry } from './models.js';
import { translateRequest, type OllamaRoute } from './requests.js';
import { answerTranslator, type AnswerShape } from './responses.js';

export interface OllamaDoorOptions {
  /** llama-swap's `/v1/models` entries. */
  listModels: () => Promise<ModelEntry[]>;
  /** What llama-swap runs, load and unload (llama-swap's own API). */
  models: {
    running(): Promise<RunningModel[]>;
    load(model: string): Promise<unknown>;
    unload(model: string): Promise<unknown>;
  };
  catalog: () => Promise<ModelCatalog | undefined>;
  /** The gateway's one body receiver (limits, spool caps), shared with `/v1`. */
  receiveBody: BodyReceiver;
  logger: Logger;
}

const MODEL_CALLS: Record<string, { route: OllamaRoute; shape: AnswerShape }> = {
  '/api/chat': { route: '/api/chat', shape: 'chat' },
  '/api/generate': { route: '/api/generate', shape: 'generate' },
  '/api/embed': { route: '/api/embed', shape: 'embed' },
  '/api/embeddings': { route: '/api/embeddings', shape: 'embeddings' },
};

/** Longer than any model name (llama-swap IDs, aliases, peers). */
const MODEL_NAME_MAX = 256;

/** Ollama's model management, which llama-swap's config does instead. */
const MANAGEMENT = new Set(['/api/pull', '/api/push', '/api/create', '/api/copy', '/api/delete']);

export function ollamaCall(options: OllamaDoorOptions): ProxyStep {
  return async function ollamaCallStep(ctx) {
    const { method, path } = ctx.request;
    if (MANAGEMENT.has(path)) {
      throw new GatewayError('not_implemented', {
        message:
          `${path} is not available here: models are managed in llama-swap's config` +
          " (admins edit it on the dashboard's Config page).",
      });
    }
    if (path === '/api/tags' || path === '/api/ps') {
      if (method !== 'GET' && method !== 'HEAD') throw notAllowed(method, path, 'GET');
      return path === '/api/tags' ? answerTags(ctx, options) : answerRunning(ctx, options);
    }
    const call = MODEL_CALLS[path];
    if (path !== '/api/show' && !call)
      throw new GatewayError('not_found', { message: `No route for ${method} ${path}.` });
    if (method !== 'POST') throw notAllowed(method, path, 'POST');

    const head = await options.receiveBody(ctx);
    const body = parseBody(await wholeBody(head));
    const asked = typeof body.model === 'string' ? body.model : typeof body.name === 'string' ? body.name : '';
    if (asked === '') throw new GatewayError('bad_request', { message: 'model is required' });
    // No model name is this long; a longer one would only fill the log and the request log.
    if (asked.length > MODEL_NAME_MAX) throw new GatewayError('bad_request', { message: 'model name is too long' });
    ctx.decided.model = asked;
    const entries = await listEntries(options);
    const catalog = await options.catalog();
    const known = (name: string) => catalog?.resolve(name) !== undefined || entries.some((e) => e.id === name);
    const model = upstreamName(asked, known);
    if (model === undefined) throw new GatewayError('not_found', { message: `model '${asked}' not found` });
    ctx.decided.model = model;
    const allowed = allowanceOf(ctx);

    if (path === '/api/show') {
      if (!allowanceCovers(allowed, model, catalog)) throw notAllowedModel(model);
      const id = catalog?.resolve(model) ?? model;
      const entry = entries.find((e) => e.id === model) ?? entries.find((e) => e.id === id);
      if (!entry) throw new GatewayError('not_found', { message: `model '${asked}' not found` });
      return answerJson(ctx, showAnswer(entry));
    }

    let translated;
    try {
      translated = translateRequest(call!.route, body, model);
    } catch (error) {
      if (error instanceof TypeError) throw new GatewayError('bad_request', { message: error.message });
      throw error;
    }
    if (translated.kind !== 'forward') {
      // Loading and unloading are model management: the manage scope, and only models the key may call.
      if (ctx.decided.caller && ctx.decided.caller.manage !== true) throw new GatewayError('manage_scope_required');
      if (!allowanceCovers(allowed, model, catalog)) throw notAllowedModel(model);
      const id = catalog?.resolve(model) ?? model;
      await (translated.kind === 'load' ? options.models.load(id) : options.models.unload(id)).catch(
        (error: unknown) => {
          throw new GatewayError('upstream_bad_gateway', {
            message: `llama-swap could not ${translated.kind} ${model}.`,
            cause: error,
          });
        },
      );
      const reply: Record<string, unknown> = { model: asked, created_at: new Date().toISOString() };
      if (call!.shape === 'generate') reply.response = '';
      else reply.message = { role: 'assistant', content: '' };
      return answerJson(ctx, { ...reply, done_reason: translated.kind, done: true });
    }

    const { request } = translated;
    if (request.ignored.length > 0)
      options.logger.debug(
        { req_id: ctx.request.requestId, ignored: request.ignored },
        'Ollama options not passed to llama-swap',
      );
    const upstreamBody = Buffer.from(JSON.stringify(request.body));
    ctx.decided.body = translatedBody(head, upstreamBody);
    ctx.decided.modelReading = { status: 'found', model };
    const reading = readJsonMembers(upstreamBody, JSON_MEMBERS);
    if (reading.valid) ctx.decided.requestJson = reading.members;
    const shape = call!.shape;
    const hideThinking = body.think === false;
    const startedAt = ctx.request.startedAt;
    ctx.decided.translation = {
      path: request.path,
      response: (status, contentType) =>
        status < 300 ? answerTranslator({ shape, model: asked, hideThinking, startedAt }, contentType) : undefined,
    };
  };
}

async function answerTags(ctx: ProxyContext, options: OllamaDoorOptions): Promise<'handled'> {
  const entries = await listEntries(options);
  const allowed = allowanceOf(ctx);
  const catalog = allowanceRestricts(allowed) ? await options.catalog() : undefined;
  const models = entries.filter((e) => allowanceCovers(allowed, e.id, catalog)).map(tagEntry);
  return answerJson(ctx, { models });
}

async function answerRunning(ctx: ProxyContext, options: OllamaDoorOptions): Promise<'handled'> {
  const [running, entries] = await Promise.all([
    options.models.running().catch((error: unknown) => {
      throw new GatewayError('upstream_unreachable', {
        message: 'llama-swap could not be asked what runs.',
        cause: error,
      });
    }),
    listEntries(options),
  ]);
  const allowed = allowanceOf(ctx);
  const catalog = allowanceRestricts(allowed) ? await options.catalog() : undefined;
  const models = running
    .filter((m) => m.state === 'ready' || m.state === 'starting')
    .filter((m) => allowanceCovers(allowed, m.model, catalog))
    .map((m) =>
      runningEntry(
        m,
        entries.find((e) => e.id === m.model),
      ),
    );
  return answerJson(ctx, { models });
}

async function listEntries(options: OllamaDoorOptions): Promise<ModelEntry[]> {
  try {
    return await options.listModels();
  } catch (error) {
    throw new GatewayError('upstream_unreachable', {
      message: 'llama-swap could not be asked for its models.',
      cause: error,
    });
  }
}

/** The body as it arrived: held in memory, or read back from its spool file. */
async function wholeBody(head: BodyHead): Promise<Buffer> {
  if (head.complete) return Buffer.concat(head.complete);
  const chunks: Buffer[] = [];
  const source = head.body;
  if (source && !Buffer.isBuffer(source) && !Array.isArray(source))
    for await (const chunk of source) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks);
}

function parseBody(bytes: Buffer): Record<string, unknown> {
  let parsed: unknown;
  try {
    parsed = bytes.length === 0 ? {} : JSON.parse(bytes.toString('utf8'));
  } catch {
    throw new GatewayError('invalid_json');
  }
  if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed))
    throw new GatewayError('bad_request', { message: 'The request body must be a JSON object.' });
  return parsed as Record<string, unknown>;
}

/** What llama-swap is sent, in place of the client's body; the bytes received stay the client's. */
function translatedBody(received: BodyHead, body: Buffer): BodyHead {
  return {
    bytes: body.length,
    complete: [body],
    start: [body],
    body,
    received: received.received,
    dispose: received.dispose,
  };
}

function notAllowed(method: string, path: string, allow: string): GatewayError {
  return new GatewayError('method_not_allowed', {
    message: `${method} is not allowed on ${path}.`,
    headers: { allow },
  });
}

function notAllowedModel(model: string): GatewayError {
  return new GatewayError('model_not_allowed', {
    message: `This API key may not use the model "${listedName(model)}".`,
  });
}

/** What the caller may use: the key's list and its owner's current allowance (open mode: all). */
function allowanceOf(ctx: ProxyContext): ModelAllowance {
  return ctx.decided.caller?.models ?? { key: [], owner: [] };
}
