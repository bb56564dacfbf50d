/**
 * The queue's caps counted by every replica together (Redis): a call that fits this replica's
 * own counts must also take a slot there. What the scheduler needs of it, nothing more.
 */

/** A slot taken in the shared count; given back once the call ends. */
export interface SharedSlot {
  release(): void;
}

/** `all`: the cap on all models is full everywhere; `model`: the call's model's cap is. */
export type SharedRefusal = { blocked: 'all' | 'model' };

export interface SharedCaps {
  /** Takes the call's slots (all models, its model) in the shared count, or says which cap is full. */
  acquire(model: string | undefined): Promise<SharedSlot | SharedRefusal>;
  /** `shared` while the count is shared by the replicas; `replica` while it falls back to this one's. */
  scope(): 'shared' | 'replica';
}

/** How often waiting calls try again while other replicas hold the slots (they cannot tell us). */
export const SHARED_RETRY_MS = 500;
