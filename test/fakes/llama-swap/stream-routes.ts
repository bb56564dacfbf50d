/**
 * Long-lived streams: `/logs`, `/logs/stream[/{id...}]` (chunked text, history
 * first, `?no-history` presence test) and `/api/events` (SSE with `event:message` and a
 * double-encoded `data`). Both end when the server instance shuts down (every reload).
 */
import { realModelName } from './config.js';
import type { RequestContext } from './context.js';
import { goRedirect } from './go-mux.js';
import type { LogMonitor } from './logs.js';
import { goJson, sendText } from './responses.js';

export function handleLogs(ctx: RequestContext): void {
  if ((ctx.req.headers.accept ?? '').includes('text/html'))
    return goRedirect(ctx.res, ctx.req.method ?? 'GET', '/ui/', 302);
  sendText(ctx.res, 200, ctx.sim.muxLog.history().toString('utf8'), 'text/plain');
}

function resolveLogger(ctx: RequestContext, id: string): LogMonitor | undefined {
  if (id === '') return ctx.sim.muxLog;
  if (id === 'proxy') return ctx.sim.proxyLog;
  if (id === 'upstream') return ctx.sim.upstreamLog;
  const modelId = realModelName(ctx.inst.cfg, id);
  return modelId === undefined ? undefined : ctx.inst.modelLogs.get(modelId);
}

export function handleLogStream(ctx: RequestContext): Promise<void> {
  const { res } = ctx;
  const id = (ctx.params.id ?? '').replace(/^\//, '');
  const logger = resolveLogger(ctx, id);
  if (!logger) {
    ctx.sendError(400, "invalid logger. Use 'proxy', 'upstream' or a model's ID");
    return Promise.resolve();
  }
  res.writeHead(200, {
    'Content-Type': 'text/plain',
    'Transfer-Encoding': 'chunked',
    'X-Content-Type-Options': 'nosniff',
    'X-Accel-Buffering': 'no',
  });
  res.flushHeaders();
  if (!ctx.query.has('no-history')) {
    const history = logger.history();
    if (history.length > 0) res.write(history);
  }
  const unsubscribe = logger.onData((data) => {
    if (!res.writableEnded) res.write(data);
  });
  return untilClosed(ctx, unsubscribe);
}

export function handleEvents(ctx: RequestContext): Promise<void> {
  const { res, inst, sim } = ctx;
  res.writeHead(200, {
    'Content-Type': 'text/event-stream',
    'Cache-Control': 'no-cache',
    Connection: 'keep-alive',
    'X-Content-Type-Options': 'nosniff',
    'X-Accel-Buffering': 'no',
  });
  res.flushHeaders();
  const send = (type: string, data: unknown) => {
    if (res.writableEnded) return;
    res.write(`event:message\ndata:${goJson({ type, data: goJson(data) })}\n\n`);
  };
  const logData = (source: string) => (data: Buffer) => send('logData', { source, data: data.toString('utf8') });
  const unsubscribers = [
    sim.proxyLog.onData(logData('proxy')),
    sim.upstreamLog.onData(logData('upstream')),
    inst.onEvent(send),
  ];
  // Initial burst in llama-swap's order (apigroup.go handleAPIEvents).
  send('logData', { source: 'proxy', data: sim.proxyLog.history().toString('utf8') });
  send('logData', { source: 'upstream', data: sim.upstreamLog.history().toString('utf8') });
  send('modelStatus', inst.modelStatus());
  send('uiConfig', { activity: { session_id: ['X-Session-ID', 'X-Litellm-Session-Id'] } });
  send('profileChanged', { active: inst.activeProfile });
  send('inflight', { operation: 'snapshot', requests: inst.inflightSnapshot() });
  return untilClosed(ctx, () => unsubscribers.forEach((u) => u()));
}

/** Keep the handler alive until the client leaves or the instance shuts down (then end cleanly). */
function untilClosed(ctx: RequestContext, cleanup: () => void): Promise<void> {
  return new Promise((resolve) => {
    const finish = () => {
      ctx.clientGone.removeEventListener('abort', finish);
      ctx.inst.shutdownSignal.removeEventListener('abort', finish);
      cleanup();
      if (!ctx.res.writableEnded && !ctx.res.destroyed) ctx.res.end();
      resolve();
    };
    if (ctx.clientGone.aborted || ctx.inst.shutdownSignal.aborted) return finish();
    ctx.clientGone.addEventListener('abort', finish, { once: true });
    ctx.inst.shutdownSignal.addEventListener('abort', finish, { once: true });
  });
}
