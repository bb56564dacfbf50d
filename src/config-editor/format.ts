/**
 * "Format": re-parse and re-print the text with `yaml`. Comments are kept where `yaml` can
 * attach them, but spacing, quoting and flow style may change, so this is the one operation
 * that may rewrite more than the user typed; it never saves. Long strings are not folded
 * (`lineWidth: 0`): a folded `cmd` would be harder to read. A BOM and CRLF line endings are
 * kept, so formatting does not show every line as changed in a diff.
 */
import { parseConfig, type ConfigIssue } from './validate.js';

export type FormatResult = { ok: true; text: string } | { ok: false; errors: ConfigIssue[] };

export function formatConfigText(text: string): FormatResult {
  const parsed = parseConfig(text);
  if (parsed.errors.length > 0) return { ok: false, errors: parsed.errors };
  let out = parsed.doc.toString({ lineWidth: 0 });
  const crlf = (text.match(/\r\n/g) ?? []).length;
  const lf = (text.match(/\n/g) ?? []).length;
  if (crlf > 0 && crlf * 2 >= lf) out = out.replace(/\r?\n/g, '\r\n');
  if (text.startsWith('\uFEFF') && !out.startsWith('\uFEFF')) out = `\uFEFF${out}`;
  return { ok: true, text: out };
}
