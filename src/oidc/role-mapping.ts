/**
 * The role a person's claim gives them: `GATEHOUSE_OIDC_ROLE_CLAIM` read from the merged
 * claims, its values matched exactly against the admin, member and viewer lists; the highest
 * role matched wins.
 */

export type OidcRole = 'admin' | 'member' | 'viewer';

export interface RoleMapping {
  /** A claim name, or a dotted path into an object claim (`realm_access.roles`). */
  claim: string;
  admin: readonly string[];
  member: readonly string[];
  viewer: readonly string[];
}

/**
 * `unmanaged`: no list is set, so the provider decides no role (admins do, in Gatehouse).
 * `none`: lists are set and the person's claim matches none of them.
 */
export function roleFromClaims(
  claims: Readonly<Record<string, unknown>>,
  mapping: RoleMapping,
): OidcRole | 'none' | 'unmanaged' {
  if (mapping.admin.length + mapping.member.length + mapping.viewer.length === 0) return 'unmanaged';
  const values = claimValues(claims, mapping.claim);
  for (const role of ['admin', 'member', 'viewer'] as const) {
    if (mapping[role].some((value) => values.has(value))) return role;
  }
  return 'none';
}

/** A claim's string values: an array of strings, or one string. Anything else counts as none. */
function claimValues(claims: Readonly<Record<string, unknown>>, claim: string): ReadonlySet<string> {
  let value: unknown = claims[claim];
  // A claim named with dots (URL-named claims) is read whole before the name is taken as a path.
  if (value === undefined && claim.includes('.')) {
    value = claim.split('.').reduce<unknown>((at, part) => (isObject(at) ? at[part] : undefined), claims);
  }
  if (typeof value === 'string') return new Set([value]);
  if (Array.isArray(value)) return new Set(value.filter((v): v is string => typeof v === 'string'));
  return new Set();
}

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}
