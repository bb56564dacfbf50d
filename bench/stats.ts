/** Small statistics helpers: percentiles of raw samples and medians of rounds. */

/** The p-th percentile (0-100) of unsorted samples, linear between ranks; NaN when empty. */
export function percentile(samples: ArrayLike<number>, p: number): number {
  if (samples.length === 0) return Number.NaN;
  const sorted = Float64Array.from(samples).sort();
  const rank = (p / 100) * (sorted.length - 1);
  const lo = Math.floor(rank);
  const hi = Math.ceil(rank);
  return sorted[lo]! + (sorted[hi]! - sorted[lo]!) * (rank - lo);
}

/** The median of per-round values, ignoring NaN (a failed round); NaN when nothing is left. */
export function median(values: readonly number[]): number {
  return percentile(
    values.filter((v) => !Number.isNaN(v)),
    50,
  );
}

/** A growable sample buffer that stops recording past `max` samples (bounded memory). */
export class Samples {
  private data: Float64Array;
  private count = 0;

  constructor(private readonly max = 2_000_000) {
    this.data = new Float64Array(Math.min(max, 4096));
  }

  push(value: number): void {
    if (this.count === this.data.length) {
      if (this.count >= this.max) return;
      const bigger = new Float64Array(Math.min(this.max, this.data.length * 2));
      bigger.set(this.data);
      this.data = bigger;
    }
    this.data[this.count++] = value;
  }

  get length(): number {
    return this.count;
  }

  values(): Float64Array {
    return this.data.subarray(0, this.count);
  }
}

export const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));
