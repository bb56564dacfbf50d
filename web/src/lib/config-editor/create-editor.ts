/**
 * The CodeMirror 6 editor for llama-swap's config.yaml: YAML highlighting, server validation
 * as you type (debounced), completion and hover docs from llama-swap's JSON schema, Mod-S to
 * save. Only the config page imports this (a lazily loaded chunk), so CodeMirror never weighs
 * on the other pages.
 */
import {
  autocompletion,
  type Completion,
  type CompletionContext,
  type CompletionResult,
} from '@codemirror/autocomplete';
import { yaml } from '@codemirror/lang-yaml';
import { bracketMatching, HighlightStyle, indentUnit, syntaxHighlighting } from '@codemirror/language';
import { forceLinting, lintGutter, linter, setDiagnostics } from '@codemirror/lint';
import { Compartment, EditorSelection, EditorState, Prec, Transaction, type Extension } from '@codemirror/state';
import {
  drawSelection,
  EditorView,
  highlightActiveLine,
  highlightActiveLineGutter,
  highlightSpecialChars,
  hoverTooltip,
  keymap,
  lineNumbers,
  type Tooltip,
} from '@codemirror/view';
import { tags } from '@lezer/highlight';
import { highlightSelectionMatches, searchKeymap } from '@codemirror/search';
import type { ConfigIssue } from '@gatehouse/admin-api/types.js';
import { clearEscapeOn, editingKeymap, history, INDENT } from './editor-commands.js';
import { toDiagnostics } from './issues.js';
import { describe, formatDefault, propertiesAt, schemasAt, valuesAt, type JsonSchema } from './schema-walk.js';
import { contextAt, keyAt } from './yaml-context.js';

export interface ValidationOutcome {
  errors: ConfigIssue[];
  warnings: ConfigIssue[];
}

export interface CreateEditorOptions {
  parent: HTMLElement;
  text: string;
  schema: JsonSchema | null;
  dark: boolean;
  readOnly: boolean;
  /** Server validation; aborted when a newer one starts. */
  validate(text: string, signal: AbortSignal): Promise<ValidationOutcome>;
  /** Called with the result that matches the editor's current text (stale ones are dropped). */
  onValidated(outcome: ValidationOutcome, text: string): void;
  onValidationFailed(error: unknown): void;
  /** Every document change (typing, undo, format, reload). */
  onChange(text: string): void;
  onSave(): void;
  /** Milliseconds after the last keystroke before validating. */
  lintDelayMs?: number;
}

export interface ConfigEditorHandle {
  readonly view: EditorView;
  text(): string;
  /** Replaces the whole text. `undoable: false` (reload from disk) also starts a new history. */
  replaceText(text: string, options: { undoable: boolean }): void;
  setSchema(schema: JsonSchema | null): void;
  setDark(dark: boolean): void;
  setReadOnly(readOnly: boolean): void;
  /** Shows issues the save answered with (422) until the next validation. */
  showIssues(outcome: ValidationOutcome): void;
  /** Validates now instead of after the typing pause. */
  revalidate(): void;
  /** Selects line:column (1-based), scrolls to it and focuses the editor. */
  goTo(line: number, column: number): void;
  focus(): void;
  destroy(): void;
}

/** Token colours come from CSS variables (`--cm-*`, set by the page for both themes). */
const highlight = HighlightStyle.define([
  { tag: tags.definition(tags.propertyName), color: 'var(--cm-key)', fontWeight: '600' },
  { tag: tags.string, color: 'var(--cm-string)' },
  { tag: tags.special(tags.string), color: 'var(--cm-punct)' },
  { tag: tags.content, color: 'var(--cm-text)' },
  { tag: tags.lineComment, color: 'var(--cm-comment)', fontStyle: 'italic' },
  { tag: tags.labelName, color: 'var(--cm-anchor)' },
  { tag: tags.typeName, color: 'var(--cm-anchor)' },
  { tag: [tags.meta, tags.keyword], color: 'var(--cm-meta)' },
  { tag: [tags.separator, tags.punctuation, tags.squareBracket, tags.brace], color: 'var(--cm-punct)' },
  { tag: tags.attributeValue, color: 'var(--cm-string)' },
]);

const theme = EditorView.theme({
  '&': { height: '100%', fontSize: '13px', backgroundColor: 'var(--surface)', color: 'var(--cm-text)' },
  '&.cm-focused': { outline: 'none' },
  '.cm-scroller': { fontFamily: 'var(--font-mono)', lineHeight: '1.6' },
  '.cm-content': { caretColor: 'var(--text)', padding: '8px 0' },
  '.cm-cursor, .cm-dropCursor': { borderLeftColor: 'var(--text)', borderLeftWidth: '2px' },
  '&.cm-focused > .cm-scroller > .cm-selectionLayer .cm-selectionBackground, .cm-selectionBackground, ::selection': {
    backgroundColor: 'var(--cm-selection) !important',
  },
  '.cm-gutters': {
    backgroundColor: 'var(--surface-2)',
    color: 'var(--text-faint)',
    borderRight: '1px solid var(--border)',
  },
  '.cm-activeLine': { backgroundColor: 'var(--cm-active-line)' },
  '.cm-activeLineGutter': { backgroundColor: 'var(--cm-active-line)', color: 'var(--text-muted)' },
  '.cm-lineNumbers .cm-gutterElement': { padding: '0 8px 0 12px', minWidth: '36px' },
  '.cm-tooltip': {
    border: '1px solid var(--border)',
    borderRadius: 'var(--radius)',
    backgroundColor: 'var(--surface)',
    color: 'var(--text)',
    boxShadow: 'var(--shadow-lg)',
    overflow: 'hidden',
  },
  '.cm-tooltip.cm-tooltip-autocomplete > ul': { fontFamily: 'var(--font-mono)', maxHeight: '16em' },
  '.cm-tooltip.cm-tooltip-autocomplete > ul > li': { padding: '3px 10px' },
  '.cm-tooltip.cm-tooltip-autocomplete > ul > li[aria-selected]': {
    backgroundColor: 'var(--accent)',
    color: 'var(--on-accent)',
  },
  '.cm-completionDetail': { marginLeft: '10px', fontStyle: 'normal', opacity: '0.75' },
  '.cm-completionInfo': {
    padding: '8px 10px',
    maxWidth: '360px',
    fontFamily: 'var(--font-sans)',
    fontSize: '12.5px',
    lineHeight: '1.45',
  },
  '.cm-diagnostic': { padding: '6px 10px', fontFamily: 'var(--font-sans)', fontSize: '12.5px', maxWidth: '520px' },
  '.cm-diagnostic-error': { borderLeft: '3px solid var(--danger)' },
  '.cm-diagnostic-warning': { borderLeft: '3px solid var(--warning)' },
  '.cm-diagnostic-info': { borderLeft: '3px solid var(--accent)' },
  '.cm-diagnosticSource': { opacity: '0.7', fontSize: '11.5px' },
  '.cm-lintRange-error': {
    backgroundImage: 'none',
    textDecoration: 'underline wavy var(--danger)',
    textUnderlineOffset: '3px',
  },
  '.cm-lintRange-warning': {
    backgroundImage: 'none',
    textDecoration: 'underline wavy var(--warning)',
    textUnderlineOffset: '3px',
  },
  '.cm-lintRange-info': {
    backgroundImage: 'none',
    textDecoration: 'underline dotted var(--accent)',
    textUnderlineOffset: '3px',
  },
  '.cm-specialChar': { color: 'var(--danger)' },
  '.cm-matchingBracket': { backgroundColor: 'var(--cm-active-line)', outline: '1px solid var(--border-strong)' },
  '.cm-hover-doc': { padding: '8px 10px', maxWidth: '380px', fontSize: '12.5px', lineHeight: '1.45' },
  '.cm-hover-doc .cm-hover-title': { fontFamily: 'var(--font-mono)', fontWeight: '600' },
  '.cm-hover-doc .cm-hover-meta': {
    marginTop: '4px',
    color: 'var(--text-muted)',
    fontFamily: 'var(--font-mono)',
    fontSize: '11.5px',
  },
  '.cm-hover-doc p': { margin: '4px 0 0' },
});

function el(tag: string, className: string, text: string): HTMLElement {
  const node = document.createElement(tag);
  node.className = className;
  node.textContent = text;
  return node;
}

/** A completion's info box: description, then allowed values and the default. */
function infoBox(
  description: string | null,
  enumValues: unknown[] | null,
  defaultValue: unknown,
): (() => Node) | undefined {
  if (!description && !enumValues && defaultValue === undefined) return undefined;
  return () => {
    const box = document.createElement('div');
    if (description) box.append(el('div', '', description));
    const meta: string[] = [];
    if (enumValues) meta.push(`one of: ${enumValues.map((v) => JSON.stringify(v)).join(', ')}`);
    const def = formatDefault(defaultValue);
    if (def !== null) meta.push(`default: ${def}`);
    if (meta.length > 0) box.append(el('div', 'cm-hover-meta', meta.join(' · ')));
    return box;
  };
}

export function createConfigEditor(options: CreateEditorOptions): ConfigEditorHandle {
  let schema = options.schema;
  const darkMode = new Compartment();
  const editable = new Compartment();
  let controller: AbortController | undefined;

  const lines = (state: EditorState) => state.doc.toJSON();

  function complete(context: CompletionContext): CompletionResult | null {
    if (!schema) return null;
    const line = context.state.doc.lineAt(context.pos);
    const where = contextAt(lines(context.state), line.number - 1, context.pos - line.from);
    if (where.kind === 'none') return null;
    if (!context.explicit && where.prefix === '' && where.kind === 'key') return null;
    let completions: Completion[];
    if (where.kind === 'key') {
      completions = propertiesAt(schema, where.path)
        .filter((p) => !where.siblings.includes(p.name))
        .map((p) => ({
          label: p.name,
          type: 'property',
          detail: p.type ?? undefined,
          info: infoBox(p.description, p.enumValues, p.defaultValue),
          apply: `${p.name}: `,
          boost: p.required ? 1 : 0,
        }));
    } else {
      completions = valuesAt(schema, [...where.path, where.key]).map((v) => ({
        label: v.label,
        type: 'enum',
        detail: v.detail ?? undefined,
      }));
    }
    if (completions.length === 0) return null;
    return { from: line.from + where.from, options: completions, validFor: /^[\w.-]*$/ };
  }

  const hover = hoverTooltip((view, pos): Tooltip | null => {
    if (!schema) return null;
    const line = view.state.doc.lineAt(pos);
    const key = keyAt(lines(view.state), line.number - 1, pos - line.from);
    if (!key) return null;
    const schemas = schemasAt(schema, key.path);
    if (schemas.length === 0) return null;
    const doc = describe(schemas);
    if (!doc.description && !doc.type && !doc.enumValues) return null;
    return {
      pos: line.from + key.from,
      end: line.from + key.to,
      above: true,
      create: () => {
        const dom = document.createElement('div');
        dom.className = 'cm-hover-doc';
        dom.append(el('div', 'cm-hover-title', key.path.map((s) => (typeof s === 'number' ? '[]' : s)).join('.')));
        if (doc.description) dom.append(el('p', '', doc.description));
        const meta = [
          doc.type,
          doc.enumValues ? `one of: ${doc.enumValues.map((v) => JSON.stringify(v)).join(', ')}` : null,
          formatDefault(doc.defaultValue) !== null ? `default: ${formatDefault(doc.defaultValue)}` : null,
        ].filter(Boolean);
        if (meta.length > 0) dom.append(el('div', 'cm-hover-meta', meta.join(' · ')));
        return { dom };
      },
    };
  });

  const lint = linter(
    async (view) => {
      const doc = view.state.doc;
      // sliceDoc, not doc.toString(): only sliceDoc joins lines with the file's own line break (CRLF).
      const text = view.state.sliceDoc();
      controller?.abort();
      const mine = new AbortController();
      controller = mine;
      let outcome: ValidationOutcome;
      try {
        outcome = await options.validate(text, mine.signal);
      } catch (error) {
        if (!mine.signal.aborted) options.onValidationFailed(error);
        return [];
      }
      if (view.state.doc !== doc || mine.signal.aborted) return [];
      options.onValidated(outcome, text);
      return toDiagnostics(doc, outcome.errors, outcome.warnings);
    },
    { delay: options.lintDelayMs ?? 400 },
  );

  let dark = options.dark;
  let readOnly = options.readOnly;
  const readOnlyExtensions = (on: boolean) => [EditorState.readOnly.of(on), EditorView.editable.of(!on)];

  const extensions = (text: string): Extension[] => [
    // The file's own line breaks: a CRLF file stays CRLF, byte for byte.
    text.includes('\r\n') ? EditorState.lineSeparator.of('\r\n') : [],
    lineNumbers(),
    highlightActiveLineGutter(),
    highlightSpecialChars(),
    drawSelection(),
    highlightActiveLine(),
    bracketMatching(),
    history(),
    indentUnit.of(INDENT),
    EditorState.tabSize.of(2),
    yaml(),
    syntaxHighlighting(highlight),
    lint,
    lintGutter(),
    autocompletion({ override: [complete], icons: false, activateOnTyping: true }),
    hover,
    Prec.highest(keymap.of([{ key: 'Mod-s', run: () => (options.onSave(), true), preventDefault: true }])),
    editingKeymap(),
    // Find and replace (Mod-F), with other matches of the selection highlighted.
    keymap.of(searchKeymap),
    highlightSelectionMatches(),
    EditorView.domEventHandlers({
      keydown(event, view) {
        if (event.key !== 'Escape' && event.key !== 'Tab' && event.key !== 'Shift') clearEscapeOn(view);
        return false;
      },
    }),
    EditorView.updateListener.of((update) => {
      if (update.docChanged) options.onChange(update.state.sliceDoc());
    }),
    EditorView.contentAttributes.of({
      'aria-label': 'llama-swap config.yaml',
      'aria-multiline': 'true',
      spellcheck: 'false',
      autocapitalize: 'off',
    }),
    theme,
    darkMode.of(EditorView.darkTheme.of(dark)),
    editable.of(readOnlyExtensions(readOnly)),
  ];

  const view = new EditorView({
    parent: options.parent,
    state: EditorState.create({ doc: options.text, extensions: extensions(options.text) }),
  });

  return {
    view,
    text: () => view.state.sliceDoc(),
    replaceText(text, { undoable }) {
      if (undoable) {
        view.dispatch({
          changes: { from: 0, to: view.state.doc.length, insert: text },
          selection: EditorSelection.cursor(Math.min(view.state.selection.main.head, text.length)),
          annotations: [Transaction.userEvent.of('format')],
        });
        return;
      }
      // Another file: a fresh state (its own line breaks, empty history), then tell the page.
      controller?.abort();
      view.setState(EditorState.create({ doc: text, extensions: extensions(text) }));
      options.onChange(view.state.sliceDoc());
    },
    setSchema(next) {
      schema = next;
    },
    setDark(next) {
      dark = next;
      view.dispatch({ effects: darkMode.reconfigure(EditorView.darkTheme.of(dark)) });
    },
    setReadOnly(next) {
      readOnly = next;
      view.dispatch({ effects: editable.reconfigure(readOnlyExtensions(readOnly)) });
    },
    showIssues(outcome) {
      view.dispatch(setDiagnostics(view.state, toDiagnostics(view.state.doc, outcome.errors, outcome.warnings)));
    },
    revalidate() {
      forceLinting(view);
    },
    goTo(lineNumber, column) {
      const line = view.state.doc.line(Math.min(Math.max(lineNumber, 1), view.state.doc.lines));
      const pos = line.from + Math.min(Math.max(column - 1, 0), line.length);
      view.dispatch({
        selection: EditorSelection.cursor(pos),
        effects: EditorView.scrollIntoView(pos, { y: 'center' }),
      });
      view.focus();
    },
    focus: () => view.focus(),
    destroy() {
      controller?.abort();
      view.destroy();
    },
  };
}
