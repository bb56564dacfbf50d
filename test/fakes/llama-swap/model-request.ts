/**
 * llama-swap's model extraction (`swaputil/http.go` `extractContext`), through the gateway's
 * own request reader (src/proxy/request-model.ts), so the simulator and the gateway cannot
 * disagree about which model a body names: GET reads `?model=`, a POST whose Content-Type
 * *contains* `application/json` reads the first top-level `model` (gjson), any other POST goes
 * through Go's form parsing. Where the gateway gives no certain answer the simulator uses its
 * best guess of llama-swap's reading (the first `model`), or finds none.
 */
import type { JsonMember, ModelReading } from '../../../src/core/context.js';
import { bodyModelReader, modelFromGet } from '../../../src/proxy/request-model.js';

export interface ExtractedModel {
  model: string;
  stream: boolean;
}

/** Returns `undefined` when no model can be identified (→ 404 `no model id could be identified`). */
export function extractModel(
  method: string,
  contentType: string,
  rawQuery: string,
  body: Buffer,
): ExtractedModel | undefined {
  let reading: ModelReading;
  let stream = false;
  if (method === 'GET') {
    reading = modelFromGet(rawQuery);
    stream = new URLSearchParams(rawQuery).get('stream') === 'true';
  } else {
    const reader = bodyModelReader(method, contentType, rawQuery);
    reader.feed(body);
    reading = reader.end();
    if (reader.json) stream = gjsonBool(reader.json.get('stream'));
    else if (!contentType.includes('application/json')) stream = formStream(contentType, rawQuery, body);
  }
  const model = reading.status === 'found' ? reading.model : reading.status === 'uncertain' ? reading.guess : undefined;
  return model === undefined || model === '' ? undefined : { model, stream };
}

/** `r.FormValue("stream") == "true"` for the simple bodies the simulator's tests send. */
function formStream(contentType: string, rawQuery: string, body: Buffer): boolean {
  const fromBody = contentType.startsWith('application/x-www-form-urlencoded')
    ? new URLSearchParams(body.toString('utf8')).get('stream')
    : null;
  return (fromBody ?? new URLSearchParams(rawQuery).get('stream')) === 'true';
}

/** gjson `.Bool()`: true, non-zero numbers, and strings strconv.ParseBool accepts as true. */
function gjsonBool(member: JsonMember | undefined): boolean {
  if (!member || member.text === undefined) return false;
  if (member.kind === 'true') return true;
  if (member.kind === 'number') return Number(member.text) !== 0;
  if (member.kind === 'string') return ['1', 't', 'T', 'TRUE', 'true', 'True'].includes(member.text);
  return false;
}

export function parseJsonLoose(body: Buffer): unknown {
  try {
    return JSON.parse(body.toString('utf8'));
  } catch {
    return undefined;
  }
}
