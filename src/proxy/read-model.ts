/**
 * The `readModel` step: learns which model a call asks for, the way llama-swap will
 * (JSON `model`, a form field, or `?model=`), and prepares the body for forwarding.
 */
import type { ProxyContext } from './context.js';
import { modelFromQuery, snifferFor } from './model-sniffer.js';
import { readBodyHead } from './request-body.js';

export function readModel(bodyLimitBytes: number) {
  if (!Number.isSafeInteger(bodyLimitBytes) || bodyLimitBytes < 1) throw new Error('readModel: bodyLimitBytes must be a positive integer');
  return async function readModelStep(ctx: ProxyContext): Promise<void> {
    if (ctx.method === 'GET' || ctx.method === 'HEAD') {
      ctx.model = modelFromQuery(ctx.url);
      return;
    }
    const sniffer = snifferFor(ctx.req.headers['content-type']);
    ctx.body = await readBodyHead(ctx.req, bodyLimitBytes, sniffer);
    ctx.model = ctx.body.model ?? modelFromQuery(ctx.url);
  };
}
