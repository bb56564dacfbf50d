/**
 * Which upstream answers at a URL, from what it serves (docs/llama-server.md, "Detection"):
 * 1. `GET /running` answers 200 with a `running` array: llama-swap (llama-server has no such route).
 * 2. Else `GET /props` answers 200 with `role: "router"`: llama-server in router mode.
 * A llama-server started with one model (`/props` without the router role) is refused by name;
 * anything else is an error that says what was seen. Nothing is guessed.
 */
import { UpstreamError } from './errors.js';
import { createTransport, type CallOptions, type Exchange } from './transport.js';
import type { UpstreamKind } from './upstream.js';

export interface Detection {
  kind: UpstreamKind;
  /** The answer that told, for the start-up line. */
  via: string;
}

export interface DetectOptions {
  baseUrl: URL;
  apiKey?: string;
  timeoutMs?: number;
}

/**
 * Asks the upstream once. Throws `UpstreamError`: `unreachable`/`timeout` when it does not answer
 * (worth retrying), `http` when it answers but is neither kind (or refuses Gatehouse's key).
 */
export async function detectUpstreamKind(options: DetectOptions, opts: CallOptions = {}): Promise<Detection> {
  const http = createTransport({ ...options, who: 'upstream' });
  try {
    const running = await http.exchange({ method: 'GET', path: '/running', what: 'kind detection' }, opts);
    refuseKeyProblem(running);
    if (running.status === 200 && hasArray(running, 'running')) return { kind: 'llama-swap', via: 'GET /running' };
    const props = await http.exchange({ method: 'GET', path: '/props', what: 'kind detection' }, opts);
    refuseKeyProblem(props);
    if (props.status === 200) {
      const role = field(props, 'role');
      if (role === 'router') return { kind: 'llama-server', via: 'GET /props (role: router)' };
      throw new UpstreamError(
        'http',
        'The upstream is a llama-server serving a single model, not its router mode (start llama-server ' +
          'without -m/--model, with --models-dir or --models-preset), nor llama-swap.',
        { status: props.status },
      );
    }
    throw new UpstreamError(
      'http',
      `The upstream is neither llama-swap (GET /running answered ${running.status}) nor llama-server in ` +
        `router mode (GET /props answered ${props.status}). Set GATEHOUSE_UPSTREAM_KIND to say which it is.`,
      { status: props.status },
    );
  } finally {
    await http.close();
  }
}

function refuseKeyProblem(res: Exchange): void {
  if (res.status !== 401 && res.status !== 403) return;
  throw new UpstreamError(
    'http',
    `The upstream refused Gatehouse's key (HTTP ${res.status}) while telling which kind it is: ` +
      'check GATEHOUSE_UPSTREAM_API_KEY, or set GATEHOUSE_UPSTREAM_KIND.',
    { status: res.status },
  );
}

function parsed(res: Exchange): Record<string, unknown> | undefined {
  try {
    const value = JSON.parse(res.text) as unknown;
    return typeof value === 'object' && value !== null ? (value as Record<string, unknown>) : undefined;
  } catch {
    return undefined;
  }
}

function hasArray(res: Exchange, name: string): boolean {
  return Array.isArray(parsed(res)?.[name]);
}

function field(res: Exchange, name: string): unknown {
  return parsed(res)?.[name];
}
