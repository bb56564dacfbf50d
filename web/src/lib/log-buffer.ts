/**
 * The log view's memory: complete lines (parsed once into coloured segments) plus the
 * unfinished last line, bounded to the newest `limit` lines so a chatty model cannot grow the
 * page without end. Text arrives in arbitrary chunks (not line-aligned).
 */
import { AnsiParser, type Segment } from './ansi.js';

export interface LogLine {
  id: number;
  /** Plain text (escapes removed), for filtering. */
  text: string;
  segments: Segment[];
  /** Set on lines the viewer inserted itself (reconnect markers). */
  marker?: 'reconnect' | 'notice';
  /** Why a marker was inserted (the server's reason), for a tooltip. */
  detail?: string;
  /** How many times the same marker arrived in a row (a llama-swap that stays down sends one per retry). */
  repeats?: number;
}

export class LogBuffer {
  private lines: LogLine[] = [];
  private pending = '';
  private nextId = 1;
  private readonly parser = new AnsiParser();
  /** Lines dropped from the top since the last clear. */
  dropped = 0;

  /** `format` rewrites each complete line before it is parsed (e.g. Gatehouse's JSON lines into text). */
  constructor(
    readonly limit = 5000,
    private readonly format: (line: string) => string = (line) => line,
  ) {}

  append(text: string): void {
    if (text === '') return;
    const parts = (this.pending + text).split('\n');
    this.pending = parts.pop() ?? '';
    for (const part of parts) this.pushLine(part.endsWith('\r') ? part.slice(0, -1) : part);
    this.trim();
  }

  /** A line of the viewer's own (the pending partial line is finished first). */
  mark(text: string, detail?: string, kind: 'reconnect' | 'notice' = 'reconnect'): void {
    this.flushPending();
    const last = this.lines[this.lines.length - 1];
    if (last?.marker === kind && last.text === text) {
      // Replaced, not mutated: the view compares lines by identity.
      this.lines[this.lines.length - 1] = {
        ...last,
        id: this.nextId++,
        detail: detail ?? last.detail,
        repeats: (last.repeats ?? 1) + 1,
      };
      return;
    }
    this.lines.push({ id: this.nextId++, text, segments: [{ text, classes: '', style: '' }], marker: kind, detail });
    this.trim();
  }

  clear(): void {
    this.lines = [];
    this.pending = '';
    this.dropped = 0;
    this.parser.reset();
  }

  /** The newest `limit` lines, the unfinished one last. A fresh array each call. */
  snapshot(): LogLine[] {
    const out = this.lines.slice(-this.limit);
    if (this.pending !== '') {
      const segments = this.parser.parseLine(this.pending, false);
      // The pending line keeps one id until it completes, so a keyed list does not churn.
      out.push({ id: this.nextId, text: plainText(segments), segments });
    }
    return out;
  }

  get size(): number {
    return Math.min(this.lines.length, this.limit) + (this.pending === '' ? 0 : 1);
  }

  private flushPending(): void {
    if (this.pending === '') return;
    this.pushLine(this.pending);
    this.pending = '';
  }

  private pushLine(raw: string): void {
    const segments = this.parser.parseLine(this.format(raw));
    this.lines.push({ id: this.nextId++, text: plainText(segments), segments });
  }

  private trim(): void {
    // Trim in batches: one splice per ~10 % overflow instead of one per line.
    const max = this.limit + Math.max(1, Math.floor(this.limit / 10));
    if (this.lines.length > max) {
      const drop = this.lines.length - this.limit;
      this.lines.splice(0, drop);
      this.dropped += drop;
    }
  }
}

function plainText(segments: Segment[]): string {
  let text = '';
  for (const segment of segments) text += segment.text;
  return text;
}
