/**
 * Loading and unloading a model on the upstream, shared by the admin API (`/api/models/:id/*`)
 * and the clients' `/models/load` and `/models/unload`: a load is answered once the upstream has
 * taken it (a big model takes minutes), and an upstream failure becomes one catalogue error.
 */
import type { Logger } from 'pino';
import { GatewayError } from '../core/errors.js';
import { describeUpstreamError } from '../live/upstream-reason.js';
import { UpstreamError } from '../management-client/errors.js';
import type { Upstream } from '../management-client/upstream.js';

/** How long a load may take to fail before it is answered as under way. */
const EARLY_FAILURE_MS = 300;

/**
 * Starts a load: `ready` when the model came up at once, `starting` when it is still loading
 * after a moment; an early failure is thrown. `settled` runs when the load ends either way.
 */
export async function startLoad(
  upstream: Upstream,
  id: string,
  logger: Logger,
  settled: () => void,
): Promise<'ready' | 'starting'> {
  const loading = upstream.load(id).catch((error: unknown) => {
    logger.warn({ model: id, err: describeUpstreamError(error) }, 'model load failed');
    throw error;
  });
  void loading.then(settled, settled);
  let timer: NodeJS.Timeout | undefined;
  try {
    return await Promise.race([
      loading.then(() => 'ready' as const),
      new Promise<'starting'>((resolve) => (timer = setTimeout(() => resolve('starting'), EARLY_FAILURE_MS))),
    ]);
  } catch (error) {
    throw upstreamActionError(error);
  } finally {
    clearTimeout(timer);
    loading.catch(() => undefined);
  }
}

export function upstreamActionError(error: unknown): GatewayError {
  if (error instanceof UpstreamError) {
    if (error.kind === 'http' && error.status === 404)
      return new GatewayError('not_found', {
        message: error.upstreamMessage ?? 'The upstream does not know this model.',
      });
    if (error.kind === 'timeout')
      return new GatewayError('upstream_timeout', { message: 'The upstream did not answer in time.' });
    if (error.kind === 'unreachable')
      return new GatewayError('upstream_unreachable', { message: describeUpstreamError(error) });
    // A redirect or other non-error status that was not what was asked for is a bad gateway.
    const status = error.status !== undefined && error.status >= 400 ? error.status : 502;
    return new GatewayError('upstream_error', { status, message: describeUpstreamError(error) });
  }
  return new GatewayError('internal_error', { cause: error });
}
