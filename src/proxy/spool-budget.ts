/**
 * How much may be spooled to disk at once: bytes for all calls together
 * (GATEHOUSE_SPOOL_MAX_BYTES) and bodies per API key (GATEHOUSE_SPOOL_MAX_PER_KEY), so trickled
 * uploads cannot fill the disk or let one key take the whole spool. A call takes a share when its
 * body is to be spooled (the declared Content-Length, else what arrived so far), grows it as bytes
 * arrive, and gives it back when its file is removed. One budget per process.
 */
import { GatewayError } from '../core/errors.js';

export interface SpoolLimits {
  maxBytes: number;
  /** 0 = no per-key cap. */
  maxPerKey: number;
}

/** `Retry-After` for a full spool: bodies leave it as their calls end. */
const SPOOL_FULL_RETRY_S = 5;

export interface SpoolShare {
  /** Makes the share cover `bytes` in all; throws `spool_full` when the total would pass the cap. */
  cover(bytes: number): void;
  /** Gives the share back (idempotent). */
  release(): void;
}

export class SpoolBudget {
  #bytes = 0;
  readonly #perKey = new Map<string, number>();

  constructor(readonly limits: SpoolLimits) {
    if (!Number.isSafeInteger(limits.maxBytes) || limits.maxBytes < 1)
      throw new Error('SpoolBudget: maxBytes must be a positive integer');
  }

  /** Bytes spooled (or promised by a declared length) right now. */
  get bytes(): number {
    return this.#bytes;
  }

  /**
   * A share for one body of `bytes` so far, for `key` (undefined without keys: only the total
   * applies). Throws 413 when `bytes` alone is over the total, 503 `spool_full` when it does not
   * fit now or the key holds its maximum of bodies.
   */
  open(key: string | undefined, bytes: number): SpoolShare {
    const { maxBytes, maxPerKey } = this.limits;
    if (bytes > maxBytes)
      throw new GatewayError('body_too_large', {
        message: `The request body is larger than the gateway can hold on disk (GATEHOUSE_SPOOL_MAX_BYTES).`,
      });
    const held = key === undefined ? 0 : (this.#perKey.get(key) ?? 0);
    if (maxPerKey > 0 && held >= maxPerKey)
      throw spoolFull(
        `This API key already has ${held} request bodies being received (GATEHOUSE_SPOOL_MAX_PER_KEY); ` +
          'this one was not taken.',
      );
    this.#take(bytes);
    if (key !== undefined) this.#perKey.set(key, held + 1);
    let covered = bytes;
    let open = true;
    return {
      cover: (total) => {
        if (!open || total <= covered) return;
        this.#take(total - covered);
        covered = total;
      },
      release: () => {
        if (!open) return;
        open = false;
        this.#bytes -= covered;
        if (key === undefined) return;
        const left = (this.#perKey.get(key) ?? 1) - 1;
        if (left > 0) this.#perKey.set(key, left);
        else this.#perKey.delete(key);
      },
    };
  }

  #take(bytes: number): void {
    if (this.#bytes + bytes > this.limits.maxBytes) throw spoolFull();
    this.#bytes += bytes;
  }
}

function spoolFull(message?: string): GatewayError {
  return new GatewayError('spool_full', {
    ...(message === undefined ? {} : { message }),
    headers: { 'retry-after': String(SPOOL_FULL_RETRY_S) },
  });
}
