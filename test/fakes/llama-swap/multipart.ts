/**
 * A small `multipart/form-data` reader, enough for model extraction and the audio and
 * image edit endpoints. Throws on malformed input, as Go's `ParseMultipartForm` errors do.
 */

export interface MultipartPart {
  name: string;
  filename: string | undefined;
  contentType: string | undefined;
  data: Buffer;
}

function boundaryOf(contentType: string): string | undefined {
  const m = /boundary=(?:"([^"]+)"|([^;]+))/i.exec(contentType);
  return m ? (m[1] ?? m[2])?.trim() : undefined;
}

export function parseMultipart(body: Buffer, contentType: string): MultipartPart[] {
  const boundary = boundaryOf(contentType);
  if (!boundary) throw new Error('no multipart boundary param in Content-Type');
  const delimiter = Buffer.from(`--${boundary}`);
  const parts: MultipartPart[] = [];
  let pos = body.indexOf(delimiter);
  if (pos < 0) throw new Error('multipart: NextPart: EOF');
  for (;;) {
    pos += delimiter.length;
    if (body.subarray(pos, pos + 2).toString() === '--') return parts;
    // Skip the CRLF after the delimiter.
    if (body[pos] === 0x0d && body[pos + 1] === 0x0a) pos += 2;
    else if (body[pos] === 0x0a) pos += 1;
    const headerEnd = body.indexOf('\r\n\r\n', pos);
    if (headerEnd < 0) throw new Error('multipart: malformed MIME header');
    const headerText = body.subarray(pos, headerEnd).toString('latin1');
    const next = body.indexOf(Buffer.concat([Buffer.from('\r\n'), delimiter]), headerEnd + 4);
    if (next < 0) throw new Error('multipart: NextPart: EOF');
    const data = body.subarray(headerEnd + 4, next);
    const headers = new Map<string, string>();
    for (const line of headerText.split('\r\n')) {
      const colon = line.indexOf(':');
      if (colon > 0) headers.set(line.slice(0, colon).trim().toLowerCase(), line.slice(colon + 1).trim());
    }
    const disposition = headers.get('content-disposition') ?? '';
    const name = /\bname="([^"]*)"/i.exec(disposition)?.[1];
    if (name !== undefined) {
      const filename = /\bfilename="([^"]*)"/i.exec(disposition)?.[1];
      parts.push({ name, filename, contentType: headers.get('content-type'), data: Buffer.from(data) });
    }
    pos = next + 2;
  }
}
