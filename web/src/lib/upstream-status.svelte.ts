import { getUpstream, isApiError, type UpstreamInfo } from '../api/index.js';
import { poll, type Poller } from './poll.js';

/**
 * llama-swap's reachability and version for the header and the Models banner. Polled every
 * 5 s while the signed-in shell is on screen (started/stopped by the shell).
 */
class UpstreamStatus {
  info = $state<UpstreamInfo | null>(null);
  error = $state<string | null>(null);
  private poller: Poller | undefined;

  start(): void {
    this.poller ??= poll(async (signal) => {
      try {
        this.info = await getUpstream(signal);
        this.error = null;
      } catch (err) {
        if (signal.aborted) return;
        this.error = isApiError(err) ? err.message : String(err);
      }
    }, 5000);
  }

  refresh(): void {
    this.poller?.now();
  }

  stop(): void {
    this.poller?.stop();
    this.poller = undefined;
  }
}

export const upstreamStatus = new UpstreamStatus();
