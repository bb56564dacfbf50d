/**
 * Writes the audit log. An entry is part of its action: a store write commits together with
 * its entry or not at all (`commit`); an action outside the store (llama-swap, the config
 * file) is recorded right after it (`record`), and a failed write fails the answer. Either
 * way the caller gets `audit_write_failed`, never a silent gap.
 */
import type { Logger } from 'pino';
import type { AuditAction, AuditActor, AuditChanges, AuditOutcome, AuditTarget } from '../admin-api/types.js';
import { GatewayError } from '../core/errors.js';
import type { Store, StoreTransaction } from '../store/store.js';
import { newUsageId } from '../store/usage-id.js';

/** An entry as its writer knows it; time and id are the log's. */
export interface AuditEvent {
  actor: AuditActor;
  client: string | null;
  action: AuditAction;
  target: AuditTarget | null;
  outcome: AuditOutcome;
  reason: string | null;
  /** What a user action changed; absent is none. */
  changes?: AuditChanges | null;
}

export interface AuditLogOptions {
  /** Wall clock of the entries. Default `Date.now`. */
  now?: () => number;
  logger?: Logger;
}

export class AuditLog {
  readonly #store: Pick<Store, 'audit' | 'transaction'>;
  readonly #now: () => number;
  readonly #logger: Logger | undefined;

  constructor(store: Pick<Store, 'audit' | 'transaction'>, options: AuditLogOptions = {}) {
    this.#store = store;
    this.#now = options.now ?? Date.now;
    this.#logger = options.logger;
  }

  /**
   * Runs `work` and appends the entry `event` describes (read once `work` is done) in the same
   * transaction: when the entry cannot be written the work is rolled back too.
   */
  commit<T>(work: (tx: StoreTransaction) => Promise<T>, event: (result: T) => AuditEvent): Promise<T> {
    return this.#store.transaction(async (tx) => {
      const result = await work(tx);
      const entry = event(result);
      await this.#append(tx, entry, 'Nothing was changed: the action and its entry are written together.');
      return result;
    });
  }

  /** Records an action that is already done (or failed) outside the store. */
  record(event: AuditEvent): Promise<void> {
    const what =
      event.outcome === 'success'
        ? 'The action was done, but it is not in the audit log.'
        : `The action failed (${event.reason ?? 'unknown'}), and the attempt is not in the audit log.`;
    return this.#append(this.#store, event, what);
  }

  async #append(into: Pick<StoreTransaction, 'audit'>, event: AuditEvent, consequence: string): Promise<void> {
    const at = this.#now();
    try {
      await into.audit.append({ id: newUsageId(at), at, ...event, changes: event.changes ?? null });
    } catch (error) {
      // The entry's fields are names and ids only, so the log line may carry them.
      this.#logger?.error(
        { err: error, event: 'audit_write_failed', audit: event },
        `writing the audit entry of ${event.action} failed`,
      );
      throw new GatewayError('audit_write_failed', {
        message: `The audit log could not be written. ${consequence}`,
        cause: error,
      });
    }
  }
}

export function isAuditWriteFailure(error: unknown): boolean {
  return error instanceof GatewayError && error.code === 'audit_write_failed';
}
