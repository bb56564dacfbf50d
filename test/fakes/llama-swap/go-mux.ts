/**
 * A Go 1.22 `http.ServeMux` look-alike: `METHOD /path/{name}/{rest...}` patterns, `/{$}` for an
 * exact root, trailing-slash subtrees, most-specific-wins, 405 + `Allow` for a known path with the
 * wrong method, HEAD answered by GET patterns, clean-path and subtree redirects, plain-text 404.
 * Only what llama-swap's route table uses is implemented (no host patterns).
 */
import type { ServerResponse } from 'node:http';

type Segment =
  | { kind: 'literal'; value: string }
  | { kind: 'wild'; name: string }
  | { kind: 'multi'; name: string }
  | { kind: 'end' };

interface Route<H> {
  method: string | undefined;
  pattern: string;
  segments: Segment[];
  handler: H;
  rank: number[];
}

export type MuxResult<H> =
  | { kind: 'match'; handler: H; pattern: string; params: Record<string, string> }
  | { kind: 'not-found' }
  | { kind: 'method-not-allowed'; allow: string }
  | { kind: 'redirect'; location: string; status: 301 };

export class GoMux<H> {
  private readonly routes: Route<H>[] = [];

  handle(pattern: string, handler: H): void {
    const space = pattern.indexOf(' ');
    const method = space > 0 ? pattern.slice(0, space) : undefined;
    const path = space > 0 ? pattern.slice(space + 1) : pattern;
    const segments = parsePattern(path);
    const rank = segments.map((s) => (s.kind === 'literal' || s.kind === 'end' ? 3 : s.kind === 'wild' ? 2 : 1));
    this.routes.push({ method, pattern, segments, handler, rank });
  }

  /** `escapedPath` is the raw request path without the query. */
  match(method: string, escapedPath: string, rawQuery: string): MuxResult<H> {
    const cleaned = cleanPath(escapedPath);
    if (cleaned !== escapedPath && method !== 'CONNECT') {
      return { kind: 'redirect', location: cleaned + (rawQuery ? `?${rawQuery}` : ''), status: 301 };
    }
    const pathSegs = escapedPath.slice(1).split('/');
    const byPath: Array<{ route: Route<H>; params: Record<string, string> }> = [];
    for (const route of this.routes) {
      const params = matchSegments(route.segments, pathSegs);
      if (params) byPath.push({ route, params });
    }
    const byMethod = byPath.filter(({ route }) => methodMatches(route.method, method));
    if (byMethod.length > 0) {
      byMethod.sort((a, b) => compareRoutes(b.route, a.route));
      const best = byMethod[0]!;
      return { kind: 'match', handler: best.route.handler, pattern: best.route.pattern, params: best.params };
    }
    if (byPath.length === 0 && !escapedPath.endsWith('/')) {
      // A subtree root named without its trailing slash redirects (`/ui` → `/ui/`).
      const withSlash = (escapedPath + '/').slice(1).split('/');
      const subtree = this.routes.some(
        (r) => r.segments.at(-1)?.kind === 'multi' && matchSegments(r.segments, withSlash) !== undefined,
      );
      if (subtree)
        return { kind: 'redirect', location: escapedPath + '/' + (rawQuery ? `?${rawQuery}` : ''), status: 301 };
    }
    if (byPath.length > 0) {
      const methods = new Set<string>();
      for (const { route } of byPath) {
        if (route.method === undefined) continue;
        methods.add(route.method);
        if (route.method === 'GET') methods.add('HEAD');
      }
      return { kind: 'method-not-allowed', allow: [...methods].sort().join(', ') };
    }
    return { kind: 'not-found' };
  }
}

function parsePattern(path: string): Segment[] {
  if (!path.startsWith('/')) throw new Error(`pattern must start with /: ${path}`);
  const parts = path.slice(1).split('/');
  const segments: Segment[] = [];
  parts.forEach((part, i) => {
    const last = i === parts.length - 1;
    if (part === '' && last) {
      // Trailing slash: an anonymous subtree (`/ui/` matches `/ui/anything`).
      segments.push({ kind: 'multi', name: '' });
    } else if (part === '{$}') {
      segments.push({ kind: 'end' });
    } else if (part.startsWith('{') && part.endsWith('...}')) {
      segments.push({ kind: 'multi', name: part.slice(1, -4) });
    } else if (part.startsWith('{') && part.endsWith('}')) {
      segments.push({ kind: 'wild', name: part.slice(1, -1) });
    } else {
      segments.push({ kind: 'literal', value: part });
    }
  });
  return segments;
}

function matchSegments(pattern: Segment[], pathSegs: string[]): Record<string, string> | undefined {
  const params: Record<string, string> = {};
  for (let i = 0; i < pattern.length; i++) {
    const ps = pattern[i]!;
    if (ps.kind === 'multi') {
      if (i >= pathSegs.length) return undefined;
      if (ps.name) params[ps.name] = safeDecode(pathSegs.slice(i).join('/'));
      return params;
    }
    if (ps.kind === 'end') {
      return i === pathSegs.length - 1 && pathSegs[i] === '' ? params : undefined;
    }
    const seg = pathSegs[i];
    if (seg === undefined) return undefined;
    const decoded = safeDecode(seg);
    if (ps.kind === 'literal') {
      if (decoded !== ps.value) return undefined;
    } else {
      if (decoded === '') return undefined;
      params[ps.name] = decoded;
    }
  }
  return pattern.length === pathSegs.length ? params : undefined;
}

function methodMatches(routeMethod: string | undefined, method: string): boolean {
  if (routeMethod === undefined) return true;
  return routeMethod === method || (routeMethod === 'GET' && method === 'HEAD');
}

function compareRoutes(a: Route<unknown>, b: Route<unknown>): number {
  const n = Math.max(a.rank.length, b.rank.length);
  for (let i = 0; i < n; i++) {
    const d = (a.rank[i] ?? 0) - (b.rank[i] ?? 0);
    if (d !== 0) return d;
  }
  return (a.method ? 1 : 0) - (b.method ? 1 : 0);
}

function safeDecode(s: string): string {
  try {
    return decodeURIComponent(s);
  } catch {
    return s;
  }
}

/** Go's `cleanPath`: resolve `.`/`..`, collapse `//`, keep a trailing slash. */
function cleanPath(p: string): string {
  if (p === '') return '/';
  const out: string[] = [];
  for (const part of p.split('/')) {
    if (part === '' || part === '.') continue;
    if (part === '..') out.pop();
    else out.push(part);
  }
  let cleaned = '/' + out.join('/');
  if ((p.endsWith('/') || p.endsWith('/.') || p.endsWith('/..')) && cleaned !== '/') cleaned += '/';
  return cleaned;
}

/** Go's `http.Error`: plain text, nosniff, trailing newline. */
export function goHttpError(
  res: ServerResponse,
  status: number,
  text: string,
  headers: Record<string, string> = {},
): void {
  const body = `${text}\n`;
  res.writeHead(status, {
    ...headers,
    'Content-Type': 'text/plain; charset=utf-8',
    'X-Content-Type-Options': 'nosniff',
    'Content-Length': Buffer.byteLength(body),
  });
  res.end(body);
}

const STATUS_TEXT: Record<number, string> = { 301: 'Moved Permanently', 302: 'Found', 308: 'Permanent Redirect' };

/** Go's `http.Redirect`: a tiny HTML body for GET/HEAD, none otherwise. */
export function goRedirect(res: ServerResponse, method: string, location: string, status: 301 | 302 | 308): void {
  if (method === 'GET' || method === 'HEAD') {
    const body = `<a href="${escapeHtml(location)}">${STATUS_TEXT[status]}</a>.\n\n`;
    res.writeHead(status, {
      Location: location,
      'Content-Type': 'text/html; charset=utf-8',
      'Content-Length': Buffer.byteLength(body),
    });
    res.end(body);
  } else {
    res.writeHead(status, { Location: location, 'Content-Length': 0 });
    res.end();
  }
}

function escapeHtml(s: string): string {
  return s.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);
}
