/**
 * Splits CSV text into rows and cells the way a spreadsheet opening the file does (RFC 4180):
 * a field that starts with `"` runs to the next lone `"` (`""` is one quote) and may hold line
 * breaks; outside quotes a CR, LF or CRLF ends the row. A leading byte order mark is dropped.
 */
export function parseCsv(text: string): string[][] {
  const input = text.startsWith('\uFEFF') ? text.slice(1) : text;
  const rows: string[][] = [];
  let row: string[] = [];
  let cell = '';
  let i = 0;
  const endCell = () => {
    row.push(cell);
    cell = '';
  };
  const endRow = () => {
    endCell();
    rows.push(row);
    row = [];
  };
  while (i < input.length) {
    const c = input[i]!;
    if (c === '"' && cell === '') {
      // A quoted field: everything up to the closing quote is the cell's text.
      i++;
      for (;;) {
        if (i >= input.length) throw new Error('unterminated quoted field');
        const q = input[i]!;
        if (q === '"' && input[i + 1] === '"') {
          cell += '"';
          i += 2;
        } else if (q === '"') {
          i++;
          break;
        } else {
          cell += q;
          i++;
        }
      }
    } else if (c === ',') {
      endCell();
      i++;
    } else if (c === '\r' || c === '\n') {
      endRow();
      i += c === '\r' && input[i + 1] === '\n' ? 2 : 1;
    } else {
      cell += c;
      i++;
    }
  }
  if (cell !== '' || row.length > 0) endRow();
  return rows;
}
