/**
 * History routing. The gateway answers every dashboard path with index.html (SPA fallback in
 * src/http/dashboard.ts), so /keys can be bookmarked and reloaded.
 */

export type PageName =
  | 'models'
  | 'logs'
  | 'usage'
  | 'keys'
  | 'endpoints'
  | 'config'
  | 'audit'
  | 'users'
  | 'settings'
  | 'sign-in'
  | 'setup'
  | 'invite'
  | 'not-found';

const PATHS: Record<string, PageName> = {
  '/': 'models',
  '/models': 'models',
  '/logs': 'logs',
  '/usage': 'usage',
  '/keys': 'keys',
  '/endpoints': 'endpoints',
  '/config': 'config',
  '/audit': 'audit',
  '/users': 'users',
  '/settings': 'settings',
  '/invite': 'invite',
  '/sign-in': 'sign-in',
  '/setup': 'setup',
};

/** Pages that work without a session. */
export const PUBLIC_PAGES: ReadonlySet<PageName> = new Set(['sign-in', 'setup', 'invite']);

/**
 * Asked before the app navigates away from the current page (a page with unsaved work sets
 * one). Return false to stay; the blocker then asks the user itself and, if they agree, calls
 * `navigate(to, { force: true })`.
 */
export type NavigationBlocker = (to: string) => boolean;

class Router {
  path = $state(location.pathname);
  search = $state(location.search);
  private blocker: NavigationBlocker | undefined;

  page: PageName = $derived(PATHS[this.path.replace(/\/+$/, '') || '/'] ?? 'not-found');
  query: URLSearchParams = $derived(new URLSearchParams(this.search));

  constructor() {
    window.addEventListener('popstate', () => {
      // Back/forward has already changed the URL; a blocked page puts its own URL back and
      // stays, and the blocker decides (it navigates with force when the user agrees).
      const to = location.pathname + location.search + location.hash;
      const leavingPage = location.pathname !== this.path;
      if (leavingPage && this.blocker && !this.blocker(to)) {
        history.pushState(null, '', this.path + this.search);
        return;
      }
      this.sync();
    });
  }

  /** Sets (or, with undefined, clears) the check run before leaving the current page. Returns a remover. */
  block(blocker: NavigationBlocker | undefined): () => void {
    this.blocker = blocker;
    return () => {
      if (this.blocker === blocker) this.blocker = undefined;
    };
  }

  /** Navigates inside the app; `to` is a path with an optional query (and fragment). */
  navigate(to: string, options: { replace?: boolean; force?: boolean } = {}): void {
    const url = new URL(to, location.origin);
    if (!options.force && url.pathname !== location.pathname && this.blocker && !this.blocker(to)) return;
    if (url.origin !== location.origin) {
      location.assign(to);
      return;
    }
    const target = url.pathname + url.search + url.hash;
    if (target === location.pathname + location.search + location.hash) return;
    if (options.replace) history.replaceState(null, '', target);
    else history.pushState(null, '', target);
    this.sync();
    if (!options.replace) window.scrollTo(0, 0);
  }

  /** Updates one query parameter in place (no new history entry). */
  setQuery(name: string, value: string | null): void {
    const params = new URLSearchParams(location.search);
    if (value === null) params.delete(name);
    else params.set(name, value);
    const qs = params.toString();
    this.navigate(`${location.pathname}${qs ? `?${qs}` : ''}`, { replace: true });
  }

  private sync(): void {
    this.path = location.pathname;
    this.search = location.search;
  }
}

export const router = new Router();

/** For the sign-in page: where to go back to, only ever a path inside this app. */
export function safeNext(value: string | null): string {
  if (!value || !value.startsWith('/') || value.startsWith('//') || value.startsWith('/\\')) return '/models';
  const page = PATHS[new URL(value, location.origin).pathname.replace(/\/+$/, '') || '/'];
  return page && !PUBLIC_PAGES.has(page) ? value : '/models';
}

/**
 * Follows clicks on same-origin <a href> inside the app without a page load. Modified clicks
 * (new tab, download) and links with target/download keep the browser's behaviour.
 */
export function interceptLinks(root: HTMLElement): () => void {
  const onClick = (event: MouseEvent) => {
    if (
      event.defaultPrevented ||
      event.button !== 0 ||
      event.metaKey ||
      event.ctrlKey ||
      event.shiftKey ||
      event.altKey
    )
      return;
    const anchor = (event.target as Element | null)?.closest?.('a');
    if (!anchor || anchor.target || anchor.hasAttribute('download') || anchor.dataset.external !== undefined) return;
    const href = anchor.getAttribute('href');
    if (!href || href.startsWith('#')) return;
    const url = new URL(anchor.href, location.href);
    if (url.origin !== location.origin || url.pathname.startsWith('/api/') || url.pathname.startsWith('/v1')) return;
    event.preventDefault();
    router.navigate(url.pathname + url.search + url.hash);
  };
  root.addEventListener('click', onClick);
  return () => root.removeEventListener('click', onClick);
}
