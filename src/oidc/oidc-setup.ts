/**
 * OpenID Connect sign-in as the settings describe it, or undefined when it is off. The
 * settings are validated in `settings/` (issuer, client ID and public URL come together);
 * this folder declares the little it reads.
 */
import type { OidcClientOptions } from './oidc-client.js';
import type { RoleMapping } from './role-mapping.js';

export interface OidcSettings {
  oidcIssuer: URL | undefined;
  oidcClientId: string | undefined;
  oidcClientSecret: string | undefined;
  oidcScopes: readonly string[];
  oidcRoleClaim: string;
  oidcAdminValues: readonly string[];
  oidcMemberValues: readonly string[];
  oidcViewerValues: readonly string[];
  oidcAutoCreate: boolean;
  oidcName: string | undefined;
  publicUrl: string | undefined;
}

export interface OidcSetup {
  client: Omit<OidcClientOptions, 'now'>;
  mapping: RoleMapping;
  autoCreate: boolean;
  /** The provider's name on the sign-in page. */
  name: string;
  /** Where the provider sends the browser back (`/api/oidc/callback`) and the dashboard lives. */
  publicUrl: string;
}

export function oidcSetup(settings: Readonly<OidcSettings>): OidcSetup | undefined {
  const { oidcIssuer: issuer, oidcClientId: clientId, publicUrl } = settings;
  if (issuer === undefined || clientId === undefined || publicUrl === undefined) return undefined;
  return {
    client: {
      issuer,
      clientId,
      clientSecret: settings.oidcClientSecret,
      scopes: settings.oidcScopes,
      redirectUri: `${publicUrl}/api/oidc/callback`,
    },
    mapping: {
      claim: settings.oidcRoleClaim,
      admin: settings.oidcAdminValues,
      member: settings.oidcMemberValues,
      viewer: settings.oidcViewerValues,
    },
    autoCreate: settings.oidcAutoCreate,
    name: settings.oidcName ?? issuer.hostname,
    publicUrl,
  };
}
