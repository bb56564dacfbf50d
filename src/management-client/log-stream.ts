/**
 * Long-lived llama-swap streams as async iterables: `/logs/stream*` (chunked plain text, not
 * SSE) and `/api/events` (SSE with a double-encoded `data`); see docs/llama-swap.md. Both end when
 * llama-swap reloads its config, so callers reconnect and treat the first burst as a resync.
 */
import type { Readable } from 'node:stream';
import { transportError } from './errors.js';
import { SseDecoder } from '../core/sse-decoder.js';
import type { ClosableStream, LlamaSwapEvent } from './types.js';

/**
 * Text chunks exactly as llama-swap flushed them (not line-aligned), UTF-8 decoded across
 * chunk boundaries. Ends quietly on `close()`, caller abort or server close; a broken
 * connection throws `UpstreamError('unreachable')`.
 */
export function textStream(body: Readable, what: string, signal?: AbortSignal): ClosableStream<string> {
  let closed = false;
  const close = () => {
    closed = true;
    body.destroy();
  };
  const onAbort = () => close();
  signal?.addEventListener('abort', onAbort, { once: true });
  async function* iterate(): AsyncGenerator<string> {
    const decoder = new TextDecoder();
    try {
      for await (const chunk of body) {
        const text = decoder.decode(chunk as Buffer, { stream: true });
        if (text !== '') yield text;
      }
      const tail = decoder.decode();
      if (tail !== '') yield tail;
    } catch (err) {
      if (closed || signal?.aborted) return;
      throw transportError(err, what, false);
    } finally {
      signal?.removeEventListener('abort', onAbort);
      if (!body.destroyed) body.destroy();
    }
  }
  const iterator = iterate();
  return { close, [Symbol.asyncIterator]: () => iterator };
}

/** `/api/events` messages, `data` decoded twice into typed events. */
export function eventStream(body: Readable, signal?: AbortSignal): ClosableStream<LlamaSwapEvent> {
  const text = textStream(body, 'events stream', signal);
  async function* iterate(): AsyncGenerator<LlamaSwapEvent> {
    const decoder = new SseDecoder();
    for await (const chunk of text) {
      for (const message of decoder.push(chunk)) {
        const event = decodeEnvelope(message.data);
        if (event) yield event;
      }
    }
  }
  const iterator = iterate();
  return { close: text.close, [Symbol.asyncIterator]: () => iterator };
}

const KNOWN_TYPES = new Set(['modelStatus', 'logData', 'activity', 'inflight', 'uiConfig', 'profileChanged']);

/** `{"type": T, "data": "<json string>"}` → `{type, data}`; malformed frames are skipped. */
export function decodeEnvelope(raw: string): LlamaSwapEvent | undefined {
  let envelope: unknown;
  try {
    envelope = JSON.parse(raw);
  } catch {
    return undefined;
  }
  if (typeof envelope !== 'object' || envelope === null) return undefined;
  const { type, data } = envelope as { type?: unknown; data?: unknown };
  if (typeof type !== 'string') return undefined;
  let inner: unknown = data;
  if (typeof data === 'string') {
    try {
      inner = JSON.parse(data);
    } catch {
      inner = data;
    }
  }
  if (KNOWN_TYPES.has(type)) return { type, data: inner } as LlamaSwapEvent;
  return { type: 'unknown', rawType: type, data: inner };
}
