/**
 * How much may be spooled to disk at once: bytes for all calls together
 * (GATEHOUSE_SPOOL_MAX_BYTES), and per API key (all keys of one person together) at most
 * GATEHOUSE_SPOOL_MAX_PER_KEY bodies and half of those bytes, so trickled uploads cannot fill the
 * disk or let one person take the whole spool. A call takes a share when its
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
  readonly #perSharer = new Map<string, { bodies: number; bytes: number }>();

  constructor(readonly limits: SpoolLimits) {
    if (!Number.isSafeInteger(limits.maxBytes) || limits.maxBytes < 1)
      throw new Error('SpoolBudget: maxBytes must be a positive integer');
  }

  /** Bytes spooled (or promised by a declared length) right now. */
  get bytes(): number {
    return this.#bytes;
  }

  /**
   * A share for one body of `bytes` so far, for `sharer` (a key, or the person owning it; undefined
   * without keys: only the total applies). Throws 413 when `bytes` alone is over the total, 503
   * `spool_full` when it does not fit now, the sharer holds its maximum of bodies, or would hold
   * more than half of the total (so declared lengths never let one sharer block everyone).
   */
  open(sharer: string | undefined, bytes: number): SpoolShare {
    const { maxBytes, maxPerKey } = this.limits;
    if (bytes > maxBytes)
      throw new GatewayError('body_too_large', {
        message: `The request body is larger than the gateway can hold on disk (GATEHOUSE_SPOOL_MAX_BYTES).`,
      });
    const held = sharer === undefined ? undefined : (this.#perSharer.get(sharer) ?? { bodies: 0, bytes: 0 });
    if (held && maxPerKey > 0 && held.bodies >= maxPerKey)
      throw spoolFull(
        `This API key already has ${held.bodies} request bodies being received (GATEHOUSE_SPOOL_MAX_PER_KEY); ` +
          'this one was not taken.',
      );
    this.#take(held, bytes);
    if (held && sharer !== undefined) {
      held.bodies++;
      this.#perSharer.set(sharer, held);
    }
    let covered = bytes;
    let open = true;
    return {
      cover: (total) => {
        if (!open || total <= covered) return;
        this.#take(held, total - covered);
        covered = total;
      },
      release: () => {
        if (!open) return;
        open = false;
        this.#bytes -= covered;
        if (!held || sharer === undefined) return;
        held.bytes -= covered;
        if (--held.bodies === 0) this.#perSharer.delete(sharer);
      },
    };
  }

  #take(held: { bytes: number } | undefined, bytes: number): void {
    if (this.#bytes + bytes > this.limits.maxBytes) throw spoolFull();
    if (held && held.bytes + bytes > this.limits.maxBytes / 2)
      throw spoolFull(
        'This API key already holds half of what may be received at once (GATEHOUSE_SPOOL_MAX_BYTES); ' +
          'this one was not taken.',
      );
    this.#bytes += bytes;
    if (held) held.bytes += bytes;
  }
}

function spoolFull(message?: string): GatewayError {
  return new GatewayError('spool_full', {
    ...(message === undefined ? {} : { message }),
    headers: { 'retry-after': String(SPOOL_FULL_RETRY_S) },
  });
}
