/**
 * After a save: asks Gatehouse (long-polling, 5 s at a time) what llama-swap did with the
 * file until the answer is no longer `pending`. The server settles it within ~15 s at most
 * (`unknown` when llama-swap never started a reload), so the loop ends by itself.
 */
import { getReloadStatus, isApiError, type ReloadStatus } from '../../api/index.js';

const WAIT_MS = 5000;

export async function followReload(
  savedAt: string,
  signal: AbortSignal,
  onStatus: (status: ReloadStatus) => void,
): Promise<void> {
  let status: ReloadStatus = { state: 'pending', message: '', savedAt, settledAt: null };
  while (!signal.aborted && status.state === 'pending') {
    try {
      status = await getReloadStatus(savedAt, WAIT_MS, signal);
    } catch (err) {
      if (signal.aborted) return;
      status = {
        state: 'unknown',
        message: `Could not ask Gatehouse about the reload: ${isApiError(err) ? err.message : String(err)}`,
        savedAt,
        settledAt: null,
      };
    }
    if (!signal.aborted) onStatus(status);
  }
}
