import { isApiError, signOut } from '../api/index.js';
import { router } from './router.svelte';
import { session } from './session.svelte';
import { toasts } from './toasts.svelte';

/** Ends this browser's session (header button and Settings), then shows the sign-in page. */
export async function signOutHere(): Promise<void> {
  try {
    await signOut();
  } catch (err) {
    // Signed out or not, the session here ends; say if the server did not confirm.
    toasts.show('warning', `The server did not confirm the sign-out: ${isApiError(err) ? err.message : String(err)}`);
  } finally {
    session.signedOut();
    router.navigate('/sign-in', { replace: true });
  }
}
