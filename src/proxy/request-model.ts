/**
 * Which model a call asks for, read exactly as llama-swap reads it (`extractContext` in
 * `internal/swaputil/http.go`; rules and sources in docs/model-reading.md):
 * - GET: the first `model` of the query (`r.URL.Query().Get`);
 * - other methods, Content-Type containing `application/json` (case-sensitive): gjson's
 *   `GetBytes(body, "model")` — the request JSON reader;
 * - Content-Type containing `multipart/form-data`: `r.FormValue("model")` after
 *   `ParseMultipartForm` — query values first, then the form's;
 * - anything else: `r.FormValue("model")` after `ParseForm` — an urlencoded body's values first
 *   (POST, PUT, PATCH), then the query's.
 *
 * The answer is `found`, `absent` (llama-swap would find no model and answer 404) or
 * `uncertain`: the body could not be read with certainty, or it names two different models. A
 * key limited to some models is refused for anything but `found`.
 */
import { parseGoQuery, parseMediaType, type GoQuery } from './go-form.js';
import { MultipartFieldReader } from './multipart-fields.js';
import { OUTPUT_LIMIT_FIELDS, type JsonMember, type ModelReading } from '../core/context.js';
import { RequestJsonReader } from './request-json.js';

/** Top-level JSON members read besides `model` (token reservations, stream flag). */
export const JSON_MEMBERS = ['model', 'stream', ...OUTPUT_LIMIT_FIELDS] as const;
const WANTED: ReadonlySet<string> = new Set(JSON_MEMBERS);

/** Reads a body as it arrives; `end` gives the reading once the whole body was fed. */
export interface BodyModelReader {
  feed(chunk: Buffer): void;
  end(): ModelReading;
  /** The JSON members read (JSON bodies only, after `end`). */
  readonly json: ReadonlyMap<string, JsonMember> | undefined;
}

/** Go's form parsing reads at most this much of an urlencoded body (`ParseForm`). */
const MAX_FORM_BYTES = 10 * 1024 * 1024;

export function modelFromGet(rawQuery: string): ModelReading {
  const query = parseGoQuery(rawQuery);
  if (query.error || query.notUtf8)
    return uncertain('the query string cannot be read with certainty', query.values.get('model')?.[0]);
  return fromValues(query.values.get('model') ?? []);
}

/** A reader for a request with a body (any method but GET). */
export function bodyModelReader(method: string, contentType: string | undefined, rawQuery: string): BodyModelReader {
  const type = contentType ?? '';
  const query = parseGoQuery(rawQuery);
  if (type.includes('application/json')) return new JsonBody(query);
  if (type.includes('multipart/form-data')) return new MultipartBody(type, query);
  return new FormBody(method, type, query);
}

class JsonBody implements BodyModelReader {
  private readonly reader = new RequestJsonReader(WANTED);
  json: ReadonlyMap<string, JsonMember> | undefined;

  constructor(private readonly query: GoQuery) {}

  feed(chunk: Buffer): void {
    this.reader.feed(chunk);
  }

  end(): ModelReading {
    const reading = this.reader.end();
    if (!reading.valid) return uncertain(`the body is not valid JSON (${reading.reason})`);
    this.json = reading.members;
    const member = reading.members.get('model');
    const fromBody = jsonModel(member);
    // llama-swap ignores the query here; a query naming another model is still a second answer.
    const other = this.query.values
      .get('model')
      ?.find((m) => m !== '' && fromBody.status === 'found' && m !== fromBody.model);
    if (other !== undefined)
      return uncertain(
        'the query and the body name different models',
        fromBody.status === 'found' ? fromBody.model : undefined,
      );
    return fromBody;
  }
}

function jsonModel(member: JsonMember | undefined): ModelReading {
  if (member === undefined || member.kind === 'null') return { status: 'absent' };
  if (member.conflicting) return uncertain('the body has more than one "model" member', member.text);
  if (member.kind !== 'string') return uncertain('"model" is not a string', member.text);
  if (member.text === undefined) return uncertain('"model" is too long or not UTF-8');
  return member.text === '' ? { status: 'absent' } : { status: 'found', model: member.text };
}

class MultipartBody implements BodyModelReader {
  private readonly fields: MultipartFieldReader | undefined;
  readonly json = undefined;

  constructor(
    contentType: string,
    private readonly query: GoQuery,
  ) {
    const media = parseMediaType(contentType);
    const boundary =
      media?.type === 'multipart/form-data' && !media.extended.has('boundary')
        ? media.params.get('boundary')
        : undefined;
    this.fields = boundary ? new MultipartFieldReader(boundary, 'model') : undefined;
  }

  feed(chunk: Buffer): void {
    this.fields?.feed(chunk);
  }

  end(): ModelReading {
    if (!this.fields) return uncertain('the multipart Content-Type cannot be read with certainty');
    const reading = this.fields.end();
    if (!reading.readable) return uncertain(`the multipart body cannot be read with certainty (${reading.reason})`);
    if (this.query.error || this.query.notUtf8) return uncertain('the query string cannot be read with certainty');
    return fromValues([...(this.query.values.get('model') ?? []), ...reading.values]);
  }
}

class FormBody implements BodyModelReader {
  private readonly chunks: Buffer[] | undefined;
  private bytes = 0;
  private tooLarge = false;
  private readonly unreadableType: boolean;
  readonly json = undefined;

  constructor(
    method: string,
    contentType: string,
    private readonly query: GoQuery,
  ) {
    // Go reads a form body only for these methods and this media type (`parsePostForm`).
    const media = contentType === '' ? undefined : parseMediaType(contentType);
    this.unreadableType = contentType !== '' && media === undefined;
    const parsesBody =
      (method === 'POST' || method === 'PUT' || method === 'PATCH') &&
      media?.type === 'application/x-www-form-urlencoded';
    this.chunks = parsesBody ? [] : undefined;
  }

  feed(chunk: Buffer): void {
    if (!this.chunks || this.tooLarge) return;
    this.bytes += chunk.length;
    if (this.bytes > MAX_FORM_BYTES) this.tooLarge = true;
    else this.chunks.push(chunk);
  }

  end(): ModelReading {
    if (this.unreadableType) return uncertain('the Content-Type cannot be read with certainty');
    if (this.tooLarge) return uncertain('the form body is larger than llama-swap reads');
    let bodyValues: string[] = [];
    if (this.chunks) {
      const form = parseGoQuery(Buffer.concat(this.chunks).toString('latin1'));
      if (form.error || form.notUtf8)
        return uncertain('the form body cannot be read with certainty', form.values.get('model')?.[0]);
      bodyValues = form.values.get('model') ?? [];
    }
    if (this.query.error || this.query.notUtf8) return uncertain('the query string cannot be read with certainty');
    return fromValues([...bodyValues, ...(this.query.values.get('model') ?? [])]);
  }
}

/** `FormValue`: the first value; two different non-empty values are not one answer. */
function fromValues(values: readonly string[]): ModelReading {
  const first = values[0];
  if (first === undefined || first === '') {
    return values.some((v) => v !== '')
      ? uncertain(
          'the call names a model after an empty one',
          values.find((v) => v !== ''),
        )
      : { status: 'absent' };
  }
  if (values.some((v) => v !== first)) return uncertain('the call names more than one model', first);
  return { status: 'found', model: first };
}

function uncertain(reason: string, guess?: string): ModelReading {
  return { status: 'uncertain', reason, guess: guess === '' ? undefined : guess };
}
