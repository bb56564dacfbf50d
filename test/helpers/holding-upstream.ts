/**
 * An upstream that holds every `/v1` call until the test answers it, so which calls are in
 * flight and which wait in Gatehouse's queue is exact. Each arrival can be answered as a chat
 * completion, a stream, one of llama-swap's errors or its 429. Anything else is a 404: it has no
 * llama-swap API, so the gateway's live view reports llama-swap as not answering.
 */
import { createServer, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

export interface HeldCall {
  /** The call's `x-request-id`. */
  id: string;
  model: string;
  /** Sends the response head, as llama-swap does once its model is up and answering. */
  begin(): void;
  /** A small chat completion (after its head, if begun). */
  answer(): void;
  /** Two OpenAI chat deltas and `[DONE]` (`STREAM_BODY`). */
  stream(): void;
  /** One of llama-swap's own errors. */
  fail(status: number, message: string): void;
  /** llama-swap's 429 of a full concurrency limit, with `Retry-After: 1`. */
  busy(shape: 'envelope' | 'legacy'): void;
}

export interface HoldingUpstream {
  url: string;
  /** Every held call so far, in arrival order. */
  arrivals: HeldCall[];
  /** Resolves once `n` calls have arrived. */
  arrived(n: number): Promise<HeldCall[]>;
  begin(i: number): void;
  answer(i: number): void;
  close(): Promise<void>;
}

const chunk = (delta: string, finish: string | null) =>
  `data: ${JSON.stringify({
    id: 'c',
    object: 'chat.completion.chunk',
    model: 'qwen',
    choices: [{ index: 0, delta: { content: delta }, finish_reason: finish }],
  })}\n\n`;

/** What `stream()` sends; a client must receive it unchanged after any keep-alive comments. */
export const STREAM_BODY = chunk('Hel', null) + chunk('lo', 'stop') + 'data: [DONE]\n\n';

const BUSY_BODIES = {
  envelope: {
    src: 'llama-swap',
    error: { message: 'Too many requests', type: 'rate_limit_error', code: 'concurrency_limit' },
  },
  legacy: { error: 'Too many requests' },
};

function heldCall(id: string, model: string, res: ServerResponse): HeldCall {
  const end = (status: number, type: string, body: string, headers: Record<string, string> = {}) => {
    if (!res.headersSent) res.writeHead(status, { 'content-type': type, ...headers });
    res.end(body);
  };
  return {
    id,
    model,
    begin: () => res.writeHead(200, { 'content-type': 'application/json' }).flushHeaders(),
    answer: () =>
      end(200, 'application/json', JSON.stringify({ id: 'c', object: 'chat.completion', model, choices: [] })),
    stream: () => end(200, 'text/event-stream', STREAM_BODY),
    fail: (status, message) =>
      end(
        status,
        'application/json',
        JSON.stringify({ src: 'llama-swap', error: { message, type: 'server_error', code: 'internal_error' } }),
      ),
    busy: (shape) => end(429, 'application/json', JSON.stringify(BUSY_BODIES[shape]), { 'retry-after': '1' }),
  };
}

export async function startHoldingUpstream(): Promise<HoldingUpstream> {
  const arrivals: HeldCall[] = [];
  const waiters: Array<() => void> = [];
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      if (req.method !== 'POST' || !req.url?.startsWith('/v1/')) return res.writeHead(404).end();
      const text = Buffer.concat(chunks).toString();
      const model = text ? ((JSON.parse(text) as { model?: string }).model ?? '') : '';
      arrivals.push(heldCall(String(req.headers['x-request-id']), model, res));
      for (const w of waiters.splice(0)) w();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    arrivals,
    async arrived(n) {
      while (arrivals.length < n) await new Promise<void>((resolve) => waiters.push(resolve));
      return arrivals;
    },
    begin: (i) => arrivals[i]!.begin(),
    answer: (i) => arrivals[i]!.answer(),
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
