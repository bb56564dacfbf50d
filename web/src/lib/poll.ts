/**
 * Runs `task` now and then `intervalMs` after each run finishes (never overlapping). While
 * the tab is hidden it waits; when the tab becomes visible it runs at once, so what the page
 * shows is never older than one interval plus one request.
 */
export interface Poller {
  /** Run now (e.g. right after an action), then keep the rhythm. */
  now(): void;
  stop(): void;
}

export function poll(task: (signal: AbortSignal) => Promise<void>, intervalMs: number): Poller {
  const controller = new AbortController();
  let timer: ReturnType<typeof setTimeout> | undefined;
  let running = false;
  let again = false;

  const schedule = () => {
    clearTimeout(timer);
    if (controller.signal.aborted || document.hidden) return;
    timer = setTimeout(run, intervalMs);
  };

  async function run(): Promise<void> {
    if (controller.signal.aborted) return;
    if (running) {
      again = true;
      return;
    }
    clearTimeout(timer);
    running = true;
    try {
      await task(controller.signal);
    } catch {
      // The task shows its own errors; the rhythm goes on.
    } finally {
      running = false;
    }
    if (again) {
      again = false;
      void run();
    } else {
      schedule();
    }
  }

  const onVisibility = () => {
    if (!document.hidden) void run();
    else clearTimeout(timer);
  };
  document.addEventListener('visibilitychange', onVisibility);
  void run();

  return {
    now: () => void run(),
    stop() {
      controller.abort();
      clearTimeout(timer);
      document.removeEventListener('visibilitychange', onVisibility);
    },
  };
}
