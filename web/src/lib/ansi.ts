/**
 * A small SGR (Select Graphic Rendition) parser: turns terminal-coloured log text into
 * segments with CSS classes, so the log view renders colours without ever handing raw text to
 * innerHTML. Colour state carries across lines, as in a terminal. Other escape sequences
 * (cursor moves, clears, OSC titles) are dropped.
 */

export interface Segment {
  text: string;
  /** Space-separated classes: `fg-N`/`bg-N` (N = 0..15), `b`, `dim`, `i`, `u`, `s`. */
  classes: string;
  /** Inline colours for 256-colour and true-colour codes (no class can name them). */
  style: string;
}

interface Style {
  fg: number | string | null;
  bg: number | string | null;
  bold: boolean;
  dim: boolean;
  italic: boolean;
  underline: boolean;
  strike: boolean;
  inverse: boolean;
}

const plain = (): Style => ({
  fg: null,
  bg: null,
  bold: false,
  dim: false,
  italic: false,
  underline: false,
  strike: false,
  inverse: false,
});

// CSI ... final byte, OSC ... BEL/ST, and two-byte escapes. The capture keeps SGR parameters.
// eslint-disable-next-line no-control-regex
const ESCAPE = /\u001b(?:\[([0-?]*)([ -/]*)([@-~])|\][^\u0007\u001b]*(?:\u0007|\u001b\\)?|[@-Z\\-_])/g;
// eslint-disable-next-line no-control-regex
const CONTROL = /[\u0000-\u0008\u000b-\u001f\u007f]/g;

export class AnsiParser {
  private style: Style = plain();

  reset(): void {
    this.style = plain();
  }

  /**
   * Segments for one line (without its newline). With `commit: false` the colour state is
   * left as it was, for a partial line that will be parsed again when it is complete.
   */
  parseLine(line: string, commit = true): Segment[] {
    const saved = this.style;
    if (!commit) this.style = { ...saved };
    const segments: Segment[] = [];
    const text = overwriteCarriageReturns(line);
    let last = 0;
    ESCAPE.lastIndex = 0;
    for (let match = ESCAPE.exec(text); match !== null; match = ESCAPE.exec(text)) {
      this.push(segments, text.slice(last, match.index));
      last = ESCAPE.lastIndex;
      if (match[3] === 'm' && match[2] === '') this.apply(match[1] ?? '');
    }
    this.push(segments, text.slice(last));
    if (!commit) this.style = saved;
    return segments;
  }

  private push(segments: Segment[], raw: string): void {
    const text = raw.replace(CONTROL, '');
    if (text === '') return;
    const { classes, style } = render(this.style);
    const previous = segments[segments.length - 1];
    if (previous && previous.classes === classes && previous.style === style) previous.text += text;
    else segments.push({ text, classes, style });
  }

  private apply(params: string): void {
    const codes = params === '' ? [0] : params.split(/[;:]/).map((p) => (p === '' ? 0 : Number(p)));
    const s = { ...this.style };
    for (let i = 0; i < codes.length; i++) {
      const code = codes[i] ?? 0;
      if (code === 0) Object.assign(s, plain());
      else if (code === 1) s.bold = true;
      else if (code === 2) s.dim = true;
      else if (code === 3) s.italic = true;
      else if (code === 4) s.underline = true;
      else if (code === 7) s.inverse = true;
      else if (code === 9) s.strike = true;
      else if (code === 22) s.bold = s.dim = false;
      else if (code === 23) s.italic = false;
      else if (code === 24) s.underline = false;
      else if (code === 27) s.inverse = false;
      else if (code === 29) s.strike = false;
      else if (code >= 30 && code <= 37) s.fg = code - 30;
      else if (code === 39) s.fg = null;
      else if (code >= 40 && code <= 47) s.bg = code - 40;
      else if (code === 49) s.bg = null;
      else if (code >= 90 && code <= 97) s.fg = code - 90 + 8;
      else if (code >= 100 && code <= 107) s.bg = code - 100 + 8;
      else if (code === 38 || code === 48) {
        const mode = codes[i + 1];
        let colour: number | string | null;
        if (mode === 5 && codes[i + 2] !== undefined) {
          colour = xterm256(codes[i + 2] ?? 0);
          i += 2;
        } else if (mode === 2 && codes[i + 4] !== undefined) {
          colour = `rgb(${clamp(codes[i + 2])}, ${clamp(codes[i + 3])}, ${clamp(codes[i + 4])})`;
          i += 4;
        } else {
          break; // malformed: ignore the rest, like terminals do
        }
        if (code === 38) s.fg = colour;
        else s.bg = colour;
      }
    }
    this.style = s;
  }
}

function overwriteCarriageReturns(line: string): string {
  // A progress bar redraws with \r: keep what a terminal would show last.
  const cr = line.lastIndexOf('\r');
  if (cr < 0) return line;
  const after = line.slice(cr + 1);
  return after === '' ? line.slice(0, cr).slice(line.slice(0, cr).lastIndexOf('\r') + 1) : after;
}

function clamp(value: number | undefined): number {
  return Math.max(0, Math.min(255, Math.trunc(value ?? 0)));
}

/** 0..15 stay palette indices (themed by CSS); the rest become rgb(). */
function xterm256(n: number): number | string {
  const index = clamp(n);
  if (index < 16) return index;
  if (index >= 232) {
    const level = 8 + (index - 232) * 10;
    return `rgb(${level}, ${level}, ${level})`;
  }
  const cube = index - 16;
  const steps = [0, 95, 135, 175, 215, 255];
  return `rgb(${steps[Math.floor(cube / 36)]}, ${steps[Math.floor(cube / 6) % 6]}, ${steps[cube % 6]})`;
}

function render(s: Style): { classes: string; style: string } {
  const fg = s.inverse ? (s.bg ?? 'inverse-fg') : s.fg;
  const bg = s.inverse ? (s.fg ?? 'inverse-bg') : s.bg;
  const classes: string[] = [];
  const styles: string[] = [];
  if (typeof fg === 'number') classes.push(`fg-${fg}`);
  else if (fg === 'inverse-fg') classes.push('fg-inverse');
  else if (fg !== null) styles.push(`color: ${fg}`);
  if (typeof bg === 'number') classes.push(`bg-${bg}`);
  else if (bg === 'inverse-bg') classes.push('bg-inverse');
  else if (bg !== null) styles.push(`background-color: ${bg}`);
  if (s.bold) classes.push('b');
  if (s.dim) classes.push('dim');
  if (s.italic) classes.push('i');
  if (s.underline) classes.push('u');
  if (s.strike) classes.push('s');
  return { classes: classes.join(' '), style: styles.join('; ') };
}
