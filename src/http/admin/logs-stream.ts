/**
 * `GET /api/logs/stream?source=...`: llama-swap's logs (and Gatehouse's own access log) sent to
 * the browser as Server-Sent Events.
 *
 * The proxy and upstream logs come from the shared live view, which follows llama-swap once for
 * every dashboard. A model's own log is relayed from llama-swap per request. llama-swap closes
 * every stream on each config reload (docs/llama-swap.md, "Log and event streams"); a relay that
 * just forwards would leave the page on a dead stream, so this one says so with a `gap` event
 * and carries on, on the same response.
 */
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { LineBuffer } from '../../logging/line-buffer.js';
import type { UpstreamView } from '../../live/upstream-view.js';
import type { Upstream } from '../../management-client/upstream.js';
import type { LogSource } from '../../management-client/types.js';
import { GatewayError } from '../../core/errors.js';
import { redactSecrets } from '../../core/redact-secrets.js';
import { UpstreamError } from '../../management-client/errors.js';
import { modelIdProblem } from '../../management-client/model-id.js';

const PING_MS = 15_000;
const RETRY_MIN_MS = 250;
const RETRY_MAX_MS = 5_000;

export function createLogStreamHandler(deps: { upstream: Upstream; view: UpstreamView; gatewayLog: LineBuffer }) {
  return async function logStream(request: FastifyRequest, reply: FastifyReply): Promise<void> {
    const query = request.query as { source?: string; history?: string };
    const source = parseSource(query.source);
    const withHistory = query.history !== '0';
    // The view's history is complete once llama-swap was asked (or failed to answer).
    if (source === 'proxy' || source === 'upstream') await deps.view.current();

    reply.hijack();
    const res = reply.raw;
    res.writeHead(200, {
      'content-type': 'text/event-stream; charset=utf-8',
      'cache-control': 'no-cache',
      'x-accel-buffering': 'no',
      'x-content-type-options': 'nosniff',
    });
    res.flushHeaders();
    const send = (event: string, data: unknown) => {
      if (!res.destroyed) res.write(`event: ${event}\ndata: ${JSON.stringify(data)}\n\n`);
    };
    const closed = new AbortController();
    res.once('close', () => closed.abort());
    const ping = setInterval(() => res.write(': ping\n\n'), PING_MS);
    closed.signal.addEventListener('abort', () => clearInterval(ping));

    if (source === 'gateway') {
      if (withHistory) send('history', deps.gatewayLog.history().join('\n') + '\n');
      const unsubscribe = deps.gatewayLog.subscribe((line) => send('log', `${line}\n`));
      closed.signal.addEventListener('abort', unsubscribe);
      return;
    }

    if (source === 'proxy' || source === 'upstream') {
      if (withHistory) send('history', deps.view.snapshot().logs[source]);
      const unwatch = deps.view.watch((event) => {
        if (event.name === 'log' && event.data.source === source) send('log', event.data.text);
        else if (event.name === 'history' && event.data.source === source) send('log', event.data.text);
        else if (event.name === 'gap' && (event.data.source ?? source) === source)
          send('gap', { reason: event.data.reason });
      });
      closed.signal.addEventListener('abort', unwatch);
      return;
    }

    let first = true;
    let retryMs = RETRY_MIN_MS;
    while (!closed.signal.aborted) {
      const history = first && withHistory;
      try {
        const stream = await deps.upstream.logStream(source, {
          noHistory: !history,
          signal: closed.signal,
          timeoutMs: 10_000,
        });
        retryMs = RETRY_MIN_MS;
        let firstChunk = history;
        for await (const text of stream) {
          // llama-swap writes its whole history in one flush first.
          send(firstChunk ? 'history' : 'log', redactSecrets(text));
          firstChunk = false;
        }
        if (closed.signal.aborted) break;
        send('gap', { reason: 'llama-swap closed the log stream (a config reload does this); reconnected.' });
      } catch (error) {
        if (closed.signal.aborted) break;
        if (error instanceof UpstreamError && error.kind === 'unsupported') {
          // llama-server has no log stream at all: say so once, not "retrying" forever.
          send('unavailable', { reason: error.message });
          break;
        }
        send('gap', { reason: `llama-swap log stream unavailable: ${(error as Error).message}; retrying.` });
        retryMs = Math.min(retryMs * 2, RETRY_MAX_MS);
      }
      first = false;
      await new Promise((resolve) => setTimeout(resolve, retryMs));
    }
    res.end();
  };
}

function parseSource(raw: string | undefined): LogSource | 'gateway' {
  if (raw === undefined || raw === 'proxy') return 'proxy';
  if (raw === 'upstream' || raw === 'gateway') return raw;
  if (raw.startsWith('model:')) {
    const model = raw.slice('model:'.length);
    const problem = modelIdProblem(model);
    if (problem === undefined) return { model };
    throw new GatewayError('bad_request', {
      message: 'This is not a model id llama-swap can be asked about.',
      details: [{ path: '/source', message: problem }],
    });
  }
  throw new GatewayError('bad_request', {
    message: 'source must be proxy, upstream, gateway or model:<id>.',
    details: [{ path: '/source', message: `unknown source ${JSON.stringify(raw)}` }],
  });
}
