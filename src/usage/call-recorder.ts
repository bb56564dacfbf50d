/**
 * Turns each finished `/v1` call into its usage record and metrics (its TPM count is settled by
 * `token-reservation.ts`). Hooked in at the
 * start of every call (`onStart`) and run once from `ctx.onDone`, whichever way the exchange
 * ended (complete, client gone, upstream broken, refused by a step): so a call is recorded
 * exactly once, and an aborted stream with the tokens seen until the client left.
 */
import type { ProxyContext } from '../core/context.js';
import type { UsageRecord } from '../store/records.js';
import type { GatewayMetrics } from './metrics.js';
import { newUsageId } from '../store/usage-id.js';
import type { UsageWriter } from './usage-writer.js';
import { callGpuMs } from '../budgets/gpu-time.js';

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
    const { request, decided, outcome } = ctx;
    const durationMs = performance.now() - request.startedAt;
    const tokens = outcome.usage?.tokens();
    const status = outcome.status;
    const caller = decided.caller;
    deps.metrics.callEnded({
      model: decided.model,
      keyName: caller?.keyName,
      status,
      door: request.format === 'ollama' ? 'ollama' : 'v1',
      durationMs,
      ttfbMs: outcome.firstByteMs,
      ttftMs: outcome.usage?.firstTokenMs(),
      inputTokens: tokens?.input ?? null,
      outputTokens: tokens?.output ?? null,
      cachedTokens: tokens?.cached ?? null,
      errorClass: outcome.errorClass,
      queueMs: decided.queueMs,
    });
    if (!deps.writer) return;
    const at = Math.round(now() - durationMs);
    const record: UsageRecord = {
      id: newUsageId(at),
      at,
      requestId: request.requestId,
      keyId: caller?.keyId ?? null,
      keyName: caller?.keyName ?? null,
      model: decided.model ?? null,
      method: request.method,
      endpoint: request.path,
      status,
      streamed: outcome.streamed,
      inputTokens: tokens?.input ?? null,
      outputTokens: tokens?.output ?? null,
      cachedTokens: tokens?.cached ?? null,
      tokensSource: tokens?.source ?? null,
      ttfbMs: roundMs(outcome.firstByteMs),
      ttftMs: roundMs(outcome.usage?.firstTokenMs()),
      durationMs: roundMs(durationMs)!,
      bytesIn: decided.body?.received() ?? 0,
      bytesOut: outcome.bytesOut,
      clientAborted: outcome.clientAborted,
      errorClass: outcome.errorClass ?? null,
      queueMs: roundMs(decided.queueMs),
      gpuMs: roundMs(callGpuMs(ctx)),
      requestBody: decided.requestBody?.() ?? null,
      responseBody: outcome.usage?.responseBody() ?? null,
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
