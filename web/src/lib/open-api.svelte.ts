import { getEndpoints, onKeysChanged } from '../api/index.js';
import { poll, type Poller } from './poll.js';

/**
 * Whether `/v1` is open (no API key exists), for the banner on every page. Asked when the
 * signed-in shell appears, again right after this tab creates or deletes a key, and every
 * 30 s while the tab is visible (a key made with the CLI or on another replica).
 */
class OpenApi {
  /** null until the first answer; a failed check keeps the last answer. */
  open = $state<boolean | null>(null);
  private poller: Poller | undefined;
  private unlisten: (() => void) | undefined;

  start(): void {
    this.poller ??= poll(async (signal) => {
      this.open = (await getEndpoints(signal)).apiOpen;
    }, 30_000);
    this.unlisten ??= onKeysChanged(() => this.poller?.now());
  }

  stop(): void {
    this.poller?.stop();
    this.poller = undefined;
    this.unlisten?.();
    this.unlisten = undefined;
  }
}

export const openApi = new OpenApi();
