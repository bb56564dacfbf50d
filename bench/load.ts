/**
 * The load driver: one closed-loop run of N keep-alive connections against one target for a
 * fixed time. autocannon runs in this process; its histogram keeps whole milliseconds only,
 * so latencies are taken from its per-response event (float ms) into our own sample buffer,
 * which is what sub-millisecond "added p50" needs.
 */
import autocannon, { type AutocannonInstance } from 'autocannon';
import type { Engine } from './options.js';
import { percentile, Samples } from './stats.js';
import { runWrk, wrkOnPath } from './wrk.js';

export interface LoadRequest {
  method: 'POST';
  path: string;
  headers: Readonly<Record<string, string>>;
  body: string;
}

export interface LoadRunResult {
  /** Successful (2xx) responses per second. */
  rps: number;
  p50Ms: number;
  p99Ms: number;
  okResponses: number;
  /** Connection errors and timeouts. */
  errors: number;
  non2xx: number;
}

export interface LoadDriver {
  engine: Engine;
  run(baseUrl: string, request: LoadRequest, connections: number, seconds: number): Promise<LoadRunResult>;
  /** Ends the current run early (Ctrl-C); its promise still settles. */
  stop(): void;
}

export function createLoadDriver(choice: Engine | 'auto'): LoadDriver {
  const engine: Engine = choice === 'auto' ? (wrkOnPath() ? 'wrk' : 'autocannon') : choice;
  if (engine === 'wrk') {
    if (!wrkOnPath()) throw new Error('--engine wrk: wrk is not on PATH');
    let stopCurrent: (() => void) | undefined;
    return {
      engine,
      run: (baseUrl, request, connections, seconds) =>
        runWrk(baseUrl, request, connections, seconds, (stop) => (stopCurrent = stop)),
      stop: () => stopCurrent?.(),
    };
  }
  let current: AutocannonInstance | undefined;
  return {
    engine,
    run(baseUrl, request, connections, seconds) {
      return new Promise<LoadRunResult>((resolve, reject) => {
        const latencies = new Samples();
        let ok = 0;
        const instance = autocannon(
          {
            url: baseUrl + request.path,
            method: request.method,
            headers: { ...request.headers },
            body: request.body,
            connections,
            duration: seconds,
            pipelining: 1,
            timeout: 10,
          },
          (error, result) => {
            current = undefined;
            if (error) return reject(error);
            const elapsedS = result.duration > 0 ? result.duration : seconds;
            const values = latencies.values();
            resolve({
              rps: ok / elapsedS,
              p50Ms: percentile(values, 50),
              p99Ms: percentile(values, 99),
              okResponses: ok,
              errors: result.errors,
              non2xx: result.non2xx,
            });
          },
        );
        instance.on('response', (_client: unknown, status: number, _bytes: number, responseTimeMs: number) => {
          if (status >= 200 && status < 300) {
            ok++;
            latencies.push(responseTimeMs);
          }
        });
        current = instance;
      });
    },
    stop: () => current?.stop(),
  };
}
