/**
 * Gatehouse as an OpenID Connect relying party, through `openid-client`: discovery, the
 * authorization URL (code flow, PKCE S256, `state`, `nonce`), and the callback (the library
 * checks `state`, `iss`, the code exchange, the ID token's signature, audience, expiry and
 * `nonce`). Nothing of the protocol is checked here by hand.
 */
import * as client from 'openid-client';

export interface OidcClientOptions {
  issuer: URL;
  clientId: string;
  /** A secret: passed to the library only, never logged. Absent: a public client. */
  clientSecret: string | undefined;
  scopes: readonly string[];
  /** `<public URL>/api/oidc/callback`, exactly as registered at the provider. */
  redirectUri: string;
  /** Gatehouse's clock, for the ID token's time checks (tests move it). Default `Date.now`. */
  now?: () => number;
}

/** What one sign-in needs to remember between the redirect and the callback. */
export interface OidcChecks {
  state: string;
  nonce: string;
  codeVerifier: string;
}

/** The person the provider signed in: ID token claims, completed by userinfo. */
export interface OidcIdentity {
  /** The ID token's `iss` (the library checked it is the discovered issuer). */
  issuer: string;
  subject: string;
  claims: Readonly<Record<string, unknown>>;
}

export class OidcClient {
  readonly #options: OidcClientOptions;
  readonly #now: () => number;
  #discovered: Promise<client.Configuration> | undefined;
  #jwks: client.ExportedJWKSCache | undefined;

  constructor(options: OidcClientOptions) {
    this.#options = options;
    this.#now = options.now ?? Date.now;
  }

  /** Where to send the browser, and the checks its return must pass. */
  async start(): Promise<{ url: URL; checks: OidcChecks }> {
    const config = await this.#configuration();
    const checks: OidcChecks = {
      state: client.randomState(),
      nonce: client.randomNonce(),
      codeVerifier: client.randomPKCECodeVerifier(),
    };
    const url = client.buildAuthorizationUrl(config, {
      redirect_uri: this.#options.redirectUri,
      scope: this.#options.scopes.join(' '),
      response_type: 'code',
      state: checks.state,
      nonce: checks.nonce,
      code_challenge: await client.calculatePKCECodeChallenge(checks.codeVerifier),
      code_challenge_method: 'S256',
    });
    return { url, checks };
  }

  /**
   * Completes a sign-in from the callback's query string. Throws the library's errors
   * (`AuthorizationResponseError`, `ResponseBodyError`, or a check that failed).
   */
  async finish(callbackQuery: URLSearchParams, checks: OidcChecks): Promise<OidcIdentity> {
    const config = this.#atNow(await this.#configuration());
    const currentUrl = new URL(this.#options.redirectUri);
    currentUrl.search = callbackQuery.toString();
    const tokens = await client.authorizationCodeGrant(config, currentUrl, {
      expectedState: checks.state,
      expectedNonce: checks.nonce,
      pkceCodeVerifier: checks.codeVerifier,
      idTokenExpected: true,
    });
    this.#jwks = client.getJwksCache(config) ?? this.#jwks;
    const idToken = tokens.claims()!;
    let userinfo: Record<string, unknown> = {};
    if (config.serverMetadata().userinfo_endpoint !== undefined) {
      userinfo = await client.fetchUserInfo(config, tokens.access_token, idToken.sub);
    }
    // The ID token is signed for this sign-in: where both carry a claim, it wins.
    return { issuer: idToken.iss, subject: idToken.sub, claims: Object.freeze({ ...userinfo, ...idToken }) };
  }

  /** Discovery once; a failure is forgotten so the next sign-in asks the provider again. */
  #configuration(): Promise<client.Configuration> {
    this.#discovered ??= client
      .discovery(
        this.#options.issuer,
        this.#options.clientId,
        undefined,
        this.#authentication(),
        this.#options.issuer.protocol === 'http:' ? { execute: [client.allowInsecureRequests] } : undefined,
      )
      .catch((error: unknown) => {
        this.#discovered = undefined;
        throw error;
      });
    return this.#discovered;
  }

  /** The discovered configuration on Gatehouse's clock (the library reads time as a skew from Date.now). */
  #atNow(discovered: client.Configuration): client.Configuration {
    const config = new client.Configuration(
      discovered.serverMetadata(),
      this.#options.clientId,
      { [client.clockSkew]: Math.round((this.#now() - Date.now()) / 1000) },
      this.#authentication(),
    );
    if (this.#options.issuer.protocol === 'http:') client.allowInsecureRequests(config);
    if (this.#jwks) client.setJwksCache(config, this.#jwks);
    return config;
  }

  #authentication(): client.ClientAuth {
    const secret = this.#options.clientSecret;
    return secret === undefined ? client.None() : client.ClientSecretBasic(secret);
  }
}
