/**
 * Model extraction of contract §1.1 (`swaputil/http.go` `extractContext`): GET reads `?model=`,
 * a POST whose Content-Type *contains* `application/json` reads the JSON `model` field (gjson
 * semantics: invalid JSON simply yields nothing), any other POST goes through Go's form parsing.
 */
import { parseMultipart } from './multipart.js';

export interface ExtractedModel {
  model: string;
  stream: boolean;
}

/** Returns `undefined` when no model can be identified (→ 404 `no model id could be identified`). */
export function extractModel(method: string, contentType: string, query: URLSearchParams, body: Buffer): ExtractedModel | undefined {
  let model = '';
  let stream = false;
  if (method === 'GET') {
    model = query.get('model') ?? '';
    stream = query.get('stream') === 'true';
  } else if (contentType.includes('application/json')) {
    const parsed = parseJsonLoose(body);
    if (isRecord(parsed)) {
      model = gjsonString(parsed.model);
      stream = gjsonBool(parsed.stream);
    }
  } else {
    const form = goFormValues(contentType, query, body);
    if (form === undefined) return undefined;
    model = form.get('model') ?? '';
    stream = form.get('stream') === 'true';
  }
  return model === '' ? undefined : { model, stream };
}

/**
 * `r.FormValue` after `ParseMultipartForm`/`ParseForm`: the first value of `r.Form`, where a
 * urlencoded body comes before the query, and multipart fields come after it. Returns
 * `undefined` when Go's parser would fail.
 */
function goFormValues(contentType: string, query: URLSearchParams, body: Buffer): Map<string, string> | undefined {
  const values = new Map<string, string>();
  const add = (k: string, v: string) => {
    if (!values.has(k)) values.set(k, v);
  };
  if (contentType.includes('multipart/form-data')) {
    let parts;
    try {
      parts = parseMultipart(body, contentType);
    } catch {
      return undefined;
    }
    for (const [k, v] of query) add(k, v);
    for (const part of parts) if (part.filename === undefined) add(part.name, part.data.toString('utf8'));
    return values;
  }
  const mediaType = contentType.split(';')[0]?.trim().toLowerCase() ?? '';
  if (mediaType === 'application/x-www-form-urlencoded') {
    for (const [k, v] of new URLSearchParams(body.toString('utf8'))) add(k, v);
  }
  for (const [k, v] of query) add(k, v);
  return values;
}

export function parseJsonLoose(body: Buffer): unknown {
  try {
    return JSON.parse(body.toString('utf8'));
  } catch {
    return undefined;
  }
}

/** gjson `.String()`: strings as-is, numbers/bools as text, objects/arrays as raw JSON, null → "". */
function gjsonString(v: unknown): string {
  if (v === undefined || v === null) return '';
  if (typeof v === 'string') return v;
  if (typeof v === 'number' || typeof v === 'boolean') return String(v);
  return JSON.stringify(v);
}

/** gjson `.Bool()`: true, non-zero numbers, and strings strconv.ParseBool accepts as true. */
function gjsonBool(v: unknown): boolean {
  if (v === true) return true;
  if (typeof v === 'number') return v !== 0;
  if (typeof v === 'string') return ['1', 't', 'T', 'TRUE', 'true', 'True'].includes(v);
  return false;
}

function isRecord(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}
