/**
 * The dashboard's log logic without a browser: the SGR parser (web/src/lib/ansi.ts) and the
 * bounded line buffer fed with unaligned chunks (web/src/lib/log-buffer.ts).
 */
import { describe, expect, it } from 'vitest';
import { AnsiParser } from '../../web/src/lib/ansi.js';
import { LogBuffer } from '../../web/src/lib/log-buffer.js';

const ESC = '\u001b';

describe('AnsiParser', () => {
  it('turns SGR colours and styles into classes and drops the escapes', () => {
    const parser = new AnsiParser();
    expect(
      parser.parseLine(`${ESC}[2m[21:40:01]${ESC}[0m ${ESC}[31;1mERROR${ESC}[0m out of ${ESC}[4mmemory${ESC}[24m`),
    ).toEqual([
      { text: '[21:40:01]', classes: 'dim', style: '' },
      { text: ' ', classes: '', style: '' },
      { text: 'ERROR', classes: 'fg-1 b', style: '' },
      { text: ' out of ', classes: '', style: '' },
      { text: 'memory', classes: 'u', style: '' },
    ]);
  });

  it('maps bright, 256-colour and true-colour codes', () => {
    const parser = new AnsiParser();
    expect(parser.parseLine(`${ESC}[92ma${ESC}[38;5;9mb${ESC}[38;5;208mc${ESC}[38;2;1;2;3md${ESC}[48;5;232me`)).toEqual(
      [
        { text: 'a', classes: 'fg-10', style: '' },
        { text: 'b', classes: 'fg-9', style: '' },
        { text: 'c', classes: '', style: 'color: rgb(255, 135, 0)' },
        { text: 'd', classes: '', style: 'color: rgb(1, 2, 3)' },
        { text: 'e', classes: '', style: 'color: rgb(1, 2, 3); background-color: rgb(8, 8, 8)' },
      ],
    );
  });

  it('carries colour across lines, as a terminal does, until reset', () => {
    const parser = new AnsiParser();
    parser.parseLine(`${ESC}[33mwarning starts`);
    expect(parser.parseLine('and goes on')).toEqual([{ text: 'and goes on', classes: 'fg-3', style: '' }]);
    expect(parser.parseLine(`${ESC}[mplain`)).toEqual([{ text: 'plain', classes: '', style: '' }]);
  });

  it('drops cursor moves, clears, OSC titles and control characters; keeps what a \\r redraw leaves', () => {
    const parser = new AnsiParser();
    expect(parser.parseLine(`${ESC}]0;title${ESC}\\${ESC}[2K${ESC}[1Gloading\u0007 10%\rloading 100%`)).toEqual([
      { text: 'loading 100%', classes: '', style: '' },
    ]);
    expect(parser.parseLine(`tab\there${ESC}[?25l`)).toEqual([{ text: 'tab\there', classes: '', style: '' }]);
  });

  it('leaves its state alone when asked to parse a partial line', () => {
    const parser = new AnsiParser();
    parser.parseLine(`${ESC}[32mgreen, not finished`, false);
    expect(parser.parseLine('next')).toEqual([{ text: 'next', classes: '', style: '' }]);
  });
});

describe('LogBuffer', () => {
  it('joins text split anywhere, even inside an escape, into whole lines', () => {
    const text = `one\r\n${ESC}[31mtwo${ESC}[0m\nthree\n`;
    for (let cut = 0; cut <= text.length; cut++) {
      const buffer = new LogBuffer();
      buffer.append(text.slice(0, cut));
      buffer.append(text.slice(cut));
      expect(
        buffer.snapshot().map((line) => line.text),
        `cut at ${cut}`,
      ).toEqual(['one', 'two', 'three']);
    }
  });

  it('shows the unfinished last line, with a stable id until it completes', () => {
    const buffer = new LogBuffer();
    buffer.append('loading model ...');
    const first = buffer.snapshot();
    buffer.append('....');
    const second = buffer.snapshot();
    expect(second.map((l) => l.text)).toEqual(['loading model .......']);
    expect(second[0]?.id).toBe(first[0]?.id);
    buffer.append(' done\nnext\n');
    expect(buffer.snapshot().map((l) => l.text)).toEqual(['loading model ....... done', 'next']);
  });

  it('keeps only the newest lines', () => {
    const buffer = new LogBuffer(100);
    for (let i = 0; i < 1000; i++) buffer.append(`line ${i}\n`);
    const lines = buffer.snapshot();
    expect(lines).toHaveLength(100);
    expect(lines[0]?.text).toBe('line 900');
    expect(lines[99]?.text).toBe('line 999');
    expect(buffer.size).toBe(100);
  });

  it('inserts markers after the pending line, and folds a run of the same marker into one', () => {
    const buffer = new LogBuffer();
    buffer.append('half a line');
    buffer.mark('— reconnected —', 'config reload');
    buffer.mark('— reconnected —', 'still down');
    buffer.append('after\n');
    const lines = buffer.snapshot();
    expect(lines.map((l) => [l.text, l.marker, l.repeats, l.detail])).toEqual([
      ['half a line', undefined, undefined, undefined],
      ['— reconnected —', 'reconnect', 2, 'still down'],
      ['after', undefined, undefined, undefined],
    ]);
  });
});
