/**
 * Optional capture of request and response bodies for the request log (off by default:
 * `GATEHOUSE_USAGE_CAPTURE_BYTES`). Only the first N bytes are copied, and only of textual
 * content types; anything else is described, never stored.
 */
import type { ProxyStep } from '../core/steps.js';

export class BodyCapture {
  readonly #max: number;
  readonly #textual: boolean;
  readonly #contentType: string;
  #parts: Buffer[] = [];
  #kept = 0;
  #seen = 0;

  constructor(maxBytes: number, contentType: string | undefined) {
    this.#max = maxBytes;
    this.#contentType = contentType?.split(';')[0]?.trim() || 'no content type';
    this.#textual = isTextual(contentType);
  }

  add(chunk: Buffer): void {
    this.#seen += chunk.length;
    if (!this.#textual || this.#kept >= this.#max) return;
    // A copy: the chunk itself belongs to the stream and must not be held past it.
    const piece = Buffer.from(chunk.subarray(0, this.#max - this.#kept));
    this.#parts.push(piece);
    this.#kept += piece.length;
  }

  /** Bytes of the body that were not shown to `add` (a spooled body's rest). */
  addUnseen(bytes: number): void {
    this.#seen += bytes;
  }

  text(): string | undefined {
    if (this.#seen === 0) return undefined;
    if (!this.#textual) return `[${this.#contentType} body not captured]`;
    const text = Buffer.concat(this.#parts, this.#kept).toString('utf8');
    return this.#seen > this.#kept ? `${text}\n[... ${this.#seen - this.#kept} more bytes not captured]` : text;
  }
}

function isTextual(contentType: string | undefined): boolean {
  if (contentType === undefined) return false;
  const type = contentType.toLowerCase();
  return (
    type.startsWith('text/') ||
    type.includes('json') ||
    type.startsWith('application/x-www-form-urlencoded') ||
    type.includes('xml')
  );
}

/**
 * `captureRequestBody`: copies the start of the request body. Runs after `readModel`, which
 * has received the body whole and kept its start in memory.
 */
export function captureRequestBody(maxBytes: number): ProxyStep {
  if (!Number.isSafeInteger(maxBytes) || maxBytes < 1)
    throw new Error('captureRequestBody: maxBytes must be a positive integer');
  return function captureRequestBodyStep(ctx) {
    const head = ctx.decided.body;
    if (!head) return;
    const capture = new BodyCapture(maxBytes, ctx.req.headers['content-type']);
    ctx.decided.requestBody = () => capture.text();
    for (const chunk of head.start) capture.add(chunk);
    capture.addUnseen(head.bytes - head.start.reduce((n, chunk) => n + chunk.length, 0));
  };
}
