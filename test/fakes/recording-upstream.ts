/**
 * A tiny real HTTP server that plays "whatever upstream this test needs" and records what
 * reached it, including when the gateway closed the connection. For llama-swap behaviour
 * use the simulator in test/fakes/llama-swap; this one is for exact bytes and the order of events.
 */
import { createHash } from 'node:crypto';
import {
  createServer,
  type IncomingHttpHeaders,
  type IncomingMessage,
  type Server,
  type ServerResponse,
} from 'node:http';
import type { AddressInfo, Socket } from 'node:net';

export interface Received {
  method: string;
  url: string;
  headers: IncomingHttpHeaders;
  bodyBytes: number;
  bodySha256: string;
  /** `performance.now()` when the connection carrying this request closed, if it did. */
  closedAt: number | undefined;
  /** True when the connection closed before the handler finished the response. */
  aborted: boolean;
}

export type UpstreamHandler = (req: IncomingMessage, res: ServerResponse, body: Buffer) => void | Promise<void>;

export interface RecordingUpstream {
  url: string;
  received: Received[];
  /** Requests whose headers arrived, complete or not (`received` lists only finished bodies). */
  readonly started: number;
  handle(handler: UpstreamHandler): void;
  /** Resolves with the first record matching `predicate`, checked whenever a record changes. */
  waitFor(predicate: (r: Received) => boolean, timeoutMs?: number): Promise<Received>;
  close(): Promise<void>;
}

export async function startRecordingUpstream(
  handler: UpstreamHandler = (_req, res) => void res.end('{}'),
): Promise<RecordingUpstream> {
  let current = handler;
  const received: Received[] = [];
  const sockets = new Set<Socket>();
  let started = 0;
  const watchers = new Set<() => void>();
  const changed = () => {
    for (const watcher of [...watchers]) watcher();
  };
  const server: Server = createServer((req, res) => {
    started++;
    const chunks: Buffer[] = [];
    let record: Received | undefined;
    const onClose = () => {
      if (!record) return;
      record.closedAt ??= performance.now();
      if (!res.writableFinished) record.aborted = true;
      changed();
    };
    res.on('close', onClose);
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const body = Buffer.concat(chunks);
      record = {
        method: req.method ?? '',
        url: req.url ?? '',
        headers: req.headers,
        bodyBytes: body.length,
        bodySha256: createHash('sha256').update(body).digest('hex'),
        closedAt: undefined,
        aborted: false,
      };
      received.push(record);
      changed();
      void Promise.resolve(current(req, res, body)).catch((error) => res.destroy(error as Error));
    });
    // A request whose body never completes (aborted upload) still gets recorded.
    req.on('aborted', () => {
      if (record) return;
      record = {
        method: req.method ?? '',
        url: req.url ?? '',
        headers: req.headers,
        bodyBytes: -1,
        bodySha256: '',
        closedAt: performance.now(),
        aborted: true,
      };
      received.push(record);
      changed();
    });
  });
  server.on('connection', (s: Socket) => {
    sockets.add(s);
    s.on('close', () => sockets.delete(s));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    received,
    get started() {
      return started;
    },
    handle(next) {
      current = next;
    },
    waitFor(predicate, timeoutMs = 2000) {
      return new Promise<Received>((resolve, reject) => {
        const stop = () => {
          clearTimeout(timer);
          watchers.delete(check);
        };
        const check = () => {
          const hit = received.find(predicate);
          if (!hit) return;
          stop();
          resolve(hit);
        };
        // A bound for a failing test, not a pace: a match resolves at once.
        const timer = setTimeout(() => {
          stop();
          reject(new Error('waitFor: no matching upstream request in time'));
        }, timeoutMs);
        watchers.add(check);
        check();
      });
    },
    async close() {
      for (const s of sockets) s.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
