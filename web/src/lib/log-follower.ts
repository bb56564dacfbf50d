/**
 * Keeps one log stream flowing: opens it, and after any failure checks the session (a 401
 * looks like any other EventSource error) and reopens with backoff. The closest peer's viewer
 * froze after every llama-swap config reload because its stream never ended and nothing
 * reopened it; here a `gap` from the server or a failed connection always yields a visible
 * marker and a live stream again.
 */
import { getSession, notifyUnauthorized, openLogStream, type LogSource, type LogStream } from '../api/index.js';
import { StreamBackoff } from './stream-backoff.js';

export type FollowStatus = 'connecting' | 'live' | 'reconnecting' | 'stopped';

const RECONNECT_MARKER = '— reconnected: stream restarted (config reload?) —';

export interface FollowerEvents {
  text(text: string): void;
  marker(text: string, detail?: string): void;
  status(status: FollowStatus): void;
}

export class LogFollower {
  private stream: LogStream | undefined;
  private timer: ReturnType<typeof setTimeout> | undefined;
  private readonly backoff = new StreamBackoff();
  private opened = false;
  private failed = false;
  private stopped = false;

  constructor(
    private readonly source: LogSource,
    private readonly events: FollowerEvents,
  ) {}

  start(): void {
    this.connect();
  }

  stop(): void {
    this.stopped = true;
    clearTimeout(this.timer);
    this.stream?.close();
    this.events.status('stopped');
  }

  private connect(): void {
    if (this.stopped) return;
    this.events.status(this.failed ? 'reconnecting' : 'connecting');
    // History only until something has been shown: a reopened stream would repeat it.
    this.stream = openLogStream(
      this.source,
      { history: !this.opened },
      {
        open: () => {
          this.backoff.opened();
          this.events.status('live');
          if (this.failed && this.opened)
            this.events.marker(
              RECONNECT_MARKER,
              'The connection to Gatehouse broke and was opened again; lines written meanwhile are not shown.',
            );
          this.opened = true;
          this.failed = false;
        },
        history: (text) => this.events.text(text),
        log: (text) => this.events.text(text),
        // The server's reason is the marker: a reload and an unreachable llama-swap read differently.
        gap: (reason) => this.events.marker(`— ${reason} —`, reason),
        error: () => void this.recover(),
      },
    );
  }

  private async recover(): Promise<void> {
    if (this.stopped) return;
    this.failed = true;
    this.events.status('reconnecting');
    const delay = this.backoff.next();
    try {
      const session = await getSession();
      if (!session.authenticated) {
        this.stop();
        notifyUnauthorized();
        return;
      }
    } catch {
      // The gateway itself is down: keep trying at the backoff pace.
    }
    if (this.stopped) return;
    this.timer = setTimeout(() => this.connect(), delay);
  }
}
