/**
 * One leader among a browser's tabs of this origin, with Web Locks: the tab holding the lock
 * leads until it closes or stops, then the next waiting tab takes over. Web Locks exist only in
 * secure contexts (https, localhost); elsewhere every tab leads itself (and, as a leader with no
 * other tab to serve, holds its stream only while it is visible).
 */
export interface TabLeadership {
  /** False when the browser has no Web Locks here: the tab leads alone. */
  readonly shared: boolean;
  stop(): void;
}

export function electLeader(name: string, onLead: () => void): TabLeadership {
  const locks = typeof navigator !== 'undefined' ? navigator.locks : undefined;
  if (!locks) {
    onLead();
    return { shared: false, stop: () => undefined };
  }
  const waiting = new AbortController();
  let release: (() => void) | undefined;
  locks
    .request(name, { signal: waiting.signal }, () => {
      // Held until stop() (or the tab's end, when the browser releases it).
      return new Promise<void>((resolve) => {
        release = resolve;
        onLead();
      });
    })
    .catch(() => undefined);
  return {
    shared: true,
    stop() {
      waiting.abort();
      release?.();
    },
  };
}
