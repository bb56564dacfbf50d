/**
 * The retry pace of a dashboard event stream: a stream that lived a while earns a quick retry,
 * one that keeps failing backs off, doubling from 500 ms to 10 s.
 */
export class StreamBackoff {
  #attempts = 0;
  #openedAt = 0;

  /** Retries so far since the stream last lived long enough. */
  get attempts(): number {
    return this.#attempts;
  }

  /** The stream is open. */
  opened(): void {
    this.#openedAt = Date.now();
  }

  /** The stream broke: how long to wait before the next try. */
  next(): number {
    if (this.#openedAt !== 0 && Date.now() - this.#openedAt > 10_000) this.#attempts = 0;
    this.#openedAt = 0;
    const delay = Math.min(10_000, 500 * 2 ** this.#attempts);
    this.#attempts++;
    return delay;
  }
}
