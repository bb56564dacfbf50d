/**
 * llama-swap's route table (`Server.routes()`), on one screen.
 * `auth: false` only where llama-swap skips the API-key check.
 */
import * as api from './api-routes.js';
import type { RequestContext, RouteHandler } from './context.js';
import { GoMux } from './go-mux.js';
import { handleComfy, handleModelRoute, handleUpstream } from './model-routes.js';
import { handleEvents, handleLogs, handleLogStream } from './stream-routes.js';

/** POST routes whose model comes from a JSON body (or a form, when not JSON). */
const POST_MODEL_ROUTES = [
  '/v1/chat/completions',
  '/v1/responses',
  '/v1/completions',
  '/v1/messages',
  '/v1/messages/count_tokens',
  '/v1/embeddings',
  '/reranking',
  '/rerank',
  '/v1/rerank',
  '/v1/reranking',
  '/infill',
  '/completion',
  '/v1/audio/speech',
  '/v1/audio/voices',
  '/v1/images/generations',
  '/sdapi/v1/txt2img',
  '/sdapi/v1/img2img',
  '/audioapi/v1/tasks/run',
  '/v/chat/completions',
  '/v/responses',
  '/v/completions',
  '/v/messages',
  '/v/messages/count_tokens',
  '/v/embeddings',
  '/v/rerank',
  '/v/reranking',
] as const;
/** POST routes whose model comes from a multipart form. */
const MULTIPART_MODEL_ROUTES = ['/v1/audio/transcriptions', '/v1/images/edits'] as const;
/** GET routes whose model comes from `?model=`. */
const GET_MODEL_ROUTES = ['/v1/audio/voices', '/sdapi/v1/loras', '/props'] as const;

/** Routes an old llama-swap (knob `legacyRoutes`) does not have: plain mux 404 for any method. */
export function isLegacyHidden(path: string): boolean {
  return path === '/api/version' || path === '/api/models/unload' || path.startsWith('/api/models/unload/');
}

type Run = (ctx: RequestContext) => void | Promise<void>;
const open = (run: Run): RouteHandler => ({ auth: false, run });
const authed = (run: Run): RouteHandler => ({ auth: true, run });

export function buildRoutes(): GoMux<RouteHandler> {
  const mux = new GoMux<RouteHandler>();
  for (const p of POST_MODEL_ROUTES) mux.handle(`POST ${p}`, authed(handleModelRoute));
  for (const p of MULTIPART_MODEL_ROUTES) mux.handle(`POST ${p}`, authed(handleModelRoute));
  for (const p of GET_MODEL_ROUTES) mux.handle(`GET ${p}`, authed(handleModelRoute));

  mux.handle('GET /v1/models', authed(api.handleListModels));
  mux.handle('GET /models', authed(api.handleListModels));
  mux.handle('GET /logs', authed(handleLogs));
  mux.handle('GET /logs/stream', authed(handleLogStream));
  mux.handle('GET /logs/stream/{id...}', authed(handleLogStream));
  mux.handle('GET /health', open(api.handleHealth));
  mux.handle('GET /wol-health', open(api.handleHealth));
  mux.handle('GET /{$}', open(api.handleRoot));
  mux.handle('GET /ui/', authed(api.handleUi));
  mux.handle('GET /favicon.ico', open(api.handleFavicon));
  mux.handle('GET /metrics', authed(api.handleMetrics));
  mux.handle('GET /unload', authed(api.handleUnload));
  mux.handle('GET /running', authed(api.handleRunning));
  mux.handle('GET /upstream', open(api.handleUpstreamRoot));
  mux.handle('/upstream/{path...}', authed(handleUpstream));
  mux.handle('/comfyui', authed(handleComfy));
  mux.handle('/comfyui/{path...}', authed(handleComfy));

  mux.handle('POST /api/models/unload', authed(api.handleApiUnloadAll));
  mux.handle('POST /api/models/unload/{model...}', authed(api.handleApiUnloadModel));
  mux.handle('GET /api/profiles', authed(api.handleProfiles));
  mux.handle('PUT /api/profiles/active', authed(api.handleSetActiveProfile));
  mux.handle('POST /api/inflight/{id}/cancel', authed(api.handleCancelInflight));
  mux.handle('GET /api/events', authed(handleEvents));
  mux.handle('GET /api/metrics/activity', authed(api.handleActivity));
  mux.handle('GET /api/metrics/stats', authed(api.handleActivityStats));
  mux.handle('GET /api/performance', authed(api.handlePerformance));
  mux.handle('GET /api/version', authed(api.handleVersion));
  mux.handle('GET /api/hardware', authed(api.handleHardware));
  mux.handle('GET /api/captures/{id}', authed(api.handleCapture));
  return mux;
}
