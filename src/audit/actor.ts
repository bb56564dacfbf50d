/**
 * Who an audit entry names as the actor, built in one place from what authenticated the
 * request. Never a credential: a session's id (not its token), or just the kind.
 */
import { userInfo } from 'node:os';
import type { AuditActor } from '../admin-api/types.js';
import type { AdminIdentity } from '../auth/admin-identity.js';
import type { KeyRecord, UserRecord } from '../store/records.js';

/** The actor of an admin request; without an identity (sign-in, setup) a browser with no session yet. */
export function actorOf(identity: AdminIdentity | null | undefined): AuditActor {
  if (identity?.via === 'session') return userActor(identity.user);
  if (identity?.via === 'token') return { kind: 'admin-token', id: null, name: null };
  return { kind: 'session', id: null, name: null };
}

/** A signed-in person: their user's id and name (a session always belongs to a user). */
export function userActor(user: Pick<UserRecord, 'id' | 'name'>): AuditActor {
  return { kind: 'user', id: user.id, name: user.name };
}

/** A client managing models through `/models/load|unload` with its API key; no key in open mode. */
export function apiKeyActor(key: Pick<KeyRecord, 'id' | 'name'> | null): AuditActor {
  return { kind: 'api-key', id: key?.id ?? null, name: key?.name ?? null };
}

/** `gatehouse keys ...` on the server: named after the operating-system account that ran it. */
export function cliActor(): AuditActor {
  let name: string | null;
  try {
    name = userInfo().username || null;
  } catch {
    // No passwd entry (some containers run under a bare uid).
    name = null;
  }
  return { kind: 'cli', id: null, name };
}
