/** A llama-swap failure as one sentence for the dashboard (the model list's and the status's `error`). */
import { UpstreamError } from '../management-client/errors.js';

export function describeUpstreamError(error: unknown): string {
  if (error instanceof UpstreamError) {
    if (error.kind === 'unreachable') return `llama-swap could not be reached: ${error.message}`;
    if (error.kind === 'timeout') return 'llama-swap did not answer in time.';
    return `llama-swap answered ${error.status}: ${error.upstreamMessage ?? error.message}`;
  }
  return error instanceof Error ? error.message : String(error);
}
