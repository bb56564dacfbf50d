/**
 * The dashboard's in-memory log (LineBuffer): the last N lines, kept as bytes in a ring, live
 * subscribers, lines split across writes joined.
 */
import { describe, expect, it } from 'vitest';
import { LineBuffer } from '../../src/logging/line-buffer.js';

describe('gateway log line buffer', () => {
  it('keeps the last N lines, oldest first, text unchanged', () => {
    const buffer = new LineBuffer({ lines: 3 });
    for (const line of ['one', 'zwei 🚀', 'trois "quoted" \\ é', 'four']) buffer.write(`${line}\n`);
    expect(buffer.history()).toEqual(['zwei 🚀', 'trois "quoted" \\ é', 'four']);
  });

  it('joins a line written in pieces and splits several lines written at once', () => {
    const buffer = new LineBuffer({ lines: 10 });
    buffer.write('{"a":');
    buffer.write('1}\n{"b":2}\n{"c"');
    expect(buffer.history()).toEqual(['{"a":1}', '{"b":2}']);
    buffer.write(':3}\n');
    expect(buffer.history()).toEqual(['{"a":1}', '{"b":2}', '{"c":3}']);
  });

  it('tells subscribers each whole line as it arrives, until they unsubscribe', () => {
    const buffer = new LineBuffer({ lines: 10 });
    const seen: string[] = [];
    const unsubscribe = buffer.subscribe((line) => seen.push(line));
    buffer.write('first\nsec');
    buffer.write('ond\n');
    unsubscribe();
    buffer.write('third\n');
    expect(seen).toEqual(['first', 'second']);
  });

  it('keeps lines intact across many turns of its byte ring, dropping only the oldest', () => {
    const buffer = new LineBuffer({ lines: 50, bytes: 256 * 1024 });
    const lines = Array.from({ length: 20_000 }, (_, i) => `{"n":${i},"pad":"${'x'.repeat(i % 300)}"}`);
    for (const line of lines) buffer.write(`${line}\n`);
    expect(buffer.history()).toEqual(lines.slice(-50));
  });

  it('keeps fewer lines when they are long, never a torn one', () => {
    const buffer = new LineBuffer({ lines: 1000, bytes: 256 * 1024 });
    const lines = Array.from({ length: 300 }, (_, i) => `${i}:${'y'.repeat(4000)}`);
    for (const line of lines) buffer.write(`${line}\n`);
    const kept = buffer.history();
    expect(kept.length).toBeGreaterThan(10);
    expect(kept.length).toBeLessThan(300);
    expect(kept).toEqual(lines.slice(-kept.length));
  });

  it('cuts a huge line in the history but gives subscribers all of it', () => {
    const buffer = new LineBuffer({ lines: 10 });
    const huge = 'z'.repeat(100_000);
    const live: string[] = [];
    buffer.subscribe((line) => live.push(line));
    buffer.write(`${huge}\nafter\n`);
    const [kept, after] = buffer.history();
    expect(live).toEqual([huge, 'after']);
    expect(kept!.startsWith('z'.repeat(16 * 1024))).toBe(true);
    expect(kept!.endsWith('[cut]')).toBe(true);
    expect(after).toBe('after');
  });
});
