/**
 * The access log: one `info` line per request, written by the process logger like its other
 * lines. Only named fields, never headers, so no credential can reach a log line through here.
 */
import type { Logger } from 'pino';

export interface AccessLine {
  req_id: string;
  method: string;
  path: string;
  status: number;
  model?: string | undefined;
  /** The API key's name (never the key). */
  key?: string | undefined;
  ms: number;
  bytes_in?: number | undefined;
  bytes_out?: number | undefined;
  stream?: boolean | undefined;
  /** `ollama` for a call on the Ollama listener; absent for `/v1` and the rest. */
  door?: 'ollama' | undefined;
  error?: string | undefined;
}

export type AccessLog = (line: AccessLine) => void;

/** Logs each line as `{...fields, msg: "request"}` at `info`; pino leaves out undefined fields. */
export function createAccessLog(logger: Logger): AccessLog {
  return function accessLog(line) {
    logger.info(line, 'request');
  };
}
