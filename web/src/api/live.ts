/**
 * `GET /api/live`: the one EventSource a browser needs for upstream status, models, logs and the queue
 * (lib/live.svelte.ts shares it between tabs). Reconnecting is the caller's policy.
 */
import type { LiveEventMap, LiveEventName } from '@gatehouse/admin-api/types.js';

export interface LiveStreamHandlers {
  open(): void;
  event<K extends LiveEventName>(name: K, data: LiveEventMap[K]): void;
  /** The connection failed or was refused. The stream is closed; open it again to retry. */
  error(): void;
}

export interface LiveStream {
  close(): void;
}

const EVENT_NAMES: readonly LiveEventName[] = ['upstream', 'models', 'history', 'log', 'gap', 'queue'];

export function openLiveStream(handlers: LiveStreamHandlers): LiveStream {
  const events = new EventSource('/api/live', { withCredentials: true });
  let closed = false;
  const close = () => {
    closed = true;
    events.close();
  };
  events.addEventListener('open', () => {
    if (!closed) handlers.open();
  });
  for (const name of EVENT_NAMES) {
    events.addEventListener(name, (event) => {
      if (closed) return;
      try {
        handlers.event(name, JSON.parse((event as MessageEvent<string>).data) as LiveEventMap[typeof name]);
      } catch {
        // A frame that is not JSON is skipped; the next snapshot puts things right.
      }
    });
  }
  events.addEventListener('error', () => {
    if (closed) return;
    // EventSource hides the status (a lost session looks like any failure): the caller checks.
    close();
    handlers.error();
  });
  return { close };
}
