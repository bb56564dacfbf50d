/**
 * Where in the YAML structure a cursor is, from indentation alone. A full parse fails on
 * exactly the half-typed text completion runs on, so this reads lines the way a person does:
 * a key at column c belongs to the nearest line above that starts something left of c.
 * Handles block mappings, block sequences ("- "), compact sequences (items at their key's
 * column) and block scalars (`cmd: |`), which are text, not structure. Flow collections
 * (`[a, b]`, `{a: 1}`) are not walked into.
 *
 * Lines are given without line breaks (CodeMirror's lines); columns are 0-based.
 */

/** A mapping key, or a sequence item (any index: the schema has one `items`). */
export type PathSegment = string | number;
export const ITEM = 0;

interface Entry {
  kind: 'item' | 'key';
  col: number;
  /** For keys: the key text, unquoted. */
  key?: string;
  /** For keys: the end column of the key token. */
  keyEnd?: number;
  /** For keys: text after `key:` (without comment), trimmed. */
  value?: string;
}

interface ParsedLine {
  blank: boolean;
  /** Left to right: each `- ` marker, then the key, if any. */
  entries: Entry[];
  /** Column of the first thing on the line (a dash, a key or a scalar). */
  indent: number;
}

const KEY = /^("(?:[^"\\]|\\.)*"|'(?:[^']|'')*'|[^\s#"'{}[\],&*!|>%@`][^#]*?)[ \t]*:(?=[ \t]|$)/;

function parseLine(text: string): ParsedLine {
  let col = 0;
  while (text[col] === ' ') col++;
  if (col >= text.length || text[col] === '#') return { blank: true, entries: [], indent: col };
  const indent = col;
  const entries: Entry[] = [];
  while (text[col] === '-' && (col + 1 === text.length || text[col + 1] === ' ')) {
    entries.push({ kind: 'item', col });
    col++;
    while (text[col] === ' ') col++;
  }
  const rest = text.slice(col);
  const match = KEY.exec(rest);
  if (match) {
    const raw = match[1]!;
    const value = stripComment(rest.slice(match[0].length)).trim();
    entries.push({ kind: 'key', col, key: unquote(raw.trimEnd()), keyEnd: col + raw.trimEnd().length, value });
  }
  return { blank: false, entries, indent };
}

function unquote(key: string): string {
  if (key.length >= 2 && key.startsWith('"') && key.endsWith('"')) {
    try {
      return JSON.parse(key) as string;
    } catch {
      return key.slice(1, -1);
    }
  }
  if (key.length >= 2 && key.startsWith("'") && key.endsWith("'")) return key.slice(1, -1).replace(/''/g, "'");
  return key;
}

/** Drops a ` # comment` (a `#` after whitespace, outside quotes). */
function stripComment(text: string): string {
  let quote: string | null = null;
  for (let i = 0; i < text.length; i++) {
    const ch = text[i];
    if (quote) {
      if (ch === quote) quote = null;
    } else if (ch === '"' || ch === "'") quote = ch;
    else if (ch === '#' && (i === 0 || text[i - 1] === ' ' || text[i - 1] === '\t')) return text.slice(0, i);
  }
  return text;
}

const isBlockScalar = (value: string | undefined) => value !== undefined && /^[|>][-+0-9]*$/.test(value);

interface Ancestry {
  /** Root first. */
  path: PathSegment[];
  /** Index of the line holding the innermost parent (-1: the document). */
  parentLine: number;
  /** The parent is a block scalar: the node is text inside it, not structure. */
  inScalar: boolean;
}

/**
 * The ancestors of a node starting at column `col` on line `lineIndex` (a key, or an item
 * when `asItem`), found by walking up the lines above.
 */
function ancestry(lines: readonly string[], lineIndex: number, col: number, asItem: boolean): Ancestry {
  const path: PathSegment[] = [];
  let target = col;
  let item = asItem;
  let parentLine = -1;
  for (let i = lineIndex - 1; i >= 0; i--) {
    // A key at column 0 is top-level; an item at column 0 may still belong to a key at column 0.
    if (target === 0 && !item) break;
    const line = parseLine(lines[i]!);
    if (line.blank) continue;
    // The innermost entry left of the node; an item may also sit at its key's own column
    // (compact sequences: `models:` then `- a` below it, both at column 0).
    let at = -1;
    for (let e = line.entries.length - 1; e >= 0; e--) {
      const entry = line.entries[e]!;
      if (entry.col < target || (item && entry.kind === 'key' && entry.col === target && entry.value === '')) {
        at = e;
        break;
      }
    }
    if (at === -1) {
      // Nothing left of the node: a sibling or something deeper. A bare scalar further left
      // (a multi-line plain value) ends the search.
      if (line.indent < target && line.entries.length === 0) break;
      continue;
    }
    const parent = line.entries[at]!;
    if (parentLine === -1) {
      parentLine = i;
      if (parent.kind === 'key' && isBlockScalar(parent.value)) return { path: [], parentLine: i, inScalar: true };
    }
    for (let e = at; e >= 0; e--) {
      const entry = line.entries[e]!;
      path.unshift(entry.kind === 'key' ? entry.key! : ITEM);
    }
    const outer = line.entries[0]!;
    target = outer.col;
    item = outer.kind === 'item';
  }
  return { path, parentLine, inScalar: false };
}

export type YamlContext =
  | {
      kind: 'key';
      /** The mapping the key is typed into. */
      path: PathSegment[];
      /** What is typed of the key so far (from `from` to the cursor). */
      prefix: string;
      /** Column where the key starts. */
      from: number;
      /** Other keys already in the same mapping. */
      siblings: string[];
    }
  | {
      kind: 'value';
      /** The mapping holding the key. */
      path: PathSegment[];
      key: string;
      prefix: string;
      from: number;
    }
  | { kind: 'none' };

/** What the cursor at (`lineIndex`, `column`) is typing: a key of some mapping, a value, or neither. */
export function contextAt(lines: readonly string[], lineIndex: number, column: number): YamlContext {
  const text = lines[lineIndex] ?? '';
  const before = text.slice(0, column);
  let col = 0;
  while (before[col] === ' ') col++;
  const dashes: number[] = [];
  while (before[col] === '-' && before[col + 1] === ' ') {
    dashes.push(col);
    col++;
    while (before[col] === ' ') col++;
  }
  const rest = before.slice(col);
  if (rest.includes('#') && /(^|\s)#/.test(rest)) return { kind: 'none' };

  const keyMatch = KEY.exec(rest);
  const container = (keyCol: number): Ancestry => {
    if (dashes.length === 0) return ancestry(lines, lineIndex, keyCol, false);
    const outer = ancestry(lines, lineIndex, dashes[0]!, true);
    return { ...outer, path: [...outer.path, ...dashes.map(() => ITEM)], parentLine: lineIndex };
  };

  if (keyMatch) {
    const valueText = rest.slice(keyMatch[0].length).replace(/^[ \t]+/, '');
    if (/^["']|[[{]/.test(valueText)) return { kind: 'none' };
    const parent = container(col);
    if (parent.inScalar) return { kind: 'none' };
    return {
      kind: 'value',
      path: parent.path,
      key: unquote(keyMatch[1]!.trimEnd()),
      prefix: valueText,
      from: column - valueText.length,
    };
  }
  if (!/^[^\s:#"'{}[\],&*!|>%@`]*$/.test(rest)) return { kind: 'none' };
  const parent = container(col);
  if (parent.inScalar) return { kind: 'none' };
  return {
    kind: 'key',
    path: parent.path,
    prefix: rest,
    from: col,
    siblings: siblingKeys(lines, lineIndex, col, parent.parentLine),
  };
}

/** Keys at column `col` in the same mapping as line `lineIndex`, whose parent is on `parentLine`. */
function siblingKeys(lines: readonly string[], lineIndex: number, col: number, parentLine: number): string[] {
  const keys: string[] = [];
  const keyOn = (i: number) => parseLine(lines[i]!).entries.find((e) => e.kind === 'key' && e.col === col)?.key;
  const walk = (from: number, step: 1 | -1, stop: number) => {
    for (let i = from; step === 1 ? i < stop : i > stop; i += step) {
      const line = parseLine(lines[i]!);
      if (line.blank) continue;
      if (line.indent < col) break;
      const key = keyOn(i);
      if (key !== undefined) keys.push(key);
    }
  };
  walk(lineIndex + 1, 1, lines.length);
  walk(lineIndex - 1, -1, parentLine);
  // `- name: a` with the cursor on a line below: `name` shares the item's mapping.
  if (parentLine >= 0 && parentLine !== lineIndex) {
    const key = keyOn(parentLine);
    if (key !== undefined) keys.push(key);
  }
  return keys;
}

/** The key under column `column` of line `lineIndex`, with its full path (for hover docs). */
export function keyAt(
  lines: readonly string[],
  lineIndex: number,
  column: number,
): { path: PathSegment[]; from: number; to: number } | null {
  const line = parseLine(lines[lineIndex] ?? '');
  const index = line.entries.findIndex((e) => e.kind === 'key' && column >= e.col && column <= e.keyEnd!);
  if (index === -1) return null;
  const entry = line.entries[index]!;
  const dashes = line.entries.slice(0, index);
  let path: PathSegment[];
  if (dashes.length > 0) {
    const outer = ancestry(lines, lineIndex, dashes[0]!.col, true);
    if (outer.inScalar) return null;
    path = [...outer.path, ...dashes.map(() => ITEM)];
  } else {
    const parent = ancestry(lines, lineIndex, entry.col, false);
    if (parent.inScalar) return null;
    path = parent.path;
  }
  return { path: [...path, entry.key!], from: entry.col, to: entry.keyEnd! };
}
