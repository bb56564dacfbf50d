/**
 * The server's validation issues as CodeMirror diagnostics. Positions come from line/column,
 * not from the server's offsets: CodeMirror counts a CRLF line break as one character, the
 * server as two, so offsets drift on CRLF files while line/column do not.
 */
import type { Diagnostic } from '@codemirror/lint';
import type { Text } from '@codemirror/state';
import type { ConfigIssue } from '@gatehouse/admin-api/types.js';

export const ISSUE_KIND_LABELS: Record<ConfigIssue['kind'], string> = {
  yaml: 'YAML',
  schema: 'schema',
  placeholder: 'placeholder',
  loader: 'llama-swap loader',
  schema_unavailable: 'no schema',
};

/** Document positions of an issue, clamped to the text; null when it has no place. */
export function issueRange(
  doc: Text,
  issue: Pick<ConfigIssue, 'line' | 'column' | 'endLine' | 'endColumn'>,
): { from: number; to: number } | null {
  if (issue.line === null) return null;
  const at = (lineNumber: number, column: number | null) => {
    const line = doc.line(Math.min(Math.max(lineNumber, 1), doc.lines));
    return line.from + Math.min(Math.max((column ?? 1) - 1, 0), line.length);
  };
  const from = at(issue.line, issue.column);
  let to = issue.endLine === null ? from : at(issue.endLine, issue.endColumn);
  if (to < from) to = from;
  // A zero-width mark cannot be seen: underline the token it starts, or else the character
  // before it (errors at the end of a line or of the text, e.g. an unclosed bracket).
  if (to === from) {
    const line = doc.lineAt(from);
    const word = /^\S*/.exec(line.text.slice(from - line.from))![0].length;
    if (word > 0) to = from + word;
    else if (from > line.from) return { from: from - 1, to: from };
  }
  return { from, to };
}

function issueMessage(issue: ConfigIssue): string {
  return issue.path ? `${issue.message} (at ${issue.path})` : issue.message;
}

export function toDiagnostics(
  doc: Text,
  errors: readonly ConfigIssue[],
  warnings: readonly ConfigIssue[],
): Diagnostic[] {
  const out: Diagnostic[] = [];
  const add = (issue: ConfigIssue, severity: Diagnostic['severity']) => {
    const range = issueRange(doc, issue) ?? { from: 0, to: 0 };
    out.push({
      from: range.from,
      to: range.to,
      severity,
      source: ISSUE_KIND_LABELS[issue.kind],
      message: issueMessage(issue),
    });
  };
  for (const issue of errors) add(issue, 'error');
  for (const issue of warnings) add(issue, issue.kind === 'placeholder' ? 'info' : 'warning');
  return out.sort((a, b) => a.from - b.from);
}
