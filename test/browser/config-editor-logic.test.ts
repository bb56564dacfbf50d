/**
 * The config editor's logic without a browser: where the cursor is in the YAML structure
 * (web/src/lib/config-editor/yaml-context.ts), what llama-swap's schema offers there
 * (schema-walk.ts, with the llama-swap schema Gatehouse bundles), the disk/editor
 * diff, issue positions on CRLF files, and the editing commands written on CodeMirror's core.
 */
import { readFileSync } from 'node:fs';
import { EditorSelection, EditorState, type StateCommand, type Transaction } from '@codemirror/state';
import { describe, expect, it } from 'vitest';
import { diffConfig } from '../../web/src/lib/config-editor/diff.js';
import {
  history,
  indentLess,
  indentMore,
  insertNewlineAndIndent,
  redo,
  toggleComment,
  undo,
} from '../../web/src/lib/config-editor/editor-commands.js';
import { issueRange, toDiagnostics } from '../../web/src/lib/config-editor/issues.js';
import {
  propertiesAt,
  schemasAt,
  valuesAt,
  yamlScalar,
  type JsonSchema,
} from '../../web/src/lib/config-editor/schema-walk.js';
import { contextAt, ITEM, keyAt } from '../../web/src/lib/config-editor/yaml-context.js';
import { SCHEMA_PATH } from '../config-editor/helpers.js';

/** `‸` marks the cursor (not `|`: that is YAML's block scalar indicator). */
const at = (text: string, marker = '‸') => {
  const lines = text.split('\n');
  const lineIndex = lines.findIndex((l) => l.includes(marker));
  const column = lines[lineIndex]!.indexOf(marker);
  lines[lineIndex] = lines[lineIndex]!.replace(marker, '');
  return { lines, lineIndex, column };
};
const context = (text: string) => {
  const { lines, lineIndex, column } = at(text);
  return contextAt(lines, lineIndex, column);
};

describe('contextAt', () => {
  it('finds a top-level key being typed, with the keys already there', () => {
    expect(context('healthCheckTimeout: 60\nmodels:\n  a:\n    cmd: x\nlogLe‸')).toEqual({
      kind: 'key',
      path: [],
      prefix: 'logLe',
      from: 0,
      siblings: ['models', 'healthCheckTimeout'],
    });
  });

  it('finds a key inside a model, whatever the indentation width', () => {
    expect(context('models:\n  qwen:\n    cmd: x\n    ali‸\n  llama:\n    cmd: y')).toMatchObject({
      kind: 'key',
      path: ['models', 'qwen'],
      prefix: 'ali',
      siblings: ['cmd'],
    });
    expect(context('models:\n    qwen:\n        cmd: x\n        ‸')).toMatchObject({
      kind: 'key',
      path: ['models', 'qwen'],
      prefix: '',
      siblings: ['cmd'],
    });
  });

  it('finds a value being typed after "key: "', () => {
    expect(context('logLevel: d‸')).toEqual({ kind: 'value', path: [], key: 'logLevel', prefix: 'd', from: 10 });
    expect(context('models:\n  a:\n    unlisted: ‸')).toEqual({
      kind: 'value',
      path: ['models', 'a'],
      key: 'unlisted',
      prefix: '',
      from: 14,
    });
  });

  it('walks into sequences, block and compact', () => {
    expect(context('hooks:\n  on_startup:\n    preload:\n      - ‸')).toMatchObject({
      kind: 'key',
      path: ['hooks', 'on_startup', 'preload', ITEM],
    });
    expect(context('groups:\n  g:\n    members:\n    - a\n    - ‸')).toMatchObject({
      kind: 'key',
      path: ['groups', 'g', 'members', ITEM],
    });
    expect(context('list:\n- name: a\n  ‸')).toMatchObject({ kind: 'key', path: ['list', ITEM], siblings: ['name'] });
  });

  it('is nothing inside a block scalar, a comment or a quoted or flow value', () => {
    expect(context('models:\n  a:\n    cmd: |\n      llama-server‸')).toEqual({ kind: 'none' });
    expect(context('# a comm‸')).toEqual({ kind: 'none' });
    expect(context('models:\n  a:\n    aliases: [x, ‸')).toEqual({ kind: 'none' });
    expect(context('logLevel: "in‸')).toEqual({ kind: 'none' });
  });

  it('ignores sibling models when looking for the parent', () => {
    expect(context('models:\n  a:\n    cmd: x\n    ttl: 5\n  b:\n    cmd: y\n    ‸')).toMatchObject({
      path: ['models', 'b'],
      siblings: ['cmd'],
    });
  });
});

describe('keyAt', () => {
  it('gives the full path of the key under the pointer, and nothing elsewhere', () => {
    const { lines } = at('models:\n  qwen:\n    cmd: x‸');
    expect(keyAt(lines, 2, 5)).toEqual({ path: ['models', 'qwen', 'cmd'], from: 4, to: 7 });
    expect(keyAt(lines, 2, 9)).toBeNull();
    expect(keyAt(['"quoted key": 1'], 0, 3)).toEqual({ path: ['quoted key'], from: 0, to: 12 });
  });
});

describe("walking llama-swap's schema", () => {
  const schema = JSON.parse(readFileSync(SCHEMA_PATH(), 'utf8')) as JsonSchema;

  it('lists top-level and per-model properties with their docs', () => {
    const top = propertiesAt(schema, []);
    expect(top.map((p) => p.name)).toEqual(
      expect.arrayContaining(['models', 'logLevel', 'healthCheckTimeout', 'groups', 'peers', 'routing']),
    );
    expect(top.find((p) => p.name === 'logLevel')).toMatchObject({
      type: 'string',
      enumValues: ['debug', 'info', 'warn', 'error'],
      defaultValue: 'info',
    });
    const model = propertiesAt(schema, ['models', 'any-model-id']);
    expect(model.find((p) => p.name === 'cmd')).toMatchObject({ required: true, type: 'string' });
    expect(model.find((p) => p.name === 'cmd')?.description).toMatch(/Command to run/);
  });

  it('offers enum values and booleans, marking the default', () => {
    expect(valuesAt(schema, ['logLevel'])).toEqual([
      { label: 'debug', detail: null },
      { label: 'info', detail: 'default' },
      { label: 'warn', detail: null },
      { label: 'error', detail: null },
    ]);
    expect(valuesAt(schema, ['models', 'm', 'unlisted']).map((v) => v.label)).toEqual(['true', 'false']);
  });

  it('follows $ref into the definitions', () => {
    expect(schemasAt(schema, ['models', 'm', 'macros']).length).toBeGreaterThan(0);
    expect(schemasAt(schema, ['no-such-key', 'deeper'])).toEqual([]);
  });

  it('quotes values YAML would read as something else', () => {
    expect(yamlScalar('info')).toBe('info');
    expect(yamlScalar('yes')).toBe('"yes"');
    expect(yamlScalar('a: b')).toBe('"a: b"');
    expect(yamlScalar(true)).toBe('true');
  });
});

describe('diffConfig', () => {
  it('numbers both sides and counts lines', () => {
    const diff = diffConfig('a: 1\nb: 2\nc: 3\n', 'a: 1\nb: 20\nc: 3\nd: 4\n');
    expect(diff.rows.map((r) => [r.kind, r.oldLine, r.newLine, r.text])).toEqual([
      ['hunk', null, null, '@@ -1,3 +1,4 @@'],
      ['context', 1, 1, 'a: 1'],
      ['removed', 2, null, 'b: 2'],
      ['added', null, 2, 'b: 20'],
      ['context', 3, 3, 'c: 3'],
      ['added', null, 4, 'd: 4'],
    ]);
    expect([diff.removed, diff.added]).toEqual([1, 2]);
    expect(diff.unified).toContain('+d: 4');
  });
});

describe('issue positions', () => {
  it('come from line and column, so a CRLF file lines up', () => {
    const text = 'a: 1\r\nb: [x\r\n';
    const state = EditorState.create({ doc: text, extensions: EditorState.lineSeparator.of('\r\n') });
    expect(state.sliceDoc()).toBe(text);
    const range = issueRange(state.doc, { line: 2, column: 4, endLine: 2, endColumn: 6 });
    expect(state.doc.sliceString(range!.from, range!.to)).toBe('[x');
    expect(issueRange(state.doc, { line: null, column: null, endLine: null, endColumn: null })).toBeNull();
  });

  it('never make a zero-width mark', () => {
    const state = EditorState.create({ doc: 'a: [x' });
    expect(issueRange(state.doc, { line: 1, column: 6, endLine: null, endColumn: null })).toEqual({ from: 4, to: 5 });
    expect(issueRange(state.doc, { line: 1, column: 1, endLine: null, endColumn: null })).toEqual({ from: 0, to: 2 });
  });

  it('become errors and warnings, sorted by position', () => {
    const state = EditorState.create({ doc: 'a: 1\nb: 2\n' });
    const issue = (line: number, kind: 'yaml' | 'loader') => ({
      kind,
      message: 'm',
      path: '/b',
      line,
      column: 1,
      endLine: null,
      endColumn: null,
      from: null,
      to: null,
    });
    expect(
      toDiagnostics(state.doc, [issue(2, 'yaml')], [issue(1, 'loader')]).map((d) => [
        d.severity,
        d.from,
        d.source,
        d.message,
      ]),
    ).toEqual([
      ['warning', 0, 'llama-swap loader', 'm (at /b)'],
      ['error', 5, 'YAML', 'm (at /b)'],
    ]);
  });
});

describe('editing commands', () => {
  function run(command: StateCommand, state: EditorState): EditorState {
    let next = state;
    command({ state, dispatch: (tr: Transaction) => (next = tr.state) });
    return next;
  }
  const stateAt = (text: string, extensions = history()) => {
    const { lines, lineIndex, column } = at(text);
    const doc = lines.join('\n');
    const pos = lines.slice(0, lineIndex).reduce((n, l) => n + l.length + 1, 0) + column;
    return EditorState.create({ doc, selection: EditorSelection.cursor(pos), extensions });
  };
  const withCursor = (state: EditorState) => {
    const text = state.doc.toString();
    const pos = state.selection.main.head;
    return `${text.slice(0, pos)}‸${text.slice(pos)}`;
  };

  it('keeps YAML indentation on Enter', () => {
    expect(withCursor(run(insertNewlineAndIndent, stateAt('models:‸')))).toBe('models:\n  ‸');
    expect(withCursor(run(insertNewlineAndIndent, stateAt('  a:\n    cmd: x‸')))).toBe('  a:\n    cmd: x\n    ‸');
    expect(withCursor(run(insertNewlineAndIndent, stateAt('list:\n  - name: a‸')))).toBe('list:\n  - name: a\n    ‸');
    expect(withCursor(run(insertNewlineAndIndent, stateAt('  cmd: |   ‸')))).toBe('  cmd: |\n    ‸');
    const crlf = run(
      insertNewlineAndIndent,
      EditorState.create({
        doc: 'models:',
        selection: EditorSelection.cursor(7),
        extensions: EditorState.lineSeparator.of('\r\n'),
      }),
    );
    expect(crlf.sliceDoc()).toBe('models:\r\n  ');
    expect(crlf.selection.main.head).toBe(crlf.doc.length);
  });

  it('indents with spaces and back', () => {
    expect(withCursor(run(indentMore, stateAt('a‸')))).toBe('a ‸');
    const selected = EditorState.create({ doc: 'a: 1\nb: 2', selection: EditorSelection.range(0, 9) });
    expect(run(indentMore, selected).doc.toString()).toBe('  a: 1\n  b: 2');
    expect(run(indentLess, run(indentMore, selected)).doc.toString()).toBe('a: 1\nb: 2');
  });

  it('comments lines out and back in', () => {
    const state = EditorState.create({ doc: 'a: 1\n  b: 2', selection: EditorSelection.range(0, 11) });
    const commented = run(toggleComment, state);
    expect(commented.doc.toString()).toBe('# a: 1\n#   b: 2');
    expect(
      run(
        toggleComment,
        EditorState.create({
          doc: commented.doc.toString(),
          selection: EditorSelection.range(0, commented.doc.length),
        }),
      ).doc.toString(),
    ).toBe('a: 1\n  b: 2');
  });

  it('undoes typing as one step and redoes it', () => {
    let state = stateAt('a: ‸');
    for (const ch of 'info') {
      const pos = state.selection.main.head;
      state = state.update({
        changes: { from: pos, insert: ch },
        selection: EditorSelection.cursor(pos + 1),
        userEvent: 'input.type',
      }).state;
    }
    state = run(insertNewlineAndIndent, state);
    expect(state.doc.toString()).toBe('a: info\n');
    state = run(undo, state);
    expect(state.doc.toString()).toBe('a: info');
    state = run(undo, state);
    expect(withCursor(state)).toBe('a: ‸');
    expect(run(undo, state)).toBe(state);
    state = run(redo, run(redo, state));
    expect(state.doc.toString()).toBe('a: info\n');
  });
});
