/**
 * What tests observe: every request with its body hash, extracted model, status, abort/cut
 * flags, timestamps and the exact response bytes; plus `waitFor`, re-evaluated on every
 * simulator change (request, state, log line) instead of sleeping.
 */
import { createHash } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { performance } from 'node:perf_hooks';
import type { RecordedRequest } from './types.js';

const MAX_RECORDED_BYTES = 8 * 1024 * 1024;

class RequestRecord implements RecordedRequest {
  status: number | undefined = undefined;
  model: string | undefined = undefined;
  aborted = false;
  cutByServer = false;
  closedAt: number | undefined = undefined;
  finishedAt: number | undefined = undefined;
  readonly receivedAt = performance.now();
  private chunks: Buffer[] = [];
  private size = 0;

  constructor(
    readonly seq: number,
    readonly method: string,
    readonly path: string,
    readonly headers: Record<string, string>,
    readonly bodyBytes: number,
    readonly bodySha256: string,
  ) {}

  get sentBytes(): Buffer {
    return Buffer.concat(this.chunks);
  }

  append(chunk: unknown, encoding: unknown): void {
    if (chunk === undefined || chunk === null || typeof chunk === 'function') return;
    const buf = Buffer.isBuffer(chunk)
      ? chunk
      : chunk instanceof Uint8Array
        ? Buffer.from(chunk)
        : Buffer.from(String(chunk), typeof encoding === 'string' ? (encoding as BufferEncoding) : 'utf8');
    if (this.size + buf.length > MAX_RECORDED_BYTES) return;
    this.chunks.push(buf);
    this.size += buf.length;
  }
}

export class ChangeNotifier {
  private readonly listeners = new Set<() => void>();

  notify(): void {
    for (const l of [...this.listeners]) l();
  }

  waitFor<T>(check: () => T | undefined | null | false, timeoutMs = 2000, what = 'condition'): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      const evaluate = (): boolean => {
        let value: T | undefined | null | false;
        try {
          value = check();
        } catch (err) {
          finish();
          reject(err);
          return true;
        }
        if (value !== undefined && value !== null && value !== false) {
          finish();
          resolve(value);
          return true;
        }
        return false;
      };
      const listener = () => void evaluate();
      // Safety net for conditions that change without a notification (e.g. files on disk).
      const poll = setInterval(listener, 25);
      const timer = setTimeout(() => {
        finish();
        reject(new Error(`simulator: timed out after ${timeoutMs} ms waiting for ${what}`));
      }, timeoutMs);
      const finish = () => {
        clearInterval(poll);
        clearTimeout(timer);
        this.listeners.delete(listener);
      };
      if (!evaluate()) this.listeners.add(listener);
    });
  }
}

export class Recorder {
  readonly received: RecordedRequest[] = [];
  private seq = 0;

  constructor(
    private readonly changes: ChangeNotifier,
    /** Oldest records are dropped beyond this many (a long-running demo must not grow forever). */
    private readonly limit = 10_000,
  ) {}

  /** Record a request whose body was read, and tap its response writes. */
  begin(req: IncomingMessage, res: ServerResponse, body: Buffer): RequestRecord {
    const headers: Record<string, string> = {};
    for (let i = 0; i < req.rawHeaders.length; i += 2) {
      const name = req.rawHeaders[i]!.toLowerCase();
      const value = req.rawHeaders[i + 1] ?? '';
      headers[name] = headers[name] === undefined ? value : `${headers[name]}, ${value}`;
    }
    const rec = new RequestRecord(
      ++this.seq,
      req.method ?? 'GET',
      req.url ?? '/',
      headers,
      body.length,
      createHash('sha256').update(body).digest('hex'),
    );
    const write = res.write.bind(res) as (...args: unknown[]) => boolean;
    const end = res.end.bind(res) as (...args: unknown[]) => ServerResponse;
    const writeHead = res.writeHead.bind(res) as (...args: unknown[]) => ServerResponse;
    const tap = rec.method !== 'HEAD';
    res.writeHead = (...args: unknown[]) => {
      rec.status = args[0] as number;
      return writeHead(...args);
    };
    res.write = ((...args: unknown[]) => {
      if (tap) rec.append(args[0], args[1]);
      const ok = write(...args);
      this.changes.notify();
      return ok;
    }) as typeof res.write;
    res.end = ((...args: unknown[]) => {
      if (tap) rec.append(args[0], args[1]);
      return end(...args);
    }) as typeof res.end;
    res.on('finish', () => {
      rec.finishedAt = performance.now();
    });
    res.on('close', () => {
      rec.closedAt = performance.now();
      if (rec.status === undefined && res.headersSent) rec.status = res.statusCode;
      if (!res.writableFinished && !rec.cutByServer) rec.aborted = true;
      this.changes.notify();
    });
    this.received.push(rec);
    if (this.received.length > this.limit) this.received.splice(0, this.received.length - this.limit);
    this.changes.notify();
    return rec;
  }

  clear(): void {
    this.received.length = 0;
  }
}

export type { RequestRecord };
