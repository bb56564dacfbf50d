/**
 * `-watch-config`: a stat poll, not fs events. Fires when mtime or size differ from the
 * previous poll, or when the file reappears; a missing file is quiet; the first poll is only a
 * baseline. A same-size, same-mtime rewrite is missed, as in llama-swap.
 */
import { stat } from 'node:fs/promises';

export class ConfigWatcher {
  private timer: NodeJS.Timeout | undefined;
  private last: { mtimeMs: number; size: number } | 'missing' | undefined;
  private polling = false;

  constructor(
    private readonly file: string,
    private readonly intervalMs: number,
    private readonly onChange: () => void,
  ) {}

  async start(): Promise<void> {
    await this.poll();
    this.timer = setInterval(() => void this.poll(), this.intervalMs);
    this.timer.unref();
  }

  stop(): void {
    clearInterval(this.timer);
    this.timer = undefined;
  }

  private async poll(): Promise<void> {
    if (this.polling) return;
    this.polling = true;
    try {
      let current: { mtimeMs: number; size: number } | 'missing';
      try {
        const s = await stat(this.file);
        current = { mtimeMs: s.mtimeMs, size: s.size };
      } catch {
        current = 'missing';
      }
      const previous = this.last;
      this.last = current;
      if (previous === undefined || current === 'missing') return;
      if (previous === 'missing' || previous.mtimeMs !== current.mtimeMs || previous.size !== current.size) {
        if (this.timer) this.onChange();
      }
    } finally {
      this.polling = false;
    }
  }
}
