import type { UpstreamInfo } from '../api/index.js';
import { live } from './live.svelte';

/**
 * llama-swap's reachability and version for the header and the Models banner, from the live
 * stream (started and stopped by the signed-in shell).
 */
class UpstreamStatus {
  get info(): UpstreamInfo | null {
    return live.upstream;
  }

  /** Set while Gatehouse itself is not answering: what `info` says may be out of date. */
  get error(): string | null {
    return live.link === 'reconnecting' ? 'Gatehouse is not answering; reconnecting…' : null;
  }

  start(): void {
    live.start();
  }

  stop(): void {
    live.stop();
  }
}

export const upstreamStatus = new UpstreamStatus();
