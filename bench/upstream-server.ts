/**
 * The fixed-response upstream (a child process of the bench), standing in for llama-swap:
 *
 *   POST /v1/chat/completions        small chat-completion JSON, or with "stream":true a short
 *                                    SSE stream (5 events + [DONE]) written as separate chunks
 *   POST /v1/bench/timed-stream      ?chunks=N&interval_ms=M&first_ms=F: SSE, N chat-completion
 *                                    deltas, the first F ms after the headers (default M), then
 *                                    one every M ms, the last with usage; then [DONE]
 *   POST /v1/bench/idle-stream       ?hold_ms=M: SSE headers and one event, then silence until
 *                                    the client leaves or M ms pass
 *
 * It answers as cheaply as plain node:http allows, so the measured differences are the
 * proxies'. The request body is read in full before answering, as a real server does.
 */
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import { announceListening } from './child-ipc.js';

const CHAT_JSON = Buffer.from(
  JSON.stringify({
    id: 'chatcmpl-bench',
    object: 'chat.completion',
    created: 1_700_000_000,
    model: 'bench-model',
    choices: [
      { index: 0, message: { role: 'assistant', content: 'Hello! How can I help you today?' }, finish_reason: 'stop' },
    ],
    usage: { prompt_tokens: 9, completion_tokens: 9, total_tokens: 18 },
  }),
);

function chunkEvent(delta: Record<string, string>, finish: string | null, usage?: object): Buffer {
  const chunk = {
    id: 'chatcmpl-bench',
    object: 'chat.completion.chunk',
    created: 1_700_000_000,
    model: 'bench-model',
    choices: [{ index: 0, delta, finish_reason: finish }],
    ...(usage ? { usage } : {}),
  };
  return Buffer.from(`data: ${JSON.stringify(chunk)}\n\n`);
}

const SSE_EVENTS: readonly Buffer[] = [
  chunkEvent({ role: 'assistant', content: '' }, null),
  chunkEvent({ content: 'Hello' }, null),
  chunkEvent({ content: ' there' }, null),
  chunkEvent({ content: '!' }, null),
  chunkEvent({}, 'stop', { prompt_tokens: 9, completion_tokens: 3, total_tokens: 12 }),
  Buffer.from('data: [DONE]\n\n'),
];

const SSE_HEADERS = { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' } as const;
const STREAM_FLAG = /"stream"\s*:\s*true/;

/** Epoch milliseconds with sub-millisecond precision, comparable between local processes. */
const epochNow = () => performance.timeOrigin + performance.now();

function intParam(params: URLSearchParams, name: string, fallback: number, max: number): number {
  const n = Number(params.get(name) ?? fallback);
  return Number.isInteger(n) && n >= 0 ? Math.min(n, max) : fallback;
}

function chatCompletions(body: Buffer, res: ServerResponse): void {
  if (!STREAM_FLAG.test(body.toString('latin1'))) {
    res.writeHead(200, { 'content-type': 'application/json', 'content-length': CHAT_JSON.length });
    res.end(CHAT_JSON);
    return;
  }
  res.writeHead(200, SSE_HEADERS);
  for (const event of SSE_EVENTS) res.write(event);
  res.end();
}

const DELTA = chunkEvent({ content: ' tok' }, null);
const LAST_DELTA = chunkEvent({}, 'stop', { prompt_tokens: 9, completion_tokens: 64, total_tokens: 73 });

function timedStream(params: URLSearchParams, res: ServerResponse): void {
  const chunks = Math.max(1, intParam(params, 'chunks', 20, 1000));
  const intervalMs = intParam(params, 'interval_ms', 10, 1000);
  const firstMs = intParam(params, 'first_ms', intervalMs, 1000);
  res.writeHead(200, SSE_HEADERS);
  res.flushHeaders();
  let sent = 0;
  const tick = () => {
    if (res.destroyed) return;
    sent++;
    if (sent < chunks) {
      res.write(DELTA);
      timer = setTimeout(tick, intervalMs);
    } else {
      res.write(LAST_DELTA);
      res.end('data: [DONE]\n\n');
    }
  };
  // With first_ms=0 the first delta leaves with the headers, so time to first byte has no timer in it.
  let timer: NodeJS.Timeout | undefined;
  if (firstMs === 0) tick();
  else timer = setTimeout(tick, firstMs);
  res.once('close', () => clearTimeout(timer));
}

function idleStream(params: URLSearchParams, res: ServerResponse): void {
  const holdMs = intParam(params, 'hold_ms', 120_000, 600_000);
  res.writeHead(200, SSE_HEADERS);
  res.write(`data: {"held":true,"sent_at":${epochNow()}}\n\n`);
  const timer = setTimeout(() => res.end('data: [DONE]\n\n'), holdMs);
  res.once('close', () => clearTimeout(timer));
}

function handle(req: IncomingMessage, res: ServerResponse, body: Buffer): void {
  const url = new URL(req.url ?? '/', 'http://upstream');
  if (req.method === 'POST' && url.pathname === '/v1/chat/completions') return chatCompletions(body, res);
  if (req.method === 'POST' && url.pathname === '/v1/bench/timed-stream') return timedStream(url.searchParams, res);
  if (req.method === 'POST' && url.pathname === '/v1/bench/idle-stream') return idleStream(url.searchParams, res);
  const notFound = Buffer.from(
    JSON.stringify({ error: { message: `no bench route for ${req.method} ${url.pathname}`, type: 'not_found_error' } }),
  );
  res.writeHead(404, { 'content-type': 'application/json', 'content-length': notFound.length });
  res.end(notFound);
}

const server = createServer((req, res) => {
  const chunks: Buffer[] = [];
  req.on('data', (chunk: Buffer) => chunks.push(chunk));
  req.on('end', () => handle(req, res, chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks)));
});
// Longer than the gateway's pool keep-alive, so idle gaps between phases do not churn connections.
server.keepAliveTimeout = 65_000;
server.listen(0, '127.0.0.1', () => announceListening(server));
