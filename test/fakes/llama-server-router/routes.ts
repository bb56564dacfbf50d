/**
 * The HTTP side of the router simulator, as llama.cpp `tools/server/server.cpp` registers it in
 * router mode: `/health`, `/props` (`role: "router"`), `/models` and `/v1/models` with statuses,
 * `POST /models/load` and `/models/unload`, and every inference route proxied to the model named
 * in the body (`proxy_post`: autoload unless `?autoload=false`). Errors are llama-server's
 * `{"error":{"code","message","type"}}` (`format_error_response`).
 */
import { serveInference } from '../llama-swap/llama-server.js';
import { llamaServerError } from '../llama-swap/media-api.js';
import { parseJsonLoose } from '../llama-swap/model-request.js';
import { JSON_HEADERS } from '../llama-swap/openai-api.js';
import { respondBody, type ResponderContext } from '../llama-swap/stream.js';
import type { RouterModel, RouterModels } from './models.js';

const ROUTER_BUILD_INFO = 'b7100-router-sim';

export interface RouterRequest {
  ctx: ResponderContext;
  models: RouterModels;
  autoload: boolean;
  path: string;
  query: URLSearchParams;
  body: Buffer;
}

export async function routeRouterRequest(r: RouterRequest): Promise<void> {
  const { ctx, models, path } = r;
  const method = ctx.req.method ?? 'GET';
  const json = (status: number, value: unknown) => respondBody(ctx, status, JSON_HEADERS, JSON.stringify(value));

  if (method === 'GET' && (path === '/health' || path === '/v1/health')) return json(200, { status: 'ok' });
  if (method === 'GET' && path === '/props' && !r.query.get('model')) {
    return json(200, {
      role: 'router',
      max_instances: models.modelsMax,
      models_autoload: r.autoload,
      model_alias: 'llama-server',
      model_path: 'none',
      default_generation_settings: { params: {}, n_ctx: 0 },
      build_info: ROUTER_BUILD_INFO,
    });
  }
  if (method === 'GET' && (path === '/models' || path === '/v1/models')) {
    const created = Math.floor(Date.now() / 1000);
    return json(200, { data: models.all().map((m) => modelJson(m, created)), object: 'list' });
  }
  if (method === 'POST' && (path === '/models/load' || path === '/models/unload')) {
    const name = modelName(r.body);
    const model = models.find(name ?? '');
    if (path === '/models/load') {
      if (!model) return llamaServerError(ctx, 404, 'model is not found', 'not_found_error');
      if (model.status !== 'unloaded') return llamaServerError(ctx, 400, 'model is already running');
      await models.load(model);
      return json(200, { success: true });
    }
    if (!model) return llamaServerError(ctx, 400, 'model is not found');
    if (model.status === 'unloaded') return llamaServerError(ctx, 400, 'model is not running');
    models.unload(model);
    return json(200, { success: true });
  }
  if (method === 'POST') return proxyPost(r);
  return llamaServerError(ctx, 404, 'File Not Found', 'not_found_error');
}

/** `proxy_post` + `router_validate_model`: the body's model, loaded on demand, then the child answers. */
async function proxyPost(r: RouterRequest): Promise<void> {
  const { ctx, models } = r;
  const name = modelName(r.body);
  if (!name) return llamaServerError(ctx, 400, 'model name is missing from the request');
  const model = models.find(name);
  if (!model) return llamaServerError(ctx, 400, `model '${name}' not found`);
  const autoload = r.query.has('autoload') ? ['true', '1'].includes(r.query.get('autoload')!) : r.autoload;
  if (autoload) {
    if (!(await models.ready(model)))
      return llamaServerError(ctx, 500, `model '${name}' failed to load`, 'server_error');
  } else if (model.status !== 'loaded') {
    return llamaServerError(ctx, 400, 'model is not loaded');
  }
  models.touch(model);
  ctx.rec.model = model.config.id;
  return serveInference({
    ctx,
    method: 'POST',
    path: r.path,
    modelId: model.config.id,
    modelOverride: undefined,
    rawBody: r.body,
    contentType: String(ctx.req.headers['content-type'] ?? ''),
    embeddingsOnly: model.config.embeddings === true,
    reasoning: model.config.reasoning === true,
  });
}

function modelJson(m: RouterModel, created: number) {
  const status: Record<string, unknown> = { value: m.status, args: ['llama-server', '--model', `${m.config.id}.gguf`] };
  if (m.failed) Object.assign(status, { failed: true, exit_code: m.exitCode });
  return {
    id: m.config.id,
    aliases: m.config.aliases ?? [],
    tags: [],
    object: 'model',
    owned_by: 'llamacpp',
    created,
    status,
    architecture: { input_modalities: m.config.vision ? ['text', 'image'] : ['text'], output_modalities: ['text'] },
    source: 'preset',
    can_remove: false,
  };
}

function modelName(body: Buffer): string | undefined {
  const parsed = parseJsonLoose(body) as { model?: unknown } | undefined;
  return typeof parsed?.model === 'string' && parsed.model !== '' ? parsed.model : undefined;
}
