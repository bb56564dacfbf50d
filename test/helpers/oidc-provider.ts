/**
 * A real OpenID Provider for tests: `oidc-provider` (OpenID Certified) on a loopback port, with
 * its development login page (any password; the login name is the account), PKCE required,
 * consent taken as given (like a provider's first-party client), and accounts whose claims a
 * test sets and changes. The issuer is `http://localhost:<port>` so that, in a browser, the
 * provider and a gateway on 127.0.0.1 are different sites, as they are in production.
 */
import { generateKeyPairSync } from 'node:crypto';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import Provider, { type KoaContextWithOIDC } from 'oidc-provider';

export interface AccountClaims {
  email?: string;
  email_verified?: boolean;
  name?: string;
  preferred_username?: string;
  groups?: string[];
  [claim: string]: unknown;
}

export interface TestProviderOptions {
  clientId?: string;
  clientSecret?: string;
  /** Every redirect URI the client may use (the gateway's `<public URL>/api/oidc/callback`). */
  redirectUris: string[];
  /** Lifetime of ID tokens, seconds. */
  idTokenTtlSeconds?: number;
}

export interface TestProvider {
  issuer: string;
  clientId: string;
  clientSecret: string;
  /** Adds or replaces an account: the login name on the provider's page is `sub`. */
  setAccount(sub: string, claims: AccountClaims): void;
  close(): Promise<void>;
}

const TEST_CLIENT_ID = 'gatehouse';
const TEST_CLIENT_SECRET = 'provider-client-secret-for-tests-0123456789';

export async function startTestProvider(options: TestProviderOptions): Promise<TestProvider> {
  const clientId = options.clientId ?? TEST_CLIENT_ID;
  const clientSecret = options.clientSecret ?? TEST_CLIENT_SECRET;
  const accounts = new Map<string, AccountClaims>();
  const server: Server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const issuer = `http://localhost:${(server.address() as AddressInfo).port}`;
  const signingKey = generateKeyPairSync('rsa', { modulusLength: 2048 }).privateKey.export({ format: 'jwk' });

  const provider = new Provider(issuer, {
    clients: [
      {
        client_id: clientId,
        client_secret: clientSecret,
        redirect_uris: options.redirectUris,
        grant_types: ['authorization_code'],
        response_types: ['code'],
      },
    ],
    jwks: { keys: [{ ...signingKey, kid: 'test-signing-key', use: 'sig', alg: 'RS256' }] },
    cookies: { keys: ['oidc-provider cookie key for tests'] },
    // Groups come with `profile`, as Authentik sends them; Keycloak adds a mapper to a default scope.
    claims: {
      openid: ['sub'],
      email: ['email', 'email_verified'],
      profile: ['name', 'preferred_username', 'groups'],
    },
    pkce: { required: () => true },
    ttl: {
      AccessToken: 600,
      AuthorizationCode: 600,
      IdToken: options.idTokenTtlSeconds ?? 3600,
      Interaction: 600,
      Session: 3600,
      Grant: 3600,
    },
    features: { devInteractions: { enabled: true } },
    async findAccount(_ctx, sub) {
      const claims = accounts.get(sub);
      if (!claims) return undefined;
      return { accountId: sub, claims: async () => ({ sub, ...structuredClone(claims) }) };
    },
    // The grant the client asks for is given without a consent page.
    async loadExistingGrant(ctx: KoaContextWithOIDC) {
      const { client, session, params } = ctx.oidc;
      if (!client || !session?.accountId) return undefined;
      const grant = new ctx.oidc.provider.Grant({ clientId: client.clientId, accountId: session.accountId });
      grant.addOIDCScope(String(params?.scope ?? 'openid'));
      await grant.save();
      return grant;
    },
  });
  provider.on('server_error', (_ctx, error) => {
    console.error('test OpenID Provider: server_error', error);
  });
  const handle = provider.callback();
  server.on('request', (req, res) => void handle(req, res));

  return {
    issuer,
    clientId,
    clientSecret,
    setAccount(sub, claims) {
      accounts.set(sub, claims);
    },
    async close() {
      server.closeAllConnections();
      await new Promise<void>((resolve, reject) => server.close((error) => (error ? reject(error) : resolve())));
    },
  };
}
