/**
 * The operator dashboard: the Vite build in web/dist, served on the gateway's own port.
 *
 *   GET /assets/*        hashed build output, cached for a year (immutable)
 *   GET /<file>          other files of the build (favicon, theme script), revalidated
 *   GET /, /keys, ...    index.html for any other path that accepts text/html (history
 *                        routing in the browser); never for /api/* or /v1/*
 *
 * HTML carries a strict Content-Security-Policy: the dashboard loads nothing from anywhere
 * but this origin. Without a build, GET / answers 503 with a page that says how to build.
 */
import { existsSync } from 'node:fs';
import { readFile, stat } from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';

export interface DashboardOptions {
  /** The build output directory (web/dist). */
  root: string;
}

export const DASHBOARD_CSP = [
  "default-src 'self'",
  "img-src 'self' data:",
  "style-src 'self' 'unsafe-inline'",
  "connect-src 'self'",
  "frame-ancestors 'none'",
].join('; ');

const HTML_HEADERS = {
  'content-type': 'text/html; charset=utf-8',
  'content-security-policy': DASHBOARD_CSP,
  'x-content-type-options': 'nosniff',
  'referrer-policy': 'no-referrer',
} as const;

/** The route that serves the page and its files (the access log leaves its successful reads out). */
export const DASHBOARD_ROUTE_URL = '/*';

const IMMUTABLE_MAX_AGE_MS = 365 * 24 * 3600 * 1000;

const NOT_BUILT_PAGE = `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>Gatehouse: dashboard not built</title>
<style>
  body {
    margin: 0; min-height: 100vh; display: grid; place-items: center;
    font: 15px/1.5 system-ui, sans-serif; background: #f5f6f8; color: #17202b;
  }
  main {
    max-width: 460px; margin: 24px; padding: 32px;
    background: #fff; border: 1px solid #e2e6ec; border-radius: 12px;
  }
  h1 { margin: 0 0 8px; font-size: 20px; }
  code { padding: 1px 5px; border-radius: 4px; background: #eef0f3; }
  @media (prefers-color-scheme: dark) {
    body { background: #0e1115; color: #e5e9ee; }
    main { background: #15191f; border-color: #262c35; }
    code { background: #232932; }
  }
</style>
</head>
<body>
<main>
  <h1>The dashboard is not built</h1>
  <p>Gatehouse is running, but its dashboard has not been built yet.
  Run <code>npm run build</code> in the Gatehouse directory, then reload this page.</p>
  <p>The API under <code>/v1</code> and <code>/api</code> works without it.</p>
</main>
</body>
</html>
`;

/**
 * web/dist of this checkout: found by walking up from this file to the directory holding
 * web/index.html, so it is the same from src/ (tests) and from dist/src/ (compiled).
 */
export function defaultDashboardRoot(): string {
  let dir = path.dirname(fileURLToPath(import.meta.url));
  for (let i = 0; i < 5; i++) {
    if (existsSync(path.join(dir, 'web', 'index.html'))) return path.join(dir, 'web', 'dist');
    dir = path.dirname(dir);
  }
  return path.resolve('web', 'dist');
}

export interface Dashboard {
  /** Answers with the page (index.html), for a route that shares its path with an API (`GET /models`). */
  sendIndex(reply: FastifyReply): Promise<FastifyReply>;
}

export function registerDashboard(app: FastifyInstance, options: DashboardOptions): Dashboard {
  const root = path.resolve(options.root);
  const index = indexLoader(path.join(root, 'index.html'));
  const sendIndex = async (reply: FastifyReply) => {
    const html = await index();
    if (html === undefined)
      return reply.code(503).headers(HTML_HEADERS).header('cache-control', 'no-store').send(NOT_BUILT_PAGE);
    return reply.code(200).headers(HTML_HEADERS).header('cache-control', 'no-cache').send(html);
  };

  // Encapsulated: the app's not-found handler (admin/OpenAI error shapes) still answers what
  // the dashboard does not serve.
  void app.register(async (scope) => {
    scope.get(DASHBOARD_ROUTE_URL, async (request: FastifyRequest, reply: FastifyReply) => {
      const pathname = requestPath(request.url);
      if (pathname === undefined || isApiPath(pathname)) return notFound(reply);
      if (pathname === '/' || pathname === '/index.html') return sendIndex(reply);

      const file = await buildFile(root, pathname);
      if (file !== undefined) {
        // Vite names everything under /assets by content hash: a new build means new names.
        const caching = file.startsWith('assets/')
          ? { maxAge: IMMUTABLE_MAX_AGE_MS, immutable: true }
          : { cacheControl: false };
        const sent = await sendBuildFile(request, reply, root, file, caching);
        if (sent) return sent;
      }
      // A missing hashed asset must not turn into HTML (the browser would report a MIME error).
      if (!pathname.startsWith('/assets/') && acceptsHtml(request)) return sendIndex(reply);
      return notFound(reply);
    });
  });
  return { sendIndex };
}

type Send = typeof import('@fastify/send');
let sendModule: Promise<Send> | undefined;

/**
 * A file of the build with ETag, Last-Modified, conditional GET and ranges (@fastify/send, the
 * engine of @fastify/static). Loaded on the first file request: an operator opens the dashboard
 * now and then, while every gateway would otherwise hold the module (and @fastify/static's glob
 * dependencies) in memory from the start. Undefined when the file vanished since it was found.
 */
async function sendBuildFile(
  request: FastifyRequest,
  reply: FastifyReply,
  root: string,
  file: string,
  caching: { maxAge?: number; immutable?: boolean; cacheControl?: boolean },
): Promise<FastifyReply | undefined> {
  sendModule ??= import('@fastify/send').then((module) => module.default);
  const send = await sendModule;
  // send() URI-decodes the path it is given; `file` is already decoded and checked by buildFile.
  const result = await send(request.raw, encodeURI(`/${file}`), { root, dotfiles: 'deny', index: false, ...caching });
  if (result.type !== 'file') {
    result.stream.destroy();
    return undefined;
  }
  reply.code(result.statusCode).headers(result.headers).header('x-content-type-options', 'nosniff');
  if (caching.cacheControl === false) reply.header('cache-control', 'no-cache');
  return reply.send(result.stream);
}

/** The app's own 404 (its not-found handler renders the right error shape for the path). */
function notFound(reply: FastifyReply): FastifyReply {
  reply.callNotFound();
  return reply;
}

function isApiPath(pathname: string): boolean {
  return pathname === '/api' || pathname.startsWith('/api/') || pathname === '/v1' || pathname.startsWith('/v1/');
}

export function acceptsHtml(request: FastifyRequest): boolean {
  const accept = request.headers.accept;
  return typeof accept === 'string' && accept.toLowerCase().includes('text/html');
}

/** The decoded path without query; undefined when it cannot be decoded or holds a NUL. */
function requestPath(url: string): string | undefined {
  const raw = url.split('?', 1)[0] ?? '/';
  try {
    const decoded = decodeURIComponent(raw);
    return decoded.includes('\0') ? undefined : decoded;
  } catch {
    return undefined;
  }
}

/** The build file for a request path (relative to root), if it exists; never a dotfile or a directory. */
async function buildFile(root: string, pathname: string): Promise<string | undefined> {
  const relative = path.posix.normalize(pathname).replace(/^\/+/, '');
  if (relative === '' || relative.split('/').some((segment) => segment.startsWith('.'))) return undefined;
  const absolute = path.join(root, relative);
  if (!absolute.startsWith(root + path.sep)) return undefined;
  try {
    return (await stat(absolute)).isFile() ? relative : undefined;
  } catch {
    return undefined;
  }
}

/** index.html, re-read when the build changes (a rebuild must not need a restart). */
function indexLoader(file: string): () => Promise<string | undefined> {
  let cached: { mtimeMs: number; size: number; html: string } | undefined;
  return async () => {
    try {
      const info = await stat(file);
      if (!cached || cached.mtimeMs !== info.mtimeMs || cached.size !== info.size) {
        cached = { mtimeMs: info.mtimeMs, size: info.size, html: await readFile(file, 'utf8') };
      }
      return cached.html;
    } catch {
      cached = undefined;
      return undefined;
    }
  };
}
