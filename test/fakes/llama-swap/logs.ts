/**
 * llama-swap's log monitors (`internal/logmon`): a 100 KiB history per monitor plus live
 * subscribers. `proxy` and `upstream` live for the simulator's lifetime; per-model monitors
 * belong to a config generation and vanish on reload.
 */

const LOG_HISTORY_BYTES = 100 * 1024;

export type LogListener = (data: Buffer) => void;

export class LogMonitor {
  private chunks: Buffer[] = [];
  private size = 0;
  private readonly listeners = new Set<LogListener>();

  write(data: string | Buffer): void {
    const buf = typeof data === 'string' ? Buffer.from(data) : data;
    if (buf.length === 0) return;
    this.chunks.push(buf);
    this.size += buf.length;
    while (this.size > LOG_HISTORY_BYTES && this.chunks.length > 0) {
      const first = this.chunks[0]!;
      const excess = this.size - LOG_HISTORY_BYTES;
      if (first.length <= excess) {
        this.chunks.shift();
        this.size -= first.length;
      } else {
        this.chunks[0] = first.subarray(excess);
        this.size -= excess;
      }
    }
    for (const listener of [...this.listeners]) listener(buf);
  }

  history(): Buffer {
    return Buffer.concat(this.chunks);
  }

  onData(listener: LogListener): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }
}

/** `[INFO] message\n`, as logmon formats a line without `logTimeFormat`. */
export function logLine(level: 'DEBUG' | 'INFO' | 'WARN' | 'ERROR', message: string): string {
  return `[${level}] ${message}\n`;
}

/** Go's `time.Duration.String()` for a duration given in milliseconds (µs precision). */
export function goDuration(ms: number): string {
  const ns = Math.round(ms * 1e6);
  if (ns === 0) return '0s';
  if (ns < 1e3) return `${ns}ns`;
  if (ns < 1e6) return `${trimZeros((ns / 1e3).toFixed(3))}µs`;
  if (ns < 1e9) return `${trimZeros((ns / 1e6).toFixed(6))}ms`;
  const totalSeconds = ns / 1e9;
  const hours = Math.floor(totalSeconds / 3600);
  const minutes = Math.floor((totalSeconds % 3600) / 60);
  const seconds = trimZeros((totalSeconds % 60).toFixed(9));
  if (hours > 0) return `${hours}h${minutes}m${seconds}s`;
  if (minutes > 0) return `${minutes}m${seconds}s`;
  return `${seconds}s`;
}

function trimZeros(s: string): string {
  return s.includes('.') ? s.replace(/0+$/, '').replace(/\.$/, '') : s;
}
