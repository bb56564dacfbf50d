import { getSession, isApiError, ApiError } from '../api/index.js';

/** What the app knows about the admin session. Loaded once at start, then kept by events. */
class Session {
  phase = $state<'loading' | 'ready' | 'error'>('loading');
  authenticated = $state(false);
  setupRequired = $state(false);
  error = $state<ApiError | null>(null);
  /** Set when a signed-in session ended by itself; the sign-in page says so. */
  expired = $state(false);

  async load(): Promise<void> {
    this.phase = 'loading';
    try {
      const info = await getSession();
      this.authenticated = info.authenticated;
      this.setupRequired = info.setupRequired;
      this.error = null;
      this.phase = 'ready';
    } catch (err) {
      this.error = isApiError(err) ? err : new ApiError({ status: 0, code: 'unexpected', message: String(err) });
      this.phase = 'error';
    }
  }

  signedIn(): void {
    this.authenticated = true;
    this.expired = false;
    this.setupRequired = false;
    this.phase = 'ready';
  }

  signedOut(): void {
    this.authenticated = false;
    if (this.phase === 'loading') this.phase = 'ready';
  }
}

export const session = new Session();
