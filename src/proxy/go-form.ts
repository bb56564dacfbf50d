/**
 * The parts of Go's standard library llama-swap reads a model with, for the inputs where we can
 * be sure to agree with it: `net/url.ParseQuery` (query strings and urlencoded bodies) and
 * `mime.ParseMediaType` (Content-Type and Content-Disposition). Where Go would do something
 * subtle (RFC 2231 parameters, stray backslashes) the media-type reader gives up instead.
 */
import { decodeUtf8 } from './utf8.js';

export interface GoQuery {
  /** Values per key, in order, as `url.Values`. */
  values: Map<string, string[]>;
  /** Go's ParseQuery reported an error (the pair was skipped; `ParseForm` fails with it). */
  error: boolean;
  /** A decoded key or value was not valid UTF-8 (Go keeps the bytes; we cannot compare them). */
  notUtf8: boolean;
}

/** More pairs than this are not read (Go limits them too); the caller treats that as unreadable. */
const MAX_QUERY_PAIRS = 1000;

/**
 * `url.ParseQuery`: `&`-separated pairs, `;` refused, `+` is a space, `%XX` must be valid.
 * `raw` holds one byte per character (latin1), as Node gives a request's URL.
 */
const NO_QUERY: GoQuery = Object.freeze({ values: new Map<string, string[]>(), error: false, notUtf8: false });

export function parseGoQuery(raw: string): GoQuery {
  if (raw === '') return NO_QUERY;
  const values = new Map<string, string[]>();
  let error = false;
  let notUtf8 = false;
  let pairs = 0;
  for (const piece of raw.split('&')) {
    if (piece.includes(';')) {
      error = true;
      continue;
    }
    if (piece === '') continue;
    if (++pairs > MAX_QUERY_PAIRS) {
      error = true;
      break;
    }
    const eq = piece.indexOf('=');
    const key = queryUnescape(eq < 0 ? piece : piece.slice(0, eq));
    const value = queryUnescape(eq < 0 ? '' : piece.slice(eq + 1));
    if (key === null || value === null) {
      error = true;
      continue;
    }
    if (key === undefined || value === undefined) {
      notUtf8 = true;
      continue;
    }
    const list = values.get(key);
    if (list) list.push(value);
    else values.set(key, [value]);
  }
  return { values, error, notUtf8 };
}

/** `url.QueryUnescape`; `null` for Go's escape error, `undefined` for bytes that are not UTF-8. */
function queryUnescape(s: string): string | null | undefined {
  const bytes: number[] = [];
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    if (c === 0x25) {
      const hex = s.slice(i + 1, i + 3);
      if (!/^[0-9a-fA-F]{2}$/.test(hex)) return null;
      bytes.push(parseInt(hex, 16));
      i += 2;
    } else if (c === 0x2b) bytes.push(0x20);
    else if (c <= 0xff) bytes.push(c);
    else for (const b of Buffer.from(s[i]!, 'utf8')) bytes.push(b);
  }
  return decodeUtf8(Buffer.from(bytes));
}

export interface MediaType {
  /** Lower-cased, like Go's. */
  type: string;
  /** Parameter names lower-cased; values as sent (quotes removed). */
  params: Map<string, string>;
  /** Parameter names that use RFC 2231 (`name*=`), which Go decodes and we do not. */
  extended: Set<string>;
}

const TOKEN = /^[!#$%&'*+\-.^_`|~0-9A-Za-z]+$/;

/**
 * `mime.ParseMediaType` for plain inputs: `type/sub; a=token; b="quoted"`. Returns `undefined`
 * for anything Go would refuse or read in a way we do not reproduce (duplicates, a backslash
 * inside a quoted value, RFC 2231 continuations), so the caller can treat it as unreadable.
 */
export function parseMediaType(value: string, { disposition = false } = {}): MediaType | undefined {
  const semi = value.indexOf(';');
  const type = (semi < 0 ? value : value.slice(0, semi)).trim().toLowerCase();
  if (disposition ? !TOKEN.test(type) : !/^[!#$%&'*+\-.^_`|~0-9a-z]+\/[!#$%&'*+\-.^_`|~0-9a-z]+$/.test(type))
    return undefined;
  const params = new Map<string, string>();
  const extended = new Set<string>();
  let rest = semi < 0 ? '' : value.slice(semi);
  while (rest.trim() !== '') {
    const m = /^\s*;\s*([!#$%&'*+\-.^_`|~0-9A-Za-z]+)\s*=\s*("((?:[^"\\])*)"|[!#$%&'*+\-.^_`|~0-9A-Za-z]+)\s*/.exec(
      rest,
    );
    if (!m) return undefined;
    const name = m[1]!.toLowerCase();
    if (params.has(name)) return undefined;
    if (name.includes('*')) extended.add(name.slice(0, name.indexOf('*')));
    params.set(name, m[3] ?? m[2]!);
    rest = rest.slice(m[0].length);
  }
  return { type, params, extended };
}
