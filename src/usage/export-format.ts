/**
 * An export's rows as a byte stream: CSV (RFC 4180, through csv-stringify) or one JSON array.
 * Both pull rows only as fast as their reader takes bytes; an error in the rows (the store
 * failed) destroys the stream, so a reader never mistakes a cut export for a whole one.
 */
import { pipeline, Readable, Transform } from 'node:stream';
import { stringify } from 'csv-stringify';
import type { USAGE_EXPORT_FORMATS } from '../admin-api/usage.js';
import type { ExportRow } from './export-rows.js';

export type ExportFormat = (typeof USAGE_EXPORT_FORMATS)[number];

export const EXPORT_CONTENT_TYPES: Record<ExportFormat, string> = {
  csv: 'text/csv; charset=utf-8; header=present',
  json: 'application/json; charset=utf-8',
};

/**
 * CSV for spreadsheets: a UTF-8 byte order mark (Excel reads the file as UTF-8 only with it),
 * a header row, CRLF line ends, fields quoted when they hold a comma, quote, CR or LF (a bare
 * line break left unquoted would start a new row). Text cells are defused by `defuseFormula`;
 * numbers are written as they are, so a negative count stays a number.
 */
export function csvStream(columns: readonly string[], rows: AsyncIterable<ExportRow>): Readable {
  const out = stringify({
    header: true,
    columns: columns.map((key) => ({ key })),
    bom: true,
    record_delimiter: 'windows',
    // Off by default once `record_delimiter` is set: quote any CR or LF, not only CRLF.
    quote_record_delimiter: true,
    cast: { boolean: (value) => (value ? 'true' : 'false'), string: defuseFormula },
  });
  return joined(Readable.from(rows), out);
}

/**
 * What a spreadsheet reads as the start of a formula (OWASP "CSV injection"), full-width forms too,
 * also behind blanks and control characters some spreadsheets skip (NUL, space, ideographic space).
 */
const FORMULA = '[\\u0000-\\u0020\\u00A0\\u3000]*[=+\\-@\\t\\r\\uFF1D\\uFF0B\\uFF0D\\uFF20]';
const STARTS_FORMULA = new RegExp(`^${FORMULA}`);
const LINE_STARTS_FORMULA = new RegExp(`(\\r\\n|\\r|\\n)(?=${FORMULA})`, 'g');

/**
 * A text cell with a `'` before every formula start: at the beginning, and after each line break
 * inside it, where a spreadsheet that splits the cell (or a pasted line) would read one. The `'`
 * shows in the cell: OWASP's advice, and what csv-stringify's own `escape_formulas` does.
 */
function defuseFormula(text: string): string {
  const lines = text.replace(LINE_STARTS_FORMULA, "$1'");
  return STARTS_FORMULA.test(lines) ? `'${lines}` : lines;
}

/** `[` + one object per row + `]`: valid JSON once complete, written row by row. */
export function jsonStream(rows: AsyncIterable<ExportRow>): Readable {
  return joined(Readable.from(jsonArray(rows), { objectMode: false }));
}

/** Rows are written one by one; the socket gets them in chunks of about this size. */
const CHUNK_BYTES = 64 * 1024;

/**
 * The streams piped into one that gathers their small writes into chunks of CHUNK_BYTES. An error
 * anywhere destroys the last one, which is the one the reply reads; destroying it (the client
 * left) stops the rows.
 */
function joined(source: Readable, ...through: Transform[]): Readable {
  let held: Buffer[] = [];
  let size = 0;
  const take = (): Buffer => {
    const chunk = Buffer.concat(held, size);
    held = [];
    size = 0;
    return chunk;
  };
  const gather = new Transform({
    transform(chunk: Buffer, _encoding, done) {
      held.push(chunk);
      size += chunk.length;
      done(null, size >= CHUNK_BYTES ? take() : undefined);
    },
    flush(done) {
      done(null, size > 0 ? take() : undefined);
    },
  });
  pipeline([source, ...through, gather], () => {
    // An error reaches the reader through `gather` itself.
  });
  return gather;
}

async function* jsonArray(rows: AsyncIterable<ExportRow>): AsyncGenerator<string> {
  let first = true;
  for await (const row of rows) {
    yield `${first ? '[\n' : ',\n'}${JSON.stringify(row)}`;
    first = false;
  }
  yield first ? '[]\n' : '\n]\n';
}
