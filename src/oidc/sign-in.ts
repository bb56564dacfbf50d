/**
 * Who an OpenID Provider's sign-in makes the caller, or why nobody:
 *
 * - A returning person is found by (issuer, subject) only, so a changed email at the provider
 *   keeps the account and another account that takes the email over gets nothing.
 * - At a first sign-in, a user an admin invited (no password set yet, no provider linked) is
 *   linked when the provider vouches for the same email (`email_verified` true) while the
 *   invitation has not expired: the invitation was the admin's consent, for as long as its link
 *   works. The link is then by subject.
 * - Otherwise a new member is made only with `GATEHOUSE_OIDC_AUTO_CREATE`.
 * - With role lists set, the role claim decides the role at every sign-in, and a person in
 *   none of the lists is refused. Disabled users are refused.
 */
import type { Users } from '../auth/users.js';
import type { Store } from '../store/store.js';
import type { UserRecord, UserRole } from '../store/records.js';
import type { OidcIdentity } from './oidc-client.js';
import { roleFromClaims, type RoleMapping } from './role-mapping.js';

export type OidcRefusal = 'oidc_not_invited' | 'oidc_no_role' | 'user_disabled';

/** `before`: the user as this sign-in found them (null when it made them), for the audit entry. */
export type OidcDecision =
  | { ok: true; user: UserRecord; before: UserRecord | null; created: boolean; linked: boolean }
  | { ok: false; code: OidcRefusal; reason: string };

export interface OidcSignInOptions {
  users: Users;
  store: Pick<Store, 'users' | 'invites'>;
  mapping: RoleMapping;
  autoCreate: boolean;
}

export function oidcSignIn(options: OidcSignInOptions): (identity: OidcIdentity) => Promise<OidcDecision> {
  const { users, store, mapping, autoCreate } = options;
  return async (identity) => {
    const mapped = roleFromClaims(identity.claims, mapping);
    if (mapped === 'none')
      return { ok: false, code: 'oidc_no_role', reason: `no value of the ${mapping.claim} claim maps to a role` };
    const role: UserRole | undefined = mapped === 'unmanaged' ? undefined : mapped;
    const email = stringClaim(identity.claims, 'email') ?? null;

    const known = await store.users.findByOidc(identity.issuer, identity.subject);
    const invited = known ? undefined : await invitedUser(users, identity);
    if (invited) {
      if (invited.disabledAt !== null)
        return { ok: false, code: 'user_disabled', reason: 'the invited user is disabled' };
      const linked = await store.users.update(invited.id, {
        oidc: { issuer: identity.issuer, subject: identity.subject },
        ...(role !== undefined ? { role } : {}),
      });
      await store.invites.deleteForUser(invited.id);
      return { ok: true, user: linked!, before: invited, created: false, linked: true };
    }
    if (!known && !autoCreate)
      return {
        ok: false,
        code: 'oidc_not_invited',
        reason: 'no user has this subject or an invitation for this email',
      };
    const result = await users.findOrCreateOidcUser({
      issuer: identity.issuer,
      subject: identity.subject,
      name: displayName(identity, email),
      email,
      role,
      autoCreate,
    });
    if (!result.ok)
      return result.reason === 'disabled'
        ? { ok: false, code: 'user_disabled', reason: 'the user is disabled' }
        : { ok: false, code: 'oidc_not_invited', reason: 'the user could not be found or made' };
    return { ok: true, user: result.user, before: known ?? null, created: result.created, linked: false };
  };
}

/** A user invited with the email the provider verified for this person, while the invitation lasts. */
async function invitedUser(users: Users, identity: OidcIdentity): Promise<UserRecord | undefined> {
  const email = stringClaim(identity.claims, 'email');
  if (email === undefined || identity.claims.email_verified !== true) return undefined;
  return users.invitedByEmail(email);
}

function displayName(identity: OidcIdentity, email: string | null): string {
  return (
    stringClaim(identity.claims, 'name') ??
    stringClaim(identity.claims, 'preferred_username') ??
    email?.split('@')[0] ??
    identity.subject
  );
}

function stringClaim(claims: Readonly<Record<string, unknown>>, name: string): string | undefined {
  const value = claims[name];
  return typeof value === 'string' && value.trim() !== '' ? value.trim() : undefined;
}
