/**
 * The part of oidc-provider's API the test provider uses (`test/helpers/oidc-provider.ts`).
 * The package ships no types and `@types/oidc-provider` is not a dependency yet; with it, this
 * file goes.
 */
declare module 'oidc-provider' {
  import type { IncomingMessage, ServerResponse } from 'node:http';

  interface Grant {
    addOIDCScope(scope: string): void;
    save(): Promise<string>;
  }
  interface KoaContextWithOIDC {
    oidc: {
      client?: { clientId: string };
      session?: { accountId?: string };
      params?: Record<string, unknown>;
      provider: Provider;
    };
  }
  interface Account {
    accountId: string;
    claims(): Promise<Record<string, unknown>>;
  }
  interface Configuration {
    clients?: Array<Record<string, unknown>>;
    jwks?: { keys: Array<Record<string, unknown>> };
    cookies?: { keys?: string[] };
    claims?: Record<string, string[]>;
    pkce?: { required?: () => boolean };
    ttl?: Record<string, number>;
    features?: Record<string, { enabled: boolean }>;
    findAccount?: (ctx: KoaContextWithOIDC, sub: string) => Promise<Account | undefined>;
    loadExistingGrant?: (ctx: KoaContextWithOIDC) => Promise<Grant | undefined>;
  }
  export default class Provider {
    constructor(issuer: string, configuration?: Configuration);
    Grant: new (properties: { clientId: string; accountId: string }) => Grant;
    callback(): (req: IncomingMessage, res: ServerResponse) => void;
    on(event: 'server_error', listener: (ctx: KoaContextWithOIDC, error: Error) => void): this;
  }
  export type { KoaContextWithOIDC };
}
