/**
 * The floor (a child process of the bench): the barest pass-through any Node gateway is held
 * against. http.createServer + http.request on a keep-alive Agent, bodies piped both ways,
 * headers copied as they are; no routing, no header hygiene, no logging.
 *
 * One addition: SSE response headers are flushed at once, as the gateway does. Without it the
 * floor's time to first byte would measure the upstream's delay to its first event, not proxying.
 *
 * Usage: node dist/bench/floor-proxy.js http://127.0.0.1:UPSTREAM_PORT
 */
import { Agent, createServer, request } from 'node:http';
import { announceListening } from './child-ipc.js';

const target = new URL(process.argv[2] ?? '');
const agent = new Agent({ keepAlive: true, maxSockets: Infinity, maxFreeSockets: 1024 });

const server = createServer((req, res) => {
  const upstreamReq = request(
    { host: target.hostname, port: target.port, method: req.method, path: req.url, headers: req.headers, agent },
    (upstreamRes) => {
      res.writeHead(upstreamRes.statusCode ?? 502, upstreamRes.headers);
      if (upstreamRes.headers['content-type']?.startsWith('text/event-stream')) res.flushHeaders();
      upstreamRes.pipe(res);
    },
  );
  upstreamReq.on('error', () => {
    if (!res.headersSent) res.writeHead(502).end();
    else res.destroy();
  });
  res.on('close', () => {
    if (!res.writableFinished) upstreamReq.destroy();
  });
  req.pipe(upstreamReq);
});
// The client-facing keep-alive timeout stays at Node's default, as the gateway's does.
server.listen(0, '127.0.0.1', () => announceListening(server));
