/**
 * Receives a request body whole before anything is forwarded (nginx's
 * `proxy_request_buffering on`): a slow client holds a socket of ours, never one of the
 * upstream connections every other client needs. Small bodies stay in memory; above
 * `MEMORY_BODY_MAX_BYTES` the body goes to a file in this process's spool directory
 * (spool-dir.ts), removed when the call ends. Each chunk is shown to an observer as it arrives
 * (the model reader), so the model is known the moment the body is complete.
 *
 * The body limit counts received bytes, so a missing or lying Content-Length does not get
 * around it, and a body that stops arriving for `idleTimeoutMs` is answered 408.
 */
import { createReadStream, createWriteStream, rmSync, type WriteStream } from 'node:fs';
import type { IncomingMessage } from 'node:http';
import { join } from 'node:path';
import { randomUUID } from 'node:crypto';
import type { BodyHead } from '../core/context.js';
import { GatewayError } from '../core/errors.js';
import type { SpoolShare } from './spool-budget.js';

export interface ReceiveOptions {
  limit: number;
  idleTimeoutMs: number;
  spoolDir: string;
  /** Sees every chunk, in order, as it arrives. */
  observe?: ((chunk: Buffer) => void) | undefined;
  /** Takes this call's share of the spool (spool-budget.ts) for a body of `bytes` so far; may throw. */
  openSpool?: ((bytes: number) => SpoolShare) | undefined;
}

/** Bodies up to this size are held in memory; larger ones are spooled to disk. */
export const MEMORY_BODY_MAX_BYTES = 256 * 1024;
/** How much of a spooled body stays in memory for body capture. */
const START_BYTES = 64 * 1024;

const NO_BODY: BodyHead = Object.freeze({
  bytes: 0,
  complete: [],
  start: [],
  body: null,
  received: () => 0,
  dispose: () => undefined,
});

function tooLarge(limit: number): GatewayError {
  return new GatewayError('body_too_large', {
    message: `The request body exceeds the gateway's limit of ${formatBytes(limit)}.`,
  });
}

function formatBytes(n: number): string {
  return n % (1024 * 1024) === 0 ? `${n / (1024 * 1024)} MiB` : `${n} bytes`;
}

export function hasBody(req: IncomingMessage): boolean {
  const declared = req.headers['content-length'];
  return !(declared === '0' || (declared === undefined && req.headers['transfer-encoding'] === undefined));
}

/**
 * Receives the whole body. Rejects with 413 as soon as the limit is crossed (at once when the
 * declared Content-Length is over it) and with 408 when the body stops arriving. A body to be
 * spooled takes its share of the spool first: from a declared length before any byte is read,
 * else as it grows, so a call that does not fit is refused (503 `spool_full`) before or while
 * it arrives.
 */
export function receiveBody(req: IncomingMessage, options: ReceiveOptions): Promise<BodyHead> {
  const { limit, observe, openSpool } = options;
  const declared = req.headers['content-length'];
  if (declared !== undefined && Number(declared) > limit) return Promise.reject(tooLarge(limit));
  if (!hasBody(req)) return Promise.resolve(NO_BODY);
  let share: SpoolShare | undefined;
  const declaredBytes = declared === undefined ? NaN : Number(declared);
  if (openSpool && Number.isSafeInteger(declaredBytes) && declaredBytes > MEMORY_BODY_MAX_BYTES) {
    try {
      share = openSpool(declaredBytes);
    } catch (error) {
      return Promise.reject(error);
    }
  }

  return new Promise<BodyHead>((resolve, reject) => {
    const held: Buffer[] = [];
    const start: Buffer[] = [];
    let startBytes = 0;
    let bytes = 0;
    let spool: { path: string; out: WriteStream } | undefined;
    let settled = false;

    const dispose = () => {
      if (spool) rmSync(spool.path, { force: true });
      share?.release();
    };
    const settle = (error: Error | undefined, head?: BodyHead) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      req.off('data', onData);
      req.off('end', onEnd);
      req.off('error', onError);
      req.off('aborted', onAborted);
      if (error === undefined) return resolve(head!);
      if (spool) {
        // The file may still be opening: remove it again once the stream has closed.
        const { path } = spool;
        spool.out.once('close', () => rmSync(path, { force: true }));
        spool.out.destroy();
      }
      dispose();
      reject(error);
    };
    const timer = setTimeout(onIdle, options.idleTimeoutMs);
    function onIdle() {
      req.pause();
      settle(
        new GatewayError('body_timeout', {
          message:
            `The request body stopped arriving: nothing for ${options.idleTimeoutMs / 1000} s ` +
            `(GATEHOUSE_BODY_TIMEOUT).`,
        }),
      );
    }

    const onData = (chunk: Buffer) => {
      timer.refresh();
      bytes += chunk.length;
      if (bytes > limit) return settle(tooLarge(limit));
      observe?.(chunk);
      if (startBytes < START_BYTES) {
        start.push(chunk);
        startBytes += chunk.length;
      }
      if (!spool && bytes <= MEMORY_BODY_MAX_BYTES) {
        held.push(chunk);
        return;
      }
      if (openSpool) {
        try {
          share ??= openSpool(bytes);
          share.cover(bytes);
        } catch (error) {
          return settle(error as Error);
        }
      }
      if (!spool) {
        const path = join(options.spoolDir, `${randomUUID()}.body`);
        spool = { path, out: createWriteStream(path, { mode: 0o600 }) };
        spool.out.on('error', (error) => settle(error));
        for (const piece of held) spool.out.write(piece);
        held.length = 0;
      }
      if (!spool.out.write(chunk)) {
        req.pause();
        spool.out.once('drain', () => req.resume());
      }
    };
    const onEnd = () => {
      clearTimeout(timer);
      if (!spool) {
        // A declared length over the memory threshold that was not sent whole never gets here.
        share?.release();
        const body = held.length === 1 ? held[0]! : held.length === 0 ? null : held;
        return settle(undefined, {
          bytes,
          complete: held,
          start: held,
          body,
          received: () => bytes,
          dispose: () => undefined,
        });
      }
      const { path, out } = spool;
      out.end(() => {
        if (settled) return;
        settle(undefined, {
          bytes,
          complete: undefined,
          start,
          body: createReadStream(path),
          received: () => bytes,
          dispose,
        });
      });
    };
    const onError = (error: Error) => settle(error);
    const onAborted = () => settle(new Error('client aborted the request body'));
    req.on('data', onData);
    req.on('end', onEnd);
    req.on('error', onError);
    req.on('aborted', onAborted);
  });
}

/**
 * Before an early answer (401, 413...) to a client still sending its body: read and drop the
 * rest first, so the client finishes writing and then reads our answer, instead of hitting a
 * closed socket (nginx calls this a lingering close). Resolves true once the body ended, false
 * when the client sent more than `maxBytes` or took longer than `maxMs` (then the connection
 * is not worth keeping).
 */
export function discardRest(req: IncomingMessage, maxBytes: number, maxMs = 5000): Promise<boolean> {
  if (req.complete || req.destroyed) return Promise.resolve(req.complete);
  return new Promise((resolve) => {
    let discarded = 0;
    const done = (drained: boolean) => {
      clearTimeout(timer);
      req.off('data', onData);
      req.off('end', onEnd);
      req.off('close', onClose);
      if (!drained) req.pause();
      resolve(drained);
    };
    const onData = (chunk: Buffer) => {
      discarded += chunk.length;
      if (discarded > maxBytes) done(false);
    };
    const onEnd = () => done(true);
    const onClose = () => done(req.complete);
    const timer = setTimeout(() => done(false), maxMs);
    timer.unref();
    req.on('data', onData);
    req.once('end', onEnd);
    req.once('close', onClose);
    req.resume();
  });
}
