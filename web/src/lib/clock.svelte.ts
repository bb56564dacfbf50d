/** A shared "now" that ticks every 30 s, so relative times ("3 min ago") stay true. */
class Clock {
  now = $state(Date.now());
  constructor() {
    setInterval(() => (this.now = Date.now()), 30_000);
  }
}

export const clock = new Clock();
