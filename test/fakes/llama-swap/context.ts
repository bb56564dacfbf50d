/** What every route handler receives. Built once per request by `server.ts`. */
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { ActivityLog } from './activity.js';
import type { Instance } from './instance.js';
import type { LogMonitor } from './logs.js';
import type { RequestRecord } from './recorder.js';
import type { SendErrorOptions } from './responses.js';
import type { Knobs } from './types.js';

export interface SimServices {
  readonly knobs: Knobs;
  readonly proxyLog: LogMonitor;
  readonly upstreamLog: LogMonitor;
  /** The `/logs` log: what llama-swap would print to stdout (`logToStdout`). */
  readonly muxLog: LogMonitor;
  /** llama-swap's activity store; survives reloads. */
  readonly activityLog: ActivityLog;
  logProxy(level: 'INFO' | 'WARN', message: string): void;
}

export interface RequestContext {
  sim: SimServices;
  /** The config generation current when the request arrived. */
  inst: Instance;
  req: IncomingMessage;
  res: ServerResponse;
  rec: RequestRecord;
  body: Buffer;
  /** Raw (escaped) path without the query. */
  escapedPath: string;
  /** Decoded path (Go's `r.URL.Path`). */
  path: string;
  query: URLSearchParams;
  rawQuery: string;
  params: Record<string, string>;
  remoteIp: string;
  /** Aborts when the client connection closes before the response finished, or the simulator closes. */
  clientGone: AbortSignal;
  /** llama-swap's error response in the configured shape with Accept negotiation. */
  sendError(status: number, message: string, opts?: SendErrorOptions): void;
}

export interface RouteHandler {
  /** Protected by `apiKeys`. */
  auth: boolean;
  run(ctx: RequestContext): void | Promise<void>;
}
