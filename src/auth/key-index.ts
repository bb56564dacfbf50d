/**
 * Every API key in memory, by hash, so checking a key costs one SHA-256 and one Map lookup:
 * no database round trip, no loop over keys, nothing whose duration depends on how close a
 * guess was. The index reloads when the store reports a change made elsewhere, and callers
 * reload it after their own writes so the next request sees them.
 *
 * A key whose owner is disabled is held as revoked (since the owner was disabled), and a key of a
 * member carries the member's current allowance (`ownerModels`), which bounds the key's own list:
 * every user change is announced like a key write, so every replica's index applies it at once.
 *
 * Last-use times are collected in memory and written in one batch every few seconds (and on
 * close), never once per request.
 */
import type { KeyRecord } from '../store/records.js';
import type { Store } from '../store/store.js';
import { hashApiKey, keyStatus } from './api-keys.js';

/** A key as the index holds it: the record, and its owner's allowance as it is now. */
export interface IndexedKey extends KeyRecord {
  /** The models the owner may use (a member's allowance); `[]`: every model (no owner, or an admin). */
  ownerModels: readonly string[];
  /** Whether a member or viewer owns it (not an admin, the admin token or the CLI). */
  ownedByNonAdmin: boolean;
}

/** The read side the client-auth decision needs; `KeyIndex` implements it. */
export interface KeyVerifier {
  /** True when at least one key record exists (revoked and expired ones count). */
  hasAnyKeys(): boolean;
  /** The record whose hash matches `raw`, whatever its status. */
  verify(raw: string): IndexedKey | undefined;
}

export interface KeyIndexOptions {
  /** How often collected last-use times are written. */
  flushIntervalMs?: number;
  now?: () => number;
  /** Background reload/flush failures; the index keeps serving its last good state. */
  onError?: (error: unknown, during: 'reload' | 'flush') => void;
}

export class KeyIndex implements KeyVerifier {
  readonly #store: Store;
  readonly #now: () => number;
  readonly #onError: NonNullable<KeyIndexOptions['onError']>;
  #byHash = new Map<string, IndexedKey>();
  #pendingUse = new Map<string, number>();
  #reloading: Promise<void> = Promise.resolve();
  #flushing: Promise<void> = Promise.resolve();
  #unwatch: (() => void) | undefined;
  #flushTimer: NodeJS.Timeout | undefined;
  #closed = false;

  private constructor(store: Store, options: KeyIndexOptions) {
    this.#store = store;
    this.#now = options.now ?? Date.now;
    this.#onError =
      options.onError ??
      ((error, during) =>
        process.emitWarning(`key index ${during} failed: ${error instanceof Error ? error.message : String(error)}`));
  }

  /** Loads every key, then follows the store's change notifications until `close()`. */
  static async open(store: Store, options: KeyIndexOptions = {}): Promise<KeyIndex> {
    const index = new KeyIndex(store, options);
    await index.reload();
    index.#unwatch = store.watchKeys(() => {
      index.reload().catch((error: unknown) => index.#onError(error, 'reload'));
    });
    index.#flushTimer = setInterval(() => {
      index.flush().catch((error: unknown) => index.#onError(error, 'flush'));
    }, options.flushIntervalMs ?? 5000);
    index.#flushTimer.unref();
    return index;
  }

  get size(): number {
    return this.#byHash.size;
  }

  hasAnyKeys(): boolean {
    return this.#byHash.size > 0;
  }

  /** Keys that open `/v1` at `nowMs`: neither revoked nor expired. */
  activeCount(nowMs: number = this.#now()): number {
    let count = 0;
    for (const key of this.#byHash.values()) if (keyStatus(key, nowMs) === 'active') count++;
    return count;
  }

  /** Whether any key has a tokens-per-minute limit (start-up warning when usage recording is off). */
  anyKeyHasTpmLimit(): boolean {
    for (const key of this.#byHash.values()) if (key.limits.tpm !== null) return true;
    return false;
  }

  verify(raw: string): IndexedKey | undefined {
    return this.#byHash.get(hashApiKey(raw));
  }

  /**
   * The one active key with this name that no member or viewer owns (an admin's, or made with the
   * CLI), so nobody else can take the name over; undefined when none or several are.
   */
  named(name: string, nowMs: number = this.#now()): IndexedKey | undefined {
    let found: IndexedKey | undefined;
    for (const key of this.#byHash.values()) {
      if (key.name !== name || key.ownedByNonAdmin || keyStatus(key, nowMs) !== 'active') continue;
      if (found) return undefined;
      found = key;
    }
    return found;
  }

  /**
   * Re-reads every key. Reloads run one after another, so the last one started is the state
   * that stays; resolves once the index reflects the store as of this call.
   */
  reload(): Promise<void> {
    const next = this.#reloading
      .catch(() => {})
      .then(async () => {
        const [keys, users] = await Promise.all([this.#store.keys.list(), this.#store.users.list()]);
        const owners = new Map(users.map((u) => [u.id, u] as const));
        this.#byHash = new Map(
          keys.map((key): [string, IndexedKey] => {
            const owner = key.ownerId === null ? undefined : owners.get(key.ownerId);
            const since = owner?.disabledAt ?? null;
            // An admin is bound by no allowance; anyone else's keys stay inside theirs.
            const ownerModels = owner === undefined || owner.role === 'admin' ? [] : owner.allowedModels;
            return [
              key.hash,
              {
                ...key,
                ownerModels,
                ownedByNonAdmin: owner !== undefined && owner.role !== 'admin',
                revokedAt: since === null ? key.revokedAt : (key.revokedAt ?? since),
              },
            ];
          }),
        );
      });
    this.#reloading = next;
    return next;
  }

  /** Notes that a key was just used; written with the next flush. */
  markUsed(id: string, atMs: number = this.#now()): void {
    const previous = this.#pendingUse.get(id);
    if (previous === undefined || atMs > previous) this.#pendingUse.set(id, atMs);
  }

  /** Writes collected last-use times now. On failure they are kept for the next attempt. */
  flush(): Promise<void> {
    const next = this.#flushing
      .catch(() => {})
      .then(async () => {
        if (this.#pendingUse.size === 0) return;
        const batch = this.#pendingUse;
        this.#pendingUse = new Map();
        try {
          await this.#store.keys.touchLastUsed(batch);
        } catch (error) {
          for (const [id, at] of batch) this.markUsed(id, at);
          throw error;
        }
      });
    this.#flushing = next;
    return next;
  }

  /** Stops following the store and writes pending last-use times. Does not close the store. */
  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    this.#unwatch?.();
    if (this.#flushTimer) clearInterval(this.#flushTimer);
    await this.#reloading.catch(() => {});
    await this.flush();
  }
}
