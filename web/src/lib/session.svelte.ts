import { getSession, isApiError, ApiError, type User, type UserRole } from '../api/index.js';
import type { PageName } from './router.svelte';

/** The pages each role may open; the server refuses the rest anyway. */
const ROLE_PAGES: Record<UserRole, ReadonlySet<PageName>> = {
  admin: new Set(['models', 'logs', 'usage', 'keys', 'endpoints', 'config', 'audit', 'users', 'settings', 'not-found']),
  viewer: new Set(['models', 'logs', 'usage', 'keys', 'endpoints', 'audit', 'users', 'settings', 'not-found']),
  member: new Set(['usage', 'keys', 'endpoints', 'settings', 'not-found']),
};

/** What the app knows about the admin session. Loaded once at start, then kept by events. */
class Session {
  phase = $state<'loading' | 'ready' | 'error'>('loading');
  authenticated = $state(false);
  setupRequired = $state(false);
  error = $state<ApiError | null>(null);
  /** Set when a signed-in session ended by itself; the sign-in page says so. */
  expired = $state(false);
  /** The signed-in user (null for the admin token) and what they may do. */
  user = $state<User | null>(null);
  role = $state<UserRole | null>(null);
  /** The OpenID Provider's name when the sign-in page offers it, else null. */
  oidcName = $state<string | null>(null);

  /** Whether the signed-in role may open `page`. */
  may(page: PageName): boolean {
    return this.role !== null && ROLE_PAGES[this.role].has(page);
  }

  /** Admins change things; viewers look; members change only their own keys. */
  get canEdit(): boolean {
    return this.role === 'admin';
  }

  /** Where a role lands: members have no Models page. */
  get home(): string {
    return this.role === 'member' ? '/endpoints' : '/models';
  }

  async load(): Promise<void> {
    this.phase = 'loading';
    try {
      const info = await getSession();
      this.authenticated = info.authenticated;
      this.setupRequired = info.setupRequired;
      this.user = info.user;
      this.role = info.role;
      this.oidcName = info.oidc?.name ?? null;
      this.error = null;
      this.phase = 'ready';
    } catch (err) {
      this.error = isApiError(err) ? err : new ApiError({ status: 0, code: 'unexpected', message: String(err) });
      this.phase = 'error';
    }
  }

  /** Reads the signed-in user again (an admin may have changed their role or cap); keeps what it had on failure. */
  async refreshUser(): Promise<void> {
    try {
      const info = await getSession();
      if (!info.authenticated) return;
      this.user = info.user;
      this.role = info.role;
    } catch {
      // The next request that needs the session says what went wrong.
    }
  }

  /** After a sign-in: who it is comes from the server. */
  async signedIn(): Promise<void> {
    this.expired = false;
    await this.load();
  }

  signedOut(): void {
    this.authenticated = false;
    this.user = null;
    this.role = null;
    if (this.phase === 'loading') this.phase = 'ready';
  }
}

export const session = new Session();
