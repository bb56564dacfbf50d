/**
 * The `readModel` step: receives the whole body (request-body.ts) and reads the model from it
 * as llama-swap will (request-model.ts). `ctx.decided.modelReading` keeps the full answer for the
 * allow-list; `ctx.decided.model` is what usage and logs attribute the call to.
 */
import {
  shareHolder,
  type BodyHead,
  type CallerIdentity,
  type ModelReading,
  type ProxyContext,
} from '../core/context.js';
import { bodyModelReader, modelFromGet } from './request-model.js';
import { hasBody, receiveBody } from './request-body.js';
import { SpoolBudget, type SpoolLimits } from './spool-budget.js';

export interface ReadModelOptions {
  bodyLimitBytes: number;
  bodyTimeoutMs: number;
  /** Where bodies too large for memory are spooled while they arrive: this process's own (spool-dir.ts). */
  spoolDir: string;
  /** How much may be spooled at once, in all and per key (spool-budget.ts). */
  spoolLimits: SpoolLimits;
}

/** Receives a call's whole body under the body limits and the spool's caps, shared by every door. */
export type BodyReceiver = (ctx: ProxyContext, observe?: (chunk: Buffer) => void) => Promise<BodyHead>;

export function bodyReceiver(options: ReadModelOptions): BodyReceiver {
  const { bodyLimitBytes, bodyTimeoutMs, spoolDir } = options;
  const spoolBudget = new SpoolBudget(options.spoolLimits);
  if (!Number.isSafeInteger(bodyLimitBytes) || bodyLimitBytes < 1)
    throw new Error('bodyReceiver: bodyLimitBytes must be a positive integer');
  return async (ctx, observe) => {
    const head = await receiveBody(ctx.req, {
      limit: bodyLimitBytes,
      idleTimeoutMs: bodyTimeoutMs,
      spoolDir,
      observe,
      openSpool: (bytes) => spoolBudget.open(spoolHolder(ctx.decided.caller), bytes),
    });
    ctx.decided.body = head;
    ctx.onDone.push(() => head.dispose());
    return head;
  };
}

export function readModel(receive: BodyReceiver) {
  return async function readModelStep(ctx: ProxyContext): Promise<void> {
    const q = ctx.request.url.indexOf('?');
    const rawQuery = q < 0 ? '' : ctx.request.url.slice(q + 1);
    if (ctx.request.method === 'GET') {
      setReading(ctx, modelFromGet(rawQuery));
      if (!hasBody(ctx.req)) return;
    }
    const reader =
      ctx.request.method === 'GET'
        ? undefined
        : bodyModelReader(ctx.request.method, ctx.req.headers['content-type'], rawQuery);
    await receive(ctx, reader && ((chunk) => reader.feed(chunk)));
    if (reader) {
      setReading(ctx, reader.end());
      ctx.decided.requestJson = reader.json;
    }
  };
}

function setReading(ctx: ProxyContext, reading: ModelReading): void {
  ctx.decided.modelReading = reading;
  ctx.decided.model =
    reading.status === 'found' ? reading.model : reading.status === 'uncertain' ? reading.guess : undefined;
}

function spoolHolder(caller: CallerIdentity | undefined): string | undefined {
  return caller?.keyId === undefined ? undefined : shareHolder(caller.keyId, caller.ownerId);
}
