/**
 * An upstream that holds every chat completion until the test answers it, so which calls are
 * in flight and which wait in Gatehouse's queue is exact. Anything else is a 404: it has no
 * llama-swap API, so the gateway's live view reports llama-swap as not answering.
 */
import { createServer, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

export interface HoldingUpstream {
  url: string;
  /** Resolves once `n` chat completions have arrived. */
  arrived(n: number): Promise<void>;
  /** Sends the `i`-th call's response head, as llama-swap does once its model is up and answering. */
  begin(i: number): void;
  /** Answers the `i`-th call (0 = first) with a small chat completion (after its head, if begun). */
  answer(i: number): void;
  close(): Promise<void>;
}

export async function startHoldingUpstream(): Promise<HoldingUpstream> {
  const held: ServerResponse[] = [];
  const waiters: Array<() => void> = [];
  const server = createServer((req, res) => {
    req.resume();
    req.on('end', () => {
      if (req.url !== '/v1/chat/completions') return res.writeHead(404).end();
      held.push(res);
      for (const w of waiters.splice(0)) w();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    async arrived(n) {
      while (held.length < n) await new Promise<void>((resolve) => waiters.push(resolve));
    },
    begin(i) {
      held[i]!.writeHead(200, { 'content-type': 'application/json' }).flushHeaders();
    },
    answer(i) {
      const res = held[i]!;
      if (!res.headersSent) res.writeHead(200, { 'content-type': 'application/json' });
      res.end('{"choices":[]}');
    },
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
