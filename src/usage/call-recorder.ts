/**
 * Turns each finished `/v1` call into its usage record and metrics (its TPM count is settled by
 * `token-reservation.ts`). Hooked in at the
 * start of every call (`onStart`) and run once from `ctx.onDone`, whichever way the exchange
 * ended (complete, client gone, upstream broken, refused by a step): so a call is recorded
 * exactly once, and an aborted stream with the tokens seen until the client left.
 */
import type { ProxyContext } from '../core/context.js';
import type { UsageRecord } from '../store/store.js';
import type { GatewayMetrics } from './metrics.js';
import { newUsageId } from '../store/usage-id.js';
import type { UsageWriter } from './usage-writer.js';

export interface CallRecorderDeps {
  metrics: GatewayMetrics;
  /** Absent when recording is off (`GATEHOUSE_USAGE_RECORDING=false`): metrics only. */
  writer: UsageWriter | undefined;
  /** Wall clock for the record's time. Default `Date.now`. */
  now?: () => number;
}

export function createCallRecorder(deps: CallRecorderDeps): (ctx: ProxyContext) => void {
  const now = deps.now ?? Date.now;

  const done = (ctx: ProxyContext): void => {
    const durationMs = performance.now() - ctx.startedAt;
    const tokens = ctx.usage?.tokens();
    const status = ctx.clientAborted && ctx.status === 0 ? 499 : ctx.status;
    const caller = ctx.caller;
    deps.metrics.callEnded({
      model: ctx.model,
      keyName: caller?.keyName,
      status,
      durationMs,
      ttfbMs: ctx.firstByteMs,
      ttftMs: ctx.usage?.firstTokenMs(),
      inputTokens: tokens?.input ?? null,
      outputTokens: tokens?.output ?? null,
      cachedTokens: tokens?.cached ?? null,
      errorClass: ctx.errorClass,
    });
    if (!deps.writer) return;
    const at = Math.round(now() - durationMs);
    const record: UsageRecord = {
      id: newUsageId(at),
      at,
      requestId: ctx.requestId,
      keyId: caller?.keyId ?? null,
      keyName: caller?.keyName ?? null,
      model: ctx.model ?? null,
      method: ctx.method,
      endpoint: ctx.path,
      status,
      streamed: ctx.streamed,
      inputTokens: tokens?.input ?? null,
      outputTokens: tokens?.output ?? null,
      cachedTokens: tokens?.cached ?? null,
      tokensSource: tokens?.source ?? null,
      ttfbMs: roundMs(ctx.firstByteMs),
      ttftMs: roundMs(ctx.usage?.firstTokenMs()),
      durationMs: roundMs(durationMs)!,
      bytesIn: ctx.body?.received() ?? 0,
      bytesOut: ctx.bytesOut,
      clientAborted: ctx.clientAborted,
      errorClass: ctx.errorClass ?? null,
      requestBody: ctx.requestBody?.() ?? null,
      responseBody: ctx.usage?.responseBody() ?? null,
    };
    deps.writer.push(record);
  };

  return function recordCall(ctx) {
    deps.metrics.callStarted();
    ctx.onDone.push(done);
  };
}

/** Microsecond precision is plenty, and keeps the stored numbers short. */
function roundMs(ms: number | undefined): number | null {
  return ms === undefined ? null : Math.round(ms * 1000) / 1000;
}
