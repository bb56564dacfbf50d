/**
 * The Ollama listener's handler (`GATEHOUSE_OLLAMA_LISTEN`, docs/ollama.md): `GET /` and
 * `/api/version` answer at once, as Ollama does, without a key; every other call walks the
 * `/v1` corridor with the door's own steps in front (src/ollama), in Ollama's wire format.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import { createProxyRoute, type ProxyRouteOptions } from './proxy-route.js';

/** The Ollama API version the door answers as (clients gate features on it). */
const OLLAMA_API_VERSION = '0.12.0';

export function createOllamaRoute(options: ProxyRouteOptions): (req: IncomingMessage, res: ServerResponse) => void {
  const chain = createProxyRoute({ ...options, format: 'ollama' });
  return function ollamaRoute(req, res) {
    const url = req.url ?? '/';
    const path = url.split('?')[0];
    if (path === '/' && (req.method === 'GET' || req.method === 'HEAD')) {
      return answer(res, req.method, 'text/plain; charset=utf-8', 'Ollama is running');
    }
    if (path === '/api/version' && (req.method === 'GET' || req.method === 'HEAD')) {
      return answer(
        res,
        req.method,
        'application/json; charset=utf-8',
        JSON.stringify({ version: OLLAMA_API_VERSION }),
      );
    }
    chain(req, res);
  };
}

function answer(res: ServerResponse, method: string, type: string, body: string): void {
  res.writeHead(200, { 'content-type': type, 'content-length': Buffer.byteLength(body) });
  res.end(method === 'HEAD' ? undefined : body);
}
