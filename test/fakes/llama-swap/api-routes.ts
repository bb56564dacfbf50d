/**
 * llama-swap's own API: model listing, running processes, the blocking
 * unload endpoints, version, and the UI/metrics odds and ends the gateway may probe.
 */
import { realModelName, type ModelCapabilities, type ModelConfig } from './config.js';
import type { RequestContext } from './context.js';
import { goRedirect } from './go-mux.js';
import { parseJsonLoose } from './model-request.js';
import { sendGoJson, sendText } from './responses.js';

export function handleHealth(ctx: RequestContext): void {
  // No explicit Content-Type in llama-swap; Go sniffs text/plain.
  sendText(ctx.res, 200, 'OK');
}

export function handleRunning(ctx: RequestContext): void {
  sendGoJson(ctx.res, 200, { running: ctx.inst.processes.running() });
}

export function handleListModels(ctx: RequestContext): void {
  const cfg = ctx.inst.cfg;
  const created = Math.floor(Date.now() / 1000);
  const data: Record<string, unknown>[] = [];
  for (const m of cfg.models.values()) {
    if (m.unlisted) continue;
    const state = ctx.inst.processes.state(m.id);
    const status = { value: state !== undefined && state !== 'stopped' ? 'loaded' : 'unloaded' };
    const internal: Record<string, unknown> = { type: 'model' };
    if (m.aliases.length > 0) internal.aliases = m.aliases;
    data.push(modelRecord(m.id, m, created, internal, status));
    if (cfg.includeAliasesInList) {
      for (const alias of m.aliases) {
        if (alias.trim() !== '')
          data.push(modelRecord(alias.trim(), m, created, { type: 'alias', modelID: m.id }, status));
      }
    }
  }
  for (const peer of cfg.peers.values()) {
    for (const modelId of peer.models) {
      data.push({
        id: `${peer.id}/${modelId}`,
        object: 'model',
        created,
        owned_by: 'llama-swap',
        name: `${peer.id}: ${modelId}`,
        meta: { llamaswap: { type: 'peer', peerID: peer.id } },
        status: { value: 'unloaded' },
      });
    }
  }
  data.sort((a, b) => (String(a.id) < String(b.id) ? -1 : String(a.id) > String(b.id) ? 1 : 0));
  const origin = ctx.req.headers.origin;
  sendGoJson(ctx.res, 200, { object: 'list', data }, origin ? { 'Access-Control-Allow-Origin': origin } : {});
}

const CAPABILITY_METADATA_KEYS = ['architecture', 'capabilities', 'supported_parameters', 'context_length'];

function modelRecord(
  id: string,
  m: ModelConfig,
  created: number,
  internal: Record<string, unknown>,
  status: { value: string },
) {
  const rec: Record<string, unknown> = { id, object: 'model', created, owned_by: 'llama-swap' };
  if (m.name.trim()) rec.name = m.name.trim();
  if (m.description.trim()) rec.description = m.description.trim();
  const caps = renderCapabilities(m.capabilities);
  Object.assign(rec, caps.fields);
  const metadata = { ...m.metadata };
  if (caps.nonEmpty) for (const k of CAPABILITY_METADATA_KEYS) delete metadata[k];
  const meta: Record<string, unknown> = { llamaswap: { ...metadata, ...internal } };
  if (m.capabilities?.context) meta.n_ctx = m.capabilities.context;
  rec.meta = meta;
  rec.status = status;
  return rec;
}

/** `capabilities` → OpenRouter-style `architecture`/`capabilities`/`supported_parameters`/`context_length`. */
function renderCapabilities(c: ModelCapabilities | undefined): { fields: Record<string, unknown>; nonEmpty: boolean } {
  const fields: Record<string, unknown> = {};
  if (!c || Object.keys(c).length === 0) return { fields, nonEmpty: false };
  const input = Array.isArray(c.in) ? c.in : [];
  const output = Array.isArray(c.out) ? c.out : [];
  if (input.length > 0 || output.length > 0) {
    fields.architecture = {
      input_modalities: input,
      output_modalities: output,
      modality: `${input.join('+')}->${output.join('+')}`,
    };
  }
  const flags: Record<string, boolean> = {
    vision: input.includes('image'),
    audio_transcriptions: input.includes('audio') && output.includes('text'),
    audio_speech: output.includes('audio'),
    image_generation: output.includes('image'),
    image_to_image: input.includes('image') && output.includes('image'),
    function_calling: c.tools === true,
    reranker: c.reranker === true,
  };
  const set = Object.fromEntries(Object.entries(flags).filter(([, v]) => v));
  if (Object.keys(set).length > 0) fields.capabilities = set;
  if (c.tools === true) fields.supported_parameters = ['tools', 'tool_choice'];
  if (typeof c.context === 'number' && c.context > 0) fields.context_length = c.context;
  return { fields, nonEmpty: true };
}

/** `GET /unload`: blocks until everything stopped; text `OK`. */
export async function handleUnload(ctx: RequestContext): Promise<void> {
  await ctx.inst.processes.unload();
  sendText(ctx.res, 200, 'OK');
}

/** `POST /api/models/unload`: blocks; `{"msg":"ok"}`. */
export async function handleApiUnloadAll(ctx: RequestContext): Promise<void> {
  await ctx.inst.processes.unload();
  sendGoJson(ctx.res, 200, { msg: 'ok' });
}

/** `POST /api/models/unload/{model...}`: ID or alias, slashes allowed; no-op when not running. */
export async function handleApiUnloadModel(ctx: RequestContext): Promise<void> {
  const requested = (ctx.params.model ?? '').replace(/^\//, '');
  const id = realModelName(ctx.inst.cfg, requested);
  if (id === undefined) return ctx.sendError(404, 'model not found');
  ctx.rec.model = requested;
  await ctx.inst.processes.unload([id]);
  sendText(ctx.res, 200, 'OK');
}

export function handleVersion(ctx: RequestContext): void {
  sendGoJson(ctx.res, 200, ctx.sim.knobs.version);
}

export function handleProfiles(ctx: RequestContext): void {
  const profiles = [...ctx.inst.cfg.profiles].map(([id, p]) => ({ id, description: p.description, pins: p.pins }));
  sendGoJson(ctx.res, 200, { active: ctx.inst.activeProfile, profiles });
}

/** `null` or `""` clears the profile; a configured name activates it; any other is unknown. */
export function handleSetActiveProfile(ctx: RequestContext): void {
  const body = parseJsonLoose(ctx.body);
  if (typeof body !== 'object' || body === null || Array.isArray(body))
    return ctx.sendError(400, 'invalid profile request');
  if (!('name' in body)) return ctx.sendError(400, 'profile name is required');
  const name = body.name;
  if (name !== null && typeof name !== 'string') return ctx.sendError(400, 'profile name must be a string or null');
  if (name === null || name === '') {
    ctx.inst.setActiveProfile(null);
    return sendGoJson(ctx.res, 200, { active: null });
  }
  if (!ctx.inst.cfg.profiles.has(name)) return ctx.sendError(404, `profile not found: ${name}`);
  ctx.inst.setActiveProfile(name);
  sendGoJson(ctx.res, 200, { active: name });
}

export function handleCancelInflight(ctx: RequestContext): void {
  const id = ctx.params.id ?? '';
  if (id === '' || !ctx.inst.cancelInflight(id)) return ctx.sendError(404, 'inflight request not found');
  sendGoJson(ctx.res, 200, { msg: 'ok' });
}

export function handleActivity(ctx: RequestContext): void {
  sendGoJson(ctx.res, 200, ctx.sim.activityLog.page(ctx.query));
}

export function handleActivityStats(ctx: RequestContext): void {
  const histogram = { bins: [], min: 0, max: 0, binSize: 0, p50: 0, p95: 0, p99: 0 };
  sendGoJson(ctx.res, 200, {
    total_requests: 0,
    total_input_tokens: 0,
    total_output_tokens: 0,
    total_cache_tokens: 0,
    prompt_histogram: histogram,
    gen_histogram: histogram,
  });
}

/** Performance monitoring is "disabled" in the simulator. */
export function handlePerformance(ctx: RequestContext): void {
  sendGoJson(ctx.res, 503, { enabled: false });
}

export function handleHardware(ctx: RequestContext): void {
  ctx.sendError(503, 'hardware information not available');
}

export function handleCapture(ctx: RequestContext): void {
  if (!/^\d+$/.test(ctx.params.id ?? '')) return ctx.sendError(400, 'invalid capture ID');
  ctx.sendError(404, 'capture not found');
}

export function handleMetrics(ctx: RequestContext): void {
  sendText(ctx.res, 503, '# performance monitor not available\n');
}

export function handleRoot(ctx: RequestContext): void {
  goRedirect(ctx.res, ctx.req.method ?? 'GET', '/ui', 302);
}

export function handleUpstreamRoot(ctx: RequestContext): void {
  goRedirect(ctx.res, ctx.req.method ?? 'GET', '/ui/models', 302);
}

export function handleUi(ctx: RequestContext): void {
  sendText(
    ctx.res,
    200,
    '<!doctype html><html><head><title>llama-swap</title></head><body>llama-swap simulator UI</body></html>',
    'text/html; charset=utf-8',
  );
}

export function handleFavicon(ctx: RequestContext): void {
  ctx.res.writeHead(200, { 'Content-Type': 'image/x-icon', 'Content-Length': 4 });
  ctx.res.end(Buffer.from([0, 0, 1, 0]));
}
