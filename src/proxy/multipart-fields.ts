/**
 * Reads the values of one form field from a `multipart/form-data` body as it streams past, the
 * way Go's `multipart.Reader.ReadForm` would see them (parts with a `filename` are files, not
 * values; a part ends at CRLF `--boundary` followed by `--`, white space or a line end). File
 * contents are skipped, never held: only a short tail is kept between chunks.
 *
 * Strict: anything Go might read differently (no leading boundary, bare LF line ends, folded or
 * malformed headers, RFC 2231 names, quoted-printable values, a truncated body) makes the
 * result `unreadable`, so a caller that must be certain can refuse.
 */
import { decodeUtf8 } from './utf8.js';
import { parseMediaType } from './go-form.js';

export type FieldReading = { readable: true; values: string[] } | { readable: false; reason: string };

const MAX_HEADER_BYTES = 16 * 1024;
const MAX_VALUE_BYTES = 4096;
const MAX_PARTS = 1000;

const enum P {
  First,
  /** Pending starts with `--boundary`; what ends its line is still to be read. */
  Boundary,
  Headers,
  Body,
  Done,
  Failed,
}

export class MultipartFieldReader {
  private state = P.First;
  private pending: Buffer = Buffer.alloc(0);
  private readonly delimiter: Buffer;
  private readonly first: Buffer;
  private capture: Buffer[] | undefined;
  private captured = 0;
  private parts = 0;
  /** Nothing of the current part's body has been read yet. */
  private atPartStart = false;
  private readonly values: string[] = [];
  private failure = '';

  constructor(
    boundary: string,
    private readonly field: string,
  ) {
    this.first = Buffer.from(`--${boundary}`, 'latin1');
    this.delimiter = Buffer.from(`\r\n--${boundary}`, 'latin1');
  }

  feed(chunk: Buffer): void {
    if (this.state === P.Done || this.state === P.Failed) return;
    this.pending = this.pending.length === 0 ? chunk : Buffer.concat([this.pending, chunk]);
    while (this.step());
  }

  end(): FieldReading {
    if (this.state === P.Failed) return { readable: false, reason: this.failure };
    if (this.state !== P.Done)
      return { readable: false, reason: 'the multipart body ends before its closing boundary' };
    return { readable: true, values: this.values };
  }

  /** Does what the bytes at hand allow; false when it needs more. */
  private step(): boolean {
    const buf = this.pending;
    switch (this.state) {
      case P.First: {
        const need = this.first.length + 2;
        if (buf.length < need) return false;
        if (!buf.subarray(0, this.first.length).equals(this.first))
          return this.fail('the body does not start with its boundary');
        this.state = P.Boundary;
        return true;
      }
      case P.Boundary:
        return this.afterDelimiter(this.first.length);
      case P.Headers: {
        if (buf.length < 2) return false;
        // A part with no headers at all: its blank line comes first.
        const end = buf[0] === 0x0d && buf[1] === 0x0a ? -2 : buf.indexOf('\r\n\r\n');
        if (end === -1) {
          if (buf.length > MAX_HEADER_BYTES) return this.fail('a part header is too long');
          return false;
        }
        if (!this.startPart(end === -2 ? '' : buf.toString('latin1', 0, end))) return false;
        this.pending = buf.subarray(end === -2 ? 2 : end + 4);
        this.state = P.Body;
        this.atPartStart = true;
        return true;
      }
      case P.Body: {
        if (this.atPartStart) {
          const start = this.partStart(buf);
          if (start === 'wait') return false;
          this.atPartStart = false;
          if (start === 'empty') {
            if (!this.endPart()) return false;
            this.state = P.Boundary;
            return true;
          }
        }
        let from = 0;
        for (;;) {
          const at = buf.indexOf(this.delimiter, from);
          if (at < 0) {
            // Keep what could be the start of a delimiter; the rest is part content.
            const keep = Math.min(buf.length, this.delimiter.length + 1);
            this.content(buf.subarray(0, buf.length - keep));
            this.pending = buf.subarray(buf.length - keep);
            return false;
          }
          const after = at + this.delimiter.length;
          if (after + 2 > buf.length) {
            this.content(buf.subarray(0, at));
            this.pending = buf.subarray(at);
            return false;
          }
          const next = buf[after]!;
          const closing = next === 0x2d && buf[after + 1] === 0x2d;
          if (closing || next === 0x20 || next === 0x09 || next === 0x0d || next === 0x0a) {
            this.content(buf.subarray(0, at));
            if (!this.endPart()) return false;
            this.pending = buf.subarray(at + 2);
            this.state = P.Boundary;
            return true;
          }
          from = at + 1; // `--boundary` followed by other bytes is content
        }
      }
      default:
        return false;
    }
  }

  /**
   * Go ends a part whose body begins with `--boundary` and then `--`, white space or a line end
   * right there, with no CRLF before it (`scanUntilBoundary`): the part is empty.
   */
  private partStart(buf: Buffer): 'empty' | 'content' | 'wait' {
    const known = Math.min(buf.length, this.first.length);
    if (!buf.subarray(0, known).equals(this.first.subarray(0, known))) return 'content';
    if (buf.length < this.first.length + 2) return 'wait';
    const next = buf[this.first.length]!;
    const closing = next === 0x2d && buf[this.first.length + 1] === 0x2d;
    return closing || next === 0x20 || next === 0x09 || next === 0x0d || next === 0x0a ? 'empty' : 'content';
  }

  /** At `offset` in pending, just after `--boundary`: the closing `--`, or white space and CRLF. */
  private afterDelimiter(offset: number): boolean {
    const buf = this.pending;
    if (buf[offset] === 0x2d && buf[offset + 1] === 0x2d) {
      this.state = P.Done;
      this.pending = Buffer.alloc(0);
      return false;
    }
    let i = offset;
    while (i < buf.length && (buf[i] === 0x20 || buf[i] === 0x09)) i++;
    if (i + 2 > buf.length) return false;
    if (buf[i] !== 0x0d || buf[i + 1] !== 0x0a) return this.fail('a boundary line does not end with CRLF');
    if (++this.parts > MAX_PARTS) return this.fail('too many parts');
    this.pending = buf.subarray(i + 2);
    this.state = P.Headers;
    return true;
  }

  private startPart(headerText: string): boolean {
    let disposition: string | undefined;
    let encoding: string | undefined;
    for (const line of headerText === '' ? [] : headerText.split('\r\n')) {
      const m = /^([!#$%&'*+\-.^_`|~0-9A-Za-z]+):[ \t]*(.*?)[ \t]*$/.exec(line);
      if (!m) return this.fail('a malformed part header');
      const name = m[1]!.toLowerCase();
      if (name === 'content-disposition') {
        if (disposition !== undefined) return this.fail('a part with two Content-Disposition headers');
        disposition = m[2]!;
      } else if (name === 'content-transfer-encoding') encoding = m[2]!;
    }
    this.capture = undefined;
    if (disposition === undefined) return true; // no name: Go skips the part
    const parsed = parseMediaType(disposition, { disposition: true });
    if (!parsed) return this.fail('a Content-Disposition header that cannot be read with certainty');
    if (parsed.type !== 'form-data') return true;
    if (parsed.extended.has('name')) return this.fail('a part name in RFC 2231 form');
    if (parsed.params.get('name') !== this.field) return true;
    if (parsed.extended.has('filename')) return this.fail(`a "${this.field}" part with an RFC 2231 file name`);
    if ((parsed.params.get('filename') ?? '') !== '') return true; // a file, not a value
    if (encoding !== undefined && encoding.toLowerCase() === 'quoted-printable')
      return this.fail(`a quoted-printable "${this.field}" part`);
    this.capture = [];
    this.captured = 0;
    return true;
  }

  private content(bytes: Buffer): void {
    if (!this.capture || bytes.length === 0) return;
    this.captured += bytes.length;
    if (this.captured > MAX_VALUE_BYTES) {
      this.fail(`a "${this.field}" value too long to read`);
      return;
    }
    this.capture.push(Buffer.from(bytes));
  }

  private endPart(): boolean {
    if (!this.capture) return true;
    const value = decodeUtf8(Buffer.concat(this.capture));
    this.capture = undefined;
    if (value === undefined) return this.fail(`a "${this.field}" value that is not UTF-8`);
    this.values.push(value);
    return true;
  }

  private fail(reason: string): false {
    if (this.state !== P.Failed) this.failure = reason;
    this.state = P.Failed;
    this.pending = Buffer.alloc(0);
    return false;
  }
}
