/** A call the gateway answers itself with JSON (a model list, an Ollama door reply), counted as sent. */
import { QUEUE_MS_HEADER, type ProxyContext } from '../core/context.js';

export function answerJson(ctx: ProxyContext, body: unknown): 'handled' {
  const payload = JSON.stringify(body);
  const bytes = Buffer.byteLength(payload);
  const head = ctx.request.method === 'HEAD';
  ctx.outcome.answer(200);
  ctx.res.writeHead(200, {
    'content-type': 'application/json; charset=utf-8',
    'content-length': bytes,
    'x-request-id': ctx.request.requestId,
    [QUEUE_MS_HEADER]: '0',
  });
  ctx.res.end(head ? undefined : payload);
  ctx.outcome.sent(head ? 0 : bytes);
  return 'handled';
}
