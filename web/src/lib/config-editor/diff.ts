/**
 * Disk versus editor as a unified diff (jsdiff), in rows a page can render with line numbers:
 * what someone else saved is "disk", what is in the editor is "editor".
 */
import { createTwoFilesPatch, structuredPatch } from 'diff';

export type DiffRowKind = 'hunk' | 'context' | 'removed' | 'added' | 'meta';

export interface DiffRow {
  kind: DiffRowKind;
  /** Line number on disk (removed and context rows). */
  oldLine: number | null;
  /** Line number in the editor (added and context rows). */
  newLine: number | null;
  text: string;
}

export interface ConfigDiff {
  rows: DiffRow[];
  added: number;
  removed: number;
  /** The same diff as unified-diff text, for copying. */
  unified: string;
}

const CONTEXT = 3;

export function diffConfig(disk: string, editor: string, name = 'config.yaml'): ConfigDiff {
  const patch = structuredPatch(`${name} (on disk)`, `${name} (editor)`, disk, editor, undefined, undefined, {
    context: CONTEXT,
  });
  const rows: DiffRow[] = [];
  let added = 0;
  let removed = 0;
  for (const hunk of patch.hunks) {
    rows.push({
      kind: 'hunk',
      oldLine: null,
      newLine: null,
      text: `@@ -${hunk.oldStart},${hunk.oldLines} +${hunk.newStart},${hunk.newLines} @@`,
    });
    let oldLine = hunk.oldStart;
    let newLine = hunk.newStart;
    for (const line of hunk.lines) {
      const mark = line[0];
      // CRLF files: the \r is part of each line's text; it is not worth showing.
      const text = line.slice(1).replace(/\r$/, '');
      if (mark === '-') {
        rows.push({ kind: 'removed', oldLine: oldLine++, newLine: null, text });
        removed++;
      } else if (mark === '+') {
        rows.push({ kind: 'added', oldLine: null, newLine: newLine++, text });
        added++;
      } else if (mark === '\\') {
        rows.push({ kind: 'meta', oldLine: null, newLine: null, text: line.slice(2) });
      } else {
        rows.push({ kind: 'context', oldLine: oldLine++, newLine: newLine++, text });
      }
    }
  }
  const unified = createTwoFilesPatch(`${name} (on disk)`, `${name} (editor)`, disk, editor, undefined, undefined, {
    context: CONTEXT,
  });
  return { rows, added, removed, unified };
}
