/**
 * The editing commands the config editor needs, on CodeMirror's core packages alone: undo/redo
 * history, Enter that keeps YAML indentation, Tab/Shift-Tab that indent with spaces (YAML
 * forbids tabs), select all, toggle comment, and Escape-then-Tab to leave the editor by
 * keyboard. Written before `@codemirror/commands` was a dependency; moving onto it, keeping the YAML
 * Enter rules, is a known follow-up (docs/architecture.md).
 */
import {
  Annotation,
  ChangeSet,
  EditorSelection,
  EditorState,
  StateField,
  Transaction,
  type ChangeSpec,
  type Extension,
  type StateCommand,
} from '@codemirror/state';
import { keymap, type KeyBinding } from '@codemirror/view';

export const INDENT = '  ';

// ---- history ----------------------------------------------------------------------------

interface HistoryEntry {
  /** Applied to the document after the change, gives the document before it. */
  changes: ChangeSet;
  /** The selection to restore with it. */
  selection: EditorSelection;
  time: number;
  userEvent: string | undefined;
}

interface HistoryState {
  done: readonly HistoryEntry[];
  undone: readonly HistoryEntry[];
}

const fromHistory = Annotation.define<'undo' | 'redo'>();
/** Typing within this long is undone as one step (a word, not a letter). */
const GROUP_MS = 600;
const MAX_DEPTH = 300;

const historyField = StateField.define<HistoryState>({
  create: () => ({ done: [], undone: [] }),
  update(value, tr) {
    const travelled = tr.annotation(fromHistory);
    if (travelled) {
      // The transaction applied the top entry of one stack; its reverse goes on the other.
      const reverse: HistoryEntry = {
        changes: tr.changes.invert(tr.startState.doc),
        selection: tr.startState.selection,
        time: 0,
        userEvent: undefined,
      };
      return travelled === 'undo'
        ? { done: value.done.slice(0, -1), undone: [...value.undone, reverse] }
        : { done: [...value.done, reverse], undone: value.undone.slice(0, -1) };
    }
    if (!tr.docChanged) return value;
    // A replaced document (reload from disk) starts a new history.
    if (tr.annotation(Transaction.addToHistory) === false) return { done: [], undone: [] };
    const userEvent = tr.annotation(Transaction.userEvent);
    const time = tr.annotation(Transaction.time) ?? Date.now();
    const inverse = tr.changes.invert(tr.startState.doc);
    const last = value.done[value.done.length - 1];
    if (
      last &&
      userEvent !== undefined &&
      last.userEvent === userEvent &&
      /^(input\.type|delete\.backward|delete\.forward)/.test(userEvent) &&
      time - last.time < GROUP_MS
    ) {
      return {
        done: [
          ...value.done.slice(0, -1),
          { changes: inverse.compose(last.changes), selection: last.selection, time, userEvent },
        ],
        undone: [],
      };
    }
    const done = [...value.done, { changes: inverse, selection: tr.startState.selection, time, userEvent }];
    return { done: done.length > MAX_DEPTH ? done.slice(-MAX_DEPTH) : done, undone: [] };
  },
});

function travel(kind: 'undo' | 'redo'): StateCommand {
  return ({ state, dispatch }) => {
    const history = state.field(historyField, false);
    const stack = kind === 'undo' ? history?.done : history?.undone;
    const entry = stack?.[stack.length - 1];
    if (!entry) return false;
    dispatch(
      state.update({
        changes: entry.changes,
        selection: entry.selection,
        annotations: [fromHistory.of(kind), Transaction.userEvent.of(kind)],
        scrollIntoView: true,
      }),
    );
    return true;
  };
}

export const undo = travel('undo');
export const redo = travel('redo');

export function history(): Extension {
  return historyField;
}

// ---- indentation ------------------------------------------------------------------------

/**
 * Enter: a new line indented like the current one; one level deeper after `key:` (a nested
 * mapping or list follows) and after a bare `-`; after `- key: value`, aligned with `key`.
 */
export const insertNewlineAndIndent: StateCommand = ({ state, dispatch }) => {
  const changes = state.changeByRange((range) => {
    const line = state.doc.lineAt(range.from);
    const before = line.text.slice(0, range.from - line.from);
    const indent = /^ */.exec(before)![0].length;
    let next = indent;
    const item = /^( *)- +(?=\S)/.exec(before);
    if (item) next = item[0].length;
    if (/:[ \t]*(#.*)?$/.test(before) || /^ *-[ \t]*$/.test(before))
      next = (item ? item[0].length : indent) + INDENT.length;
    if (/:[ \t]*[|>][-+0-9]*[ \t]*$/.test(before)) next = indent + INDENT.length;
    // Trailing spaces before the cursor are dropped, like every editor does.
    const trimmedFrom = range.from - /[ \t]*$/.exec(before)![0].length;
    const from = before.trim() === '' ? range.from : trimmedFrom;
    const insert = state.lineBreak + ' '.repeat(next);
    // A line break is one position in the document, even when it is CRLF in the file.
    return { changes: { from, to: range.to, insert }, range: EditorSelection.cursor(from + 1 + next) };
  });
  dispatch(state.update(changes, { scrollIntoView: true, userEvent: 'input' }));
  return true;
};

function selectedLines(state: EditorState): number[] {
  const lines = new Set<number>();
  for (const range of state.selection.ranges) {
    const first = state.doc.lineAt(range.from).number;
    // A selection ending at the start of a line does not include that line.
    const lastLine = state.doc.lineAt(range.to);
    const last = range.to > range.from && lastLine.from === range.to ? lastLine.number - 1 : lastLine.number;
    for (let n = first; n <= Math.max(first, last); n++) lines.add(n);
  }
  return [...lines].sort((a, b) => a - b);
}

/** Tab: spaces to the next indent stop at the cursor, or every selected line one level deeper. */
export const indentMore: StateCommand = ({ state, dispatch }) => {
  if (state.selection.ranges.every((r) => r.empty)) {
    dispatch(
      state.update(
        state.changeByRange((range) => {
          const line = state.doc.lineAt(range.from);
          const column = range.from - line.from;
          const insert = ' '.repeat(INDENT.length - (column % INDENT.length));
          return { changes: { from: range.from, insert }, range: EditorSelection.cursor(range.from + insert.length) };
        }),
        { userEvent: 'input.indent' },
      ),
    );
    return true;
  }
  const changes: ChangeSpec[] = selectedLines(state).map((n) => ({ from: state.doc.line(n).from, insert: INDENT }));
  dispatch(state.update({ changes, userEvent: 'input.indent' }));
  return true;
};

/** Shift-Tab: every selected line one level shallower (as far as it has spaces). */
export const indentLess: StateCommand = ({ state, dispatch }) => {
  const changes: ChangeSpec[] = [];
  for (const n of selectedLines(state)) {
    const line = state.doc.line(n);
    const spaces = /^ */.exec(line.text)![0].length;
    const remove = Math.min(spaces, spaces % INDENT.length || INDENT.length);
    if (remove > 0) changes.push({ from: line.from, to: line.from + remove });
  }
  if (changes.length > 0) dispatch(state.update({ changes, userEvent: 'delete.dedent' }));
  return true;
};

/** Mod-/: comments the selected lines out with `# `, or back in when all are comments. */
export const toggleComment: StateCommand = ({ state, dispatch }) => {
  const lines = selectedLines(state)
    .map((n) => state.doc.line(n))
    .filter((line) => line.text.trim() !== '');
  if (lines.length === 0) return true;
  const commented = lines.every((line) => /^ *#/.test(line.text));
  const column = Math.min(...lines.map((line) => /^ */.exec(line.text)![0].length));
  const changes: ChangeSpec[] = lines.map((line) => {
    if (!commented) return { from: line.from + column, insert: '# ' };
    const at = line.text.indexOf('#');
    return { from: line.from + at, to: line.from + at + (line.text[at + 1] === ' ' ? 2 : 1) };
  });
  dispatch(state.update({ changes, userEvent: commented ? 'uncomment' : 'comment' }));
  return true;
};

const selectAll: StateCommand = ({ state, dispatch }) => {
  dispatch(state.update({ selection: EditorSelection.range(0, state.doc.length), userEvent: 'select' }));
  return true;
};

// ---- keyboard ---------------------------------------------------------------------------

/**
 * Tab indents inside the editor, so keyboard users need a way out: Escape, then Tab moves
 * focus on (the page says so next to the editor), as in CodeMirror's own tab-focus mode.
 */
const escaped = new WeakMap<object, boolean>();

export function editingKeymap(): Extension {
  const bindings: KeyBinding[] = [
    { key: 'Enter', run: (view) => insertNewlineAndIndent(view) },
    {
      key: 'Tab',
      run: (view) => {
        if (escaped.get(view)) {
          escaped.delete(view);
          return false;
        }
        return indentMore(view);
      },
      shift: (view) => {
        if (escaped.get(view)) {
          escaped.delete(view);
          return false;
        }
        return indentLess(view);
      },
    },
    {
      key: 'Escape',
      run: (view) => {
        escaped.set(view, true);
        return false;
      },
    },
    { key: 'Mod-z', run: (view) => undo(view), preventDefault: true },
    { key: 'Mod-y', run: (view) => redo(view), preventDefault: true },
    { key: 'Mod-Shift-z', run: (view) => redo(view), preventDefault: true },
    { key: 'Mod-a', run: (view) => selectAll(view) },
    { key: 'Mod-/', run: (view) => toggleComment(view) },
  ];
  return keymap.of(bindings);
}

/** Any other key ends the Escape-then-Tab window. */
export function clearEscapeOn(view: object): void {
  escaped.delete(view);
}
