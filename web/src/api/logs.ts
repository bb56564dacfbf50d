/**
 * The one place that opens an EventSource. `openLogStream` reports what the server sends and
 * when the connection fails; reconnecting is the caller's policy (lib/log-follower.ts).
 */
import type { LogSource } from '@gatehouse/admin-api/types.js';

export interface LogStreamHandlers {
  open(): void;
  /** The server's buffered text, sent once on open (unless `history: false`). */
  history(text: string): void;
  /** New text; not line-aligned. */
  log(text: string): void;
  /** The server's upstream stream restarted (e.g. a llama-swap config reload); it continues by itself. */
  gap(reason: string): void;
  /** The connection failed or was refused. The stream is closed; call openLogStream again to retry. */
  error(): void;
}

export interface LogStream {
  close(): void;
}

function logStreamUrl(source: LogSource, history: boolean): string {
  const params = new URLSearchParams({ source });
  if (!history) params.set('history', '0');
  return `/api/logs/stream?${params.toString()}`;
}

export function openLogStream(
  source: LogSource,
  options: { history: boolean },
  handlers: LogStreamHandlers,
): LogStream {
  const events = new EventSource(logStreamUrl(source, options.history), { withCredentials: true });
  let closed = false;
  const close = () => {
    closed = true;
    events.close();
  };
  events.addEventListener('open', () => {
    if (!closed) handlers.open();
  });
  events.addEventListener('history', (event) => {
    if (!closed) handlers.history(decodeText((event as MessageEvent<string>).data));
  });
  events.addEventListener('log', (event) => {
    if (!closed) handlers.log(decodeText((event as MessageEvent<string>).data));
  });
  events.addEventListener('gap', (event) => {
    if (!closed) handlers.gap(decodeReason((event as MessageEvent<string>).data));
  });
  events.addEventListener('error', () => {
    if (closed) return;
    // The browser's own retry cannot tell a restart from a lost session (EventSource hides the
    // status), so every failure is handed to the caller, who checks the session and reopens.
    close();
    handlers.error();
  });
  return { close };
}

/** `data` is a JSON string of text; plain text is accepted too. */
function decodeText(data: string): string {
  if (data.startsWith('"')) {
    try {
      const value: unknown = JSON.parse(data);
      if (typeof value === 'string') return value;
    } catch {
      // fall through: not JSON after all
    }
  }
  return data;
}

function decodeReason(data: string): string {
  try {
    const value = JSON.parse(data) as { reason?: unknown };
    if (typeof value.reason === 'string') return value.reason;
  } catch {
    // fall through
  }
  return data;
}
