/**
 * Sign-in through the OpenID Provider: the link that starts it (a full page load: the server
 * redirects to the provider) and what the sign-in page says when the server sent the browser
 * back with `?oidc_error=<code>` (codes of the server's error catalogue).
 */
import { safeNext } from './router.svelte';

const REFUSALS: Record<string, (provider: string) => string> = {
  oidc_failed: (provider) => `The sign-in with ${provider} could not be completed. Try again.`,
  oidc_unavailable: (provider) => `${provider} could not be reached. Try again later, or sign in with a password.`,
  oidc_not_invited: (provider) =>
    `${provider} knows you, but no one has added you to this gateway yet. Ask an admin to invite you ` +
    `(with the email address ${provider} has for you).`,
  oidc_no_role: (provider) => `Your ${provider} account is in none of the groups this gateway lets in.`,
  user_disabled: () => 'Your user is disabled. Ask an admin to enable it.',
};

/** `/api/oidc/login`, with where to go afterwards when that is a page inside the app. */
export function oidcLoginHref(next: string | null): string {
  const target = next === null ? null : safeNext(next);
  return target === null ? '/api/oidc/login' : `/api/oidc/login?next=${encodeURIComponent(target)}`;
}

/** The sentence for a refusal code, a general one for a code this page does not know, null without one. */
export function oidcRefusal(code: string | null, provider: string): string | null {
  if (code === null || code === '') return null;
  return (REFUSALS[code] ?? REFUSALS.oidc_failed!)(provider);
}
