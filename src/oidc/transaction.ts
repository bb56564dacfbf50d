/**
 * One sign-in in progress, kept by the browser between the redirect to the provider and the
 * callback: `state`, `nonce`, the PKCE verifier, where to go afterwards and when it expires,
 * as JSON in a cookie with an HMAC-SHA256 over it. The key lives in the store's meta table, so
 * every replica on one database accepts what another started, and nothing per sign-in is
 * written to the store. A cookie from another browser is no use: its `state` is not in the
 * callback that browser gets.
 */
import { createHmac, randomBytes, timingSafeEqual } from 'node:crypto';
import type { MetaStore } from '../store/store.js';
import type { OidcChecks } from './oidc-client.js';

const TRANSACTION_KEY_META_KEY = 'oidc.transaction_hmac_key';
/** How long a person may spend at the provider's login page. */
export const TRANSACTION_TTL_MS = 10 * 60_000;
/** Far above what a sign-in needs; refused before its HMAC is computed. */
const MAX_SEALED_LENGTH = 2048;

export interface OidcTransaction extends OidcChecks {
  /** A path inside the dashboard to open after sign-in. */
  next: string;
  expiresAt: number;
}

export class TransactionSeal {
  readonly #meta: MetaStore;
  readonly #now: () => number;

  constructor(meta: MetaStore, now: () => number = Date.now) {
    this.#meta = meta;
    this.#now = now;
  }

  /** A cookie value for a new transaction that expires `TRANSACTION_TTL_MS` from now. */
  async seal(checks: OidcChecks, next: string): Promise<string> {
    const transaction: OidcTransaction = { ...checks, next, expiresAt: this.#now() + TRANSACTION_TTL_MS };
    const body = Buffer.from(JSON.stringify(transaction), 'utf8').toString('base64url');
    return `${body}.${mac(await this.#key(), body)}`;
  }

  /** The transaction a cookie holds, or why not. */
  async open(sealed: string | undefined): Promise<OidcTransaction | 'missing' | 'invalid' | 'expired'> {
    if (sealed === undefined || sealed === '') return 'missing';
    const dot = sealed.indexOf('.');
    if (sealed.length > MAX_SEALED_LENGTH || dot < 0) return 'invalid';
    const body = sealed.slice(0, dot);
    const given = Buffer.from(sealed.slice(dot + 1), 'base64url');
    const expected = Buffer.from(mac(await this.#key(), body), 'base64url');
    if (given.length !== expected.length || !timingSafeEqual(given, expected)) return 'invalid';
    const transaction = JSON.parse(Buffer.from(body, 'base64url').toString('utf8')) as OidcTransaction;
    return this.#now() >= transaction.expiresAt ? 'expired' : transaction;
  }

  /**
   * Read at every use rather than kept: replicas that raced to create the key all use the one
   * that was written last.
   */
  async #key(): Promise<Buffer> {
    let stored = await this.#meta.get(TRANSACTION_KEY_META_KEY);
    if (stored === undefined) {
      await this.#meta.set(TRANSACTION_KEY_META_KEY, randomBytes(32).toString('base64url'));
      stored = (await this.#meta.get(TRANSACTION_KEY_META_KEY))!;
    }
    return Buffer.from(stored, 'base64url');
  }
}

function mac(key: Buffer, body: string): string {
  return createHmac('sha256', key).update(body, 'utf8').digest('base64url');
}
