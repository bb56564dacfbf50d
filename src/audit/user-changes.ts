/**
 * What a user action changed, as its audit entry says it: the user as the admin API shows them
 * (`toUserView`, which never holds a password hash or the provider's subject), field by field.
 */
import type { AuditChanges, AuditTarget, AuditValue, User } from '../admin-api/types.js';
import { toUserView } from '../auth/users.js';
import type { UserRecord } from '../store/records.js';

/** The fields an entry reports; ids and times are the entry's own. */
const FIELDS = ['name', 'email', 'role', 'status', 'signIn', 'allowedModels', 'maxBudget'] as const;

type Tracked = Pick<User, (typeof FIELDS)[number]>;

/** Before a user exists: nothing set, every model (no list), no cap. */
const NOBODY: Readonly<Record<keyof Tracked, AuditValue>> = {
  name: null,
  email: null,
  role: null,
  status: null,
  signIn: null,
  allowedModels: [],
  maxBudget: null,
};

/** The fields that differ between `before` (null: the user is new) and `after`; null when none. */
export function userChanges(before: UserRecord | null, after: UserRecord): AuditChanges | null {
  const from: Readonly<Record<keyof Tracked, AuditValue>> = before ? toUserView(before) : NOBODY;
  const to: Tracked = toUserView(after);
  const changes: AuditChanges = {};
  for (const field of FIELDS)
    if (JSON.stringify(from[field]) !== JSON.stringify(to[field]))
      changes[field] = { from: from[field], to: to[field] };
  return Object.keys(changes).length > 0 ? changes : null;
}

/** An entry's target: the user's id and name (after the change). */
export function userTarget(user: Pick<UserRecord, 'id' | 'name'>): AuditTarget {
  return { kind: 'user', id: user.id, name: user.name, version: null };
}
