/**
 * The optional wrk engine (used when `wrk` is on PATH, or with --engine wrk). wrk is a C load
 * generator in its own process: it takes less of a 2-core machine's CPU than autocannon, so
 * the servers get more of it. Its --latency table has microsecond resolution.
 */
import { spawn } from 'node:child_process';
import { accessSync, constants, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { delimiter, join } from 'node:path';
import type { LoadRequest, LoadRunResult } from './load.js';

export function wrkOnPath(): boolean {
  for (const dir of (process.env.PATH ?? '').split(delimiter)) {
    if (!dir) continue;
    try {
      accessSync(join(dir, 'wrk'), constants.X_OK);
      return true;
    } catch {
      // not in this directory
    }
  }
  return false;
}

/** A Lua string literal that needs no escaping (long brackets with a level the text lacks). */
function luaString(text: string): string {
  let level = '';
  while (text.includes(`]${level}]`)) level += '=';
  return `[${level}[${text}]${level}]`;
}

function luaScript(request: LoadRequest): string {
  const lines = [`wrk.method = ${luaString(request.method)}`, `wrk.body = ${luaString(request.body)}`];
  for (const [name, value] of Object.entries(request.headers))
    lines.push(`wrk.headers[ ${luaString(name)} ] = ${luaString(value)}`); // spaces: `[[[` would open a long string
  return `${lines.join('\n')}\n`;
}

const UNIT_MS: Record<string, number> = { us: 0.001, ms: 1, s: 1000, m: 60_000 };

function durationMs(text: string | undefined): number {
  const match = /^([\d.]+)(us|ms|s|m)$/.exec(text ?? '');
  return match ? Number(match[1]) * UNIT_MS[match[2]!]! : Number.NaN;
}

function parseWrkOutput(output: string): LoadRunResult {
  const rps = Number(/Requests\/sec:\s+([\d.]+)/.exec(output)?.[1] ?? Number.NaN);
  const total = Number(/(\d+) requests in/.exec(output)?.[1] ?? 0);
  const non2xx = Number(/Non-2xx or 3xx responses:\s+(\d+)/.exec(output)?.[1] ?? 0);
  const socket = /Socket errors: connect (\d+), read (\d+), write (\d+), timeout (\d+)/.exec(output);
  const errors = socket ? socket.slice(1, 5).reduce((sum, n) => sum + Number(n), 0) : 0;
  const okShare = total > 0 ? (total - non2xx) / total : 1;
  return {
    rps: rps * okShare,
    p50Ms: durationMs(/^\s+50%\s+(\S+)/m.exec(output)?.[1]),
    p99Ms: durationMs(/^\s+99%\s+(\S+)/m.exec(output)?.[1]),
    okResponses: total - non2xx,
    errors,
    non2xx,
  };
}

export function runWrk(
  baseUrl: string,
  request: LoadRequest,
  connections: number,
  seconds: number,
  onStart: (stop: () => void) => void,
): Promise<LoadRunResult> {
  const dir = mkdtempSync(join(tmpdir(), 'gatehouse-bench-wrk-'));
  const script = join(dir, 'request.lua');
  writeFileSync(script, luaScript(request));
  // wrk takes whole seconds; one thread, since the servers need the other core.
  const args = [
    '-t1',
    `-c${connections}`,
    `-d${Math.max(1, Math.round(seconds))}s`,
    '--latency',
    '-s',
    script,
    baseUrl + request.path,
  ];
  return new Promise<LoadRunResult>((resolve, reject) => {
    const child = spawn('wrk', args, { stdio: ['ignore', 'pipe', 'pipe'] });
    let output = '';
    child.stdout.setEncoding('utf8').on('data', (text: string) => (output += text));
    child.stderr.setEncoding('utf8').on('data', (text: string) => (output += text));
    const killer = setTimeout(() => child.kill('SIGKILL'), (seconds + 15) * 1000);
    onStart(() => child.kill('SIGINT'));
    child.once('error', (error) => {
      clearTimeout(killer);
      rmSync(dir, { recursive: true, force: true });
      reject(error);
    });
    child.once('close', (code) => {
      clearTimeout(killer);
      rmSync(dir, { recursive: true, force: true });
      const result = parseWrkOutput(output);
      if (code !== 0 || Number.isNaN(result.rps))
        reject(new Error(`wrk failed (exit ${code}):\n${output.slice(-2000)}`));
      else resolve(result);
    });
  });
}
