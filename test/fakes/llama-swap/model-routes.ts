/**
 * Model routes and the `/upstream` passthrough: find the model, resolve it to a
 * local process or a peer, wait for the process (swap/queue/429), then let the fake llama-server
 * answer. Peers are answered in-process by the same fake (no network).
 */
import { performance } from 'node:perf_hooks';
import { resolveModel, type ResolvedModel, type SimConfig } from './config.js';
import type { RequestContext } from './context.js';
import { applyFilters, NO_FILTERS } from './filters.js';
import { goRedirect } from './go-mux.js';
import { isEmbeddingsOnly, serveInference } from './llama-server.js';
import { LoadingState } from './loading-state.js';
import { extractModel } from './model-request.js';
import type { Lease } from './processes.js';
import { errorBody, goJson, SimHttpError } from './responses.js';
import { cutResponse, type ResponderContext } from './stream.js';
import { sleep } from './timing.js';
import { usesReasoning } from './turn.js';

const NEVER = new AbortController().signal;

/** POST/GET model routes: extract, resolve, forward. */
export async function handleModelRoute(ctx: RequestContext): Promise<void> {
  const url = ctx.req.url ?? '';
  const extracted = extractModel(
    ctx.req.method ?? 'GET',
    ctx.req.headers['content-type'] ?? '',
    url.includes('?') ? url.slice(url.indexOf('?') + 1) : '',
    ctx.body,
  );
  if (!extracted) return ctx.sendError(404, 'no model id could be identified');
  ctx.rec.model = extracted.model;
  const target = resolveModel(ctx.inst.cfg, extracted.model);
  if (!target) return ctx.sendError(404, 'no router for requested model');
  await forward(ctx, target, upstreamPathFor(ctx.path), { requested: extracted.model, stream: extracted.stream });
}

/** `/v/...` loses its `/v`, `/audioapi/...` its `/audioapi` (server.go:211-248). */
function upstreamPathFor(path: string): string {
  if (path.startsWith('/v/')) return path.slice(2);
  if (path.startsWith('/audioapi/')) return path.slice('/audioapi'.length);
  return path;
}

/** `ANY /upstream/{path...}`: longest model-name match, trailing-slash redirect, ignorePaths 409. */
export async function handleUpstream(ctx: RequestContext): Promise<void> {
  const found = findModelInPath(ctx.inst.cfg, ctx.escapedPath.slice('/upstream/'.length));
  if (!found) return ctx.sendError(404, 'model not found');
  ctx.rec.model = found.searchName;
  if (found.rest === undefined) {
    const location = `/upstream/${found.escapedName}/${ctx.rawQuery ? `?${ctx.rawQuery}` : ''}`;
    const method = ctx.req.method ?? 'GET';
    return goRedirect(ctx.res, method, location, method === 'GET' || method === 'HEAD' ? 301 : 308);
  }
  const remaining = safeDecode(`/${found.rest}`);
  if (found.target.kind === 'local') {
    const state = ctx.inst.processes.state(found.target.id);
    if (state !== 'ready' && ctx.inst.cfg.ignorePaths.test(remaining)) {
      return ctx.sendError(409, `model ${found.searchName} is not loaded; path matches upstream.ignorePaths`);
    }
  }
  await forward(ctx, found.target, remaining);
}

/** `/comfyui[/...]`: fixed model `comfyui_auto`; only `/comfyui/` may start it. */
export async function handleComfy(ctx: RequestContext): Promise<void> {
  const id = 'comfyui_auto';
  if (!ctx.inst.cfg.models.has(id)) return ctx.sendError(404, 'model not found');
  ctx.rec.model = id;
  const rest = ctx.path.slice('/comfyui'.length) || '/';
  if (rest !== '/' && ctx.inst.processes.state(id) !== 'ready') return ctx.sendError(409, `model ${id} is not loaded`);
  await forward(ctx, { kind: 'local', id }, rest);
}

interface PathMatch {
  searchName: string;
  escapedName: string;
  target: ResolvedModel;
  /** Escaped remainder after `<model>/`; undefined when nothing (not even a slash) follows. */
  rest: string | undefined;
}

function findModelInPath(cfg: SimConfig, escaped: string): PathMatch | undefined {
  const segs = escaped.split('/');
  const nameParts: string[] = [];
  const escapedParts: string[] = [];
  let best: PathMatch | undefined;
  segs.forEach((seg, i) => {
    if (seg === '') return;
    nameParts.push(safeDecode(seg));
    escapedParts.push(seg);
    const name = nameParts.join('/');
    const target = resolveModel(cfg, name);
    if (target) {
      best = {
        searchName: name,
        escapedName: escapedParts.join('/'),
        target,
        rest: i + 1 < segs.length ? segs.slice(i + 1).join('/') : undefined,
      };
    }
  });
  return best;
}

/** A model route's call (absent for `/upstream` and `/comfyui`): the name asked for and `stream`. */
interface ModelCall {
  requested: string;
  stream: boolean;
}

/** Answer a call and file it in llama-swap's activity log (model routes only). */
async function forward(
  ctx: RequestContext,
  target: ResolvedModel,
  upstreamPath: string,
  modelCall?: ModelCall,
): Promise<void> {
  const started = performance.now();
  const rctx: ResponderContext = {
    req: ctx.req,
    res: ctx.res,
    rec: ctx.rec,
    knobs: ctx.sim.knobs,
    clientGone: ctx.clientGone,
    cut: NEVER,
  };
  try {
    await serveTarget(ctx, rctx, target, upstreamPath, modelCall);
  } finally {
    if (modelCall) recordActivity(ctx, rctx, target, started);
  }
}

function recordActivity(ctx: RequestContext, rctx: ResponderContext, target: ResolvedModel, started: number): void {
  const { res } = ctx;
  const status = !res.headersSent && ctx.clientGone.aborted ? 499 : res.statusCode;
  const entry = ctx.sim.activityLog.record({
    model: target.kind === 'local' ? target.id : target.fqn,
    path: ctx.path,
    contentType: String(res.getHeader('content-type') ?? ''),
    status,
    input: rctx.tokens?.input ?? 0,
    output: rctx.tokens?.output ?? 0,
    durationMs: performance.now() - started,
  });
  ctx.inst.emit('activity', entry);
}

async function serveTarget(
  ctx: RequestContext,
  rctx: ResponderContext,
  target: ResolvedModel,
  upstreamPath: string,
  modelCall: ModelCall | undefined,
): Promise<void> {
  const { sim, req, res } = ctx;
  const method = req.method ?? 'GET';
  const cfg = ctx.inst.cfg;
  const filters =
    target.kind === 'local'
      ? cfg.models.get(target.id)!.filters
      : (cfg.peers.get(target.peerId)?.filters ?? NO_FILTERS);
  const body = modelCall ? applyFilters(ctx.body, modelCall.requested, filters) : ctx.body;
  const call = (modelId: string, modelOverride: string | undefined, cut: AbortSignal, cmd = '') => {
    rctx.cut = cut;
    return serveThroughKnobs(rctx, () =>
      serveInference({
        ctx: rctx,
        method,
        path: upstreamPath,
        modelId,
        modelOverride,
        rawBody: body,
        contentType: req.headers['content-type'] ?? '',
        embeddingsOnly: isEmbeddingsOnly(cmd),
        reasoning: usesReasoning(cmd),
      }),
    );
  };

  if (target.kind === 'peer') {
    if (sim.knobs.peerUnreachable) {
      const peer = cfg.peers.get(target.peerId);
      const host = peer ? new URL(peer.proxy).host : target.peerId;
      return ctx.sendError(502, `peer proxy error: dial tcp ${host}: connect: connection refused`);
    }
    // llama-swap rewrites the FQN to the peer's own model ID in JSON bodies (router/peer.go).
    return call(target.modelId, modelCall ? target.modelId : undefined, NEVER);
  }

  const model = cfg.models.get(target.id)!;
  const inflight = modelCall ? ctx.inst.trackInflight(req, target.id, ctx.path, ctx.remoteIp) : undefined;
  const loading =
    modelCall?.stream &&
    model.sendLoadingState &&
    ctx.path.startsWith('/v1/chat/completions') &&
    ctx.inst.processes.state(target.id) !== 'ready'
      ? new LoadingState(res, target.id)
      : undefined;
  let lease: Lease;
  try {
    lease = await ctx.inst.processes.acquire(target.id, ctx.clientGone);
  } catch (err) {
    inflight?.done();
    if (!(err instanceof SimHttpError)) throw err;
    if (err.status === 499) return loading?.finish(true); // the client left while queued; nothing to answer
    if (loading) return loading.fail(goJson(errorBody(sim.knobs.errorShape, err.status, err.message, err.opts.code)));
    return ctx.sendError(err.status, err.message, err.opts);
  }
  loading?.finish(ctx.clientGone.aborted);
  try {
    const cut = inflight ? AbortSignal.any([lease.cut, inflight.cancelled]) : lease.cut;
    await call(target.id, model.useModelName || undefined, cut, model.cmd);
    ctx.inst.modelLog(
      target.id,
      `srv  log_server_r: request: ${method} ${upstreamPath} ${ctx.remoteIp} ${res.statusCode}\n`,
    );
  } finally {
    lease.release();
    inflight?.done();
  }
}

/** Knobs that act before the fake llama-server writes anything. */
async function serveThroughKnobs(rctx: ResponderContext, serve: () => Promise<void>): Promise<void> {
  const { knobs, res } = rctx;
  if (knobs.emptyBody502) {
    // Go's ReverseProxy default error handler: status only, no body.
    if (res.headersSent) return void res.end();
    res.writeHead(502, { 'Content-Length': '0' });
    res.end();
    return;
  }
  if (knobs.headersDelayMs > 0) {
    const waited = await sleep(knobs.headersDelayMs, AbortSignal.any([rctx.clientGone, rctx.cut]));
    if (!waited) {
      if (!rctx.clientGone.aborted) cutResponse(rctx);
      return;
    }
  }
  await serve();
}

function safeDecode(s: string): string {
  try {
    return decodeURIComponent(s);
  } catch {
    return s;
  }
}
