/** Minimal HTTP client for tests that need exact bytes and arrival times. */
import { request, type IncomingHttpHeaders, type OutgoingHttpHeaders } from 'node:http';

export interface RawResponse {
  status: number;
  headers: IncomingHttpHeaders;
  body: Buffer;
  /** Each chunk as it arrived, with `performance.now()` at arrival. */
  chunks: Array<{ at: number; data: Buffer }>;
  headersAt: number;
}

export function rawRequest(url: string, options: { method?: string; headers?: OutgoingHttpHeaders; body?: Buffer | string } = {}): Promise<RawResponse> {
  return new Promise((resolve, reject) => {
    const req = request(url, { method: options.method ?? 'GET', headers: options.headers, agent: false }, (res) => {
      const headersAt = performance.now();
      const chunks: RawResponse['chunks'] = [];
      res.on('data', (data: Buffer) => chunks.push({ at: performance.now(), data }));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body: Buffer.concat(chunks.map((c) => c.data)), chunks, headersAt }));
      res.on('error', reject);
    });
    req.on('error', reject);
    req.end(options.body);
  });
}

export function json(body: Buffer): unknown {
  return JSON.parse(body.toString('utf8'));
}

export const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
