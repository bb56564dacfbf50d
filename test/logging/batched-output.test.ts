/**
 * The logger's stdout (BatchedOutput): lines go out in order and whole, in batches rather than
 * one write per line, promptly when the gateway is quiet, and synchronously at process exit.
 */
import { closeSync, mkdtempSync, openSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { BatchedOutput } from '../../src/logging/batched-output.js';

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

describe('batched log output', () => {
  let dir: string;
  let file: string;
  let fd: number;
  let output: BatchedOutput | undefined;

  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), 'gatehouse-log-'));
    file = join(dir, 'out.log');
    fd = openSync(file, 'w');
  });

  afterEach(async () => {
    if (output) await new Promise<void>((resolve) => output!.close(() => resolve()));
    output = undefined;
    closeSync(fd);
    rmSync(dir, { recursive: true, force: true });
  });

  const flushed = (out: BatchedOutput) => new Promise<void>((resolve, reject) => out.flush((error) => (error ? reject(error) : resolve())));

  it('writes every line whole and in order, non-ASCII text included', async () => {
    output = new BatchedOutput({ fd, flushBytes: 1024, intervalMs: 60_000 });
    const lines = Array.from({ length: 5000 }, (_, i) => `{"n":${i},"msg":"é🚀${'x'.repeat(i % 200)}"}\n`);
    for (const line of lines) output.write(line);
    await flushed(output);
    expect(readFileSync(file, 'utf8')).toBe(lines.join(''));
  });

  it('holds small lines back until a batch is full or the interval passes', async () => {
    output = new BatchedOutput({ fd, flushBytes: 4096, intervalMs: 100 });
    output.write('{"a":1}\n');
    output.write('{"b":2}\n');
    await sleep(20);
    expect(readFileSync(file, 'utf8')).toBe('');
    await sleep(250);
    expect(readFileSync(file, 'utf8')).toBe('{"a":1}\n{"b":2}\n');
  });

  it('starts a write as soon as a batch is full, without waiting for the interval', async () => {
    output = new BatchedOutput({ fd, flushBytes: 1024, intervalMs: 60_000 });
    const line = `${'y'.repeat(99)}\n`;
    for (let i = 0; i < 11; i++) output.write(line);
    await sleep(100);
    expect(readFileSync(file, 'utf8').length).toBeGreaterThanOrEqual(1024);
  });

  it('writes a line larger than its buffer', async () => {
    output = new BatchedOutput({ fd, flushBytes: 1024, intervalMs: 60_000 });
    const big = `${'z'.repeat(100_000)}\n`;
    output.write('before\n');
    output.write(big);
    output.write('after\n');
    await flushed(output);
    expect(readFileSync(file, 'utf8')).toBe(`before\n${big}after\n`);
  });

  it('writes what waits synchronously from its process exit hook', () => {
    output = new BatchedOutput({ fd, flushBytes: 4096, intervalMs: 60_000 });
    expect(process.listeners('exit')).toContain(output.flushSync);
    output.write('last words\n');
    output.flushSync();
    expect(readFileSync(file, 'utf8')).toBe('last words\n');
  });

  it('drops and counts lines beyond its bound while output is stuck, then says how many', async () => {
    output = new BatchedOutput({ fd, flushBytes: 1024, maxBufferedBytes: 8 * 1024, intervalMs: 60_000 });
    const line = `${'w'.repeat(99)}\n`;
    // Written in one synchronous burst: the first batch's write is still on the thread pool.
    let accepted = 0;
    for (let i = 0; i < 200; i++) if (output.write(line)) accepted++;
    expect(accepted).toBeLessThan(200);
    await flushed(output);
    await flushed(output);
    const text = readFileSync(file, 'utf8');
    expect(text.split('\n').filter((l) => l === line.trimEnd())).toHaveLength(accepted);
    expect(text).toContain(`"dropped_lines":${200 - accepted}`);
  });
});
