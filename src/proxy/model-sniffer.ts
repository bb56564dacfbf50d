/**
 * Finds the requested model in a request body while it streams past, without copying it.
 *
 * llama-swap reads `model` from a JSON body only when the Content-Type contains
 * `application/json`, and from form fields otherwise (contract §1.1); we mirror that so the
 * gateway sees the same model llama-swap will route on. Every sniffer is fed the chunks in
 * order and reports `done` as soon as it knows the answer, so forwarding can start before a
 * large upload has fully arrived.
 */

export interface ModelSniffer {
  /** Feeds the next chunk; returns true once the answer is known (no more chunks needed). */
  feed(chunk: Buffer): boolean;
  /** The model once known, `undefined` when the body has none (call after `feed` said done or the body ended). */
  readonly model: string | undefined;
}

export function snifferFor(contentType: string | undefined): ModelSniffer | undefined {
  const type = (contentType ?? '').toLowerCase();
  if (type.includes('application/json')) return new JsonModelSniffer();
  if (type.startsWith('multipart/form-data')) {
    const boundary = /boundary=(?:"([^"]+)"|([^;\s]+))/i.exec(contentType ?? '');
    const value = boundary?.[1] ?? boundary?.[2];
    return value ? new MultipartModelSniffer(value) : undefined;
  }
  if (type.startsWith('application/x-www-form-urlencoded')) return new UrlEncodedModelSniffer();
  return undefined;
}

const enum Json {
  /** Before the top-level `{`. */
  Start,
  /** Inside the top-level object, expecting a key or `}`. */
  ExpectKey,
  InKey,
  /** After a key, before `:`. */
  AfterKey,
  /** After `:`, before the value starts. */
  ExpectValue,
  /** Reading the string value of `model`. */
  InModelValue,
  /** Skipping any other value (tracks nesting and strings). */
  SkipValue,
  Done,
}

const MAX_MODEL_BYTES = 1024;

/**
 * A byte-level state machine over the top-level object only: nested values are skipped by
 * depth counting, so `{"messages":[{"model":"x"}],"model":"y"}` yields `y`. It stops at the
 * first top-level `model` key (Go's gjson, which llama-swap uses, does the same).
 */
export class JsonModelSniffer implements ModelSniffer {
  model: string | undefined;
  private state = Json.Start;
  private inString = false;
  private escaped = false;
  private depth = 0;
  private key: number[] = [];
  private keyIsModel = false;
  private value: number[] = [];

  feed(chunk: Buffer): boolean {
    for (let i = 0; i < chunk.length; i++) {
      if (this.state === Json.Done) return true;
      const c = chunk[i]!;
      switch (this.state) {
        case Json.Start:
          if (c === 0x7b /* { */) this.state = Json.ExpectKey;
          else if (!isSpace(c)) this.finish(undefined);
          break;
        case Json.ExpectKey:
          if (c === 0x22 /* " */) {
            this.state = Json.InKey;
            this.key = [];
          } else if (c === 0x7d /* } */) this.finish(undefined);
          break;
        case Json.InKey:
          if (this.escaped) {
            this.escaped = false;
            this.key.push(c);
          } else if (c === 0x5c /* \ */) this.escaped = true;
          else if (c === 0x22) {
            this.keyIsModel = this.key.length === 5 && Buffer.from(this.key).toString('latin1') === 'model';
            this.state = Json.AfterKey;
          } else if (this.key.length < 8) this.key.push(c);
          else this.key.push(0); // long keys are never `model`; keep the length only
          break;
        case Json.AfterKey:
          if (c === 0x3a /* : */) this.state = Json.ExpectValue;
          break;
        case Json.ExpectValue:
          if (isSpace(c)) break;
          if (this.keyIsModel && c === 0x22) {
            this.state = Json.InModelValue;
            this.value = [];
          } else if (this.keyIsModel) {
            this.finish(undefined); // `"model": null` or a number: no usable model
          } else {
            this.state = Json.SkipValue;
            this.depth = 0;
            this.inString = false;
            i--; // re-read this byte as the first byte of the skipped value
          }
          break;
        case Json.InModelValue:
          if (this.escaped) {
            this.escaped = false;
            this.value.push(0x5c, c);
          } else if (c === 0x5c) this.escaped = true;
          else if (c === 0x22) this.finish(decodeJsonString(this.value));
          else if (this.value.length > MAX_MODEL_BYTES) this.finish(undefined);
          else this.value.push(c);
          break;
        case Json.SkipValue:
          if (this.inString) {
            if (this.escaped) this.escaped = false;
            else if (c === 0x5c) this.escaped = true;
            else if (c === 0x22) this.inString = false;
          } else if (c === 0x22) this.inString = true;
          else if (c === 0x7b || c === 0x5b) this.depth++;
          else if (c === 0x7d || c === 0x5d) {
            if (this.depth === 0) this.finish(undefined); // end of the top-level object
            else this.depth--;
          } else if (c === 0x2c /* , */ && this.depth === 0) this.state = Json.ExpectKey;
          break;
      }
    }
    return this.state === Json.Done;
  }

  private finish(model: string | undefined): void {
    this.model = model;
    this.state = Json.Done;
  }
}

function isSpace(c: number): boolean {
  return c === 0x20 || c === 0x0a || c === 0x0d || c === 0x09;
}

function decodeJsonString(bytes: number[]): string | undefined {
  try {
    return JSON.parse(`"${Buffer.from(bytes).toString('utf8')}"`) as string;
  } catch {
    return undefined;
  }
}

/**
 * Looks for the `model` form field across chunk boundaries by keeping a short tail of the
 * previous chunks. The tail is bounded, so a huge file part costs no memory here.
 */
class MultipartModelSniffer implements ModelSniffer {
  model: string | undefined;
  private tail = '';
  private readonly pattern: RegExp;

  constructor(boundary: string) {
    const b = boundary.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
    this.pattern = new RegExp(`content-disposition:[^\\r\\n]*\\bname="?model"?(?:;[^\\r\\n]*)?\\r\\n(?:[^\\r\\n]+\\r\\n)*\\r\\n([^\\r\\n]{0,${MAX_MODEL_BYTES}})\\r\\n--${b}`, 'i');
  }

  feed(chunk: Buffer): boolean {
    const text = this.tail + chunk.toString('latin1');
    const match = this.pattern.exec(text);
    if (match) {
      this.model = Buffer.from(match[1]!, 'latin1').toString('utf8');
      return true;
    }
    this.tail = text.slice(-2 * MAX_MODEL_BYTES);
    return false;
  }
}

class UrlEncodedModelSniffer implements ModelSniffer {
  model: string | undefined;
  private tail = '';

  feed(chunk: Buffer): boolean {
    const text = this.tail + chunk.toString('latin1');
    const match = /(?:^|&)model=([^&]*)&/.exec(text);
    if (match) {
      this.model = decodeForm(match[1]!);
      return true;
    }
    this.tail = text.slice(-2 * MAX_MODEL_BYTES);
    return false;
  }

  /** The last field has no trailing `&`; called when the body ends. */
  end(): void {
    const match = /(?:^|&)model=([^&]*)$/.exec(this.tail);
    if (match) this.model = decodeForm(match[1]!);
  }
}

function decodeForm(value: string): string | undefined {
  try {
    return decodeURIComponent(Buffer.from(value, 'latin1').toString('utf8').replace(/\+/g, ' '));
  } catch {
    return undefined;
  }
}

/** Tells a sniffer the body has ended (only the urlencoded one needs to look back). */
export function endSniffer(sniffer: ModelSniffer): void {
  if (sniffer instanceof UrlEncodedModelSniffer) sniffer.end();
}

/** `?model=` of a GET route, as llama-swap reads it. */
export function modelFromQuery(url: string): string | undefined {
  const q = url.indexOf('?');
  if (q < 0) return undefined;
  const model = new URLSearchParams(url.slice(q + 1)).get('model');
  return model ?? undefined;
}
