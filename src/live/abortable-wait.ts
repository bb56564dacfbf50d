/** A pause that ends early on abort or when woken (a refresh asked for now). */
export interface Wait {
  (ms: number, signal: AbortSignal): Promise<void>;
  /** Ends the pause under way, if any. */
  wake(): void;
}

export function abortableWait(): Wait {
  let wakeUp: (() => void) | undefined;
  const wait = (ms: number, signal: AbortSignal) =>
    new Promise<void>((resolve) => {
      if (signal.aborted) return resolve();
      const done = () => {
        clearTimeout(timer);
        signal.removeEventListener('abort', done);
        wakeUp = undefined;
        resolve();
      };
      const timer = setTimeout(done, ms);
      signal.addEventListener('abort', done, { once: true });
      wakeUp = done;
    });
  wait.wake = () => wakeUp?.();
  return wait;
}
