/**
 * `setupPending`: `POST /api/setup` is for the first run only. Once an admin password exists
 * it answers `409 conflict` in onRequest, before the body is read, parsed or hashed, so the
 * public route costs nothing to anyone who keeps calling it.
 *
 * A password, once set, is never removed (it can only be replaced), so "set" is remembered and
 * the store is asked only while setup is still pending.
 */
import type { FastifyReply, FastifyRequest } from 'fastify';
import { GatewayError } from '../../core/errors.js';

export const SETUP_DONE_MESSAGE = 'An admin password already exists: sign in instead.';

export function setupPending(account: { hasPassword(): Promise<boolean> }) {
  if (typeof account?.hasPassword !== 'function')
    throw new TypeError('setupPending: an account with hasPassword() is required');
  let done = false;
  return async function setupPendingHook(_request: FastifyRequest, _reply: FastifyReply): Promise<void> {
    if (!done) done = await account.hasPassword();
    if (done) throw new GatewayError('conflict', { message: SETUP_DONE_MESSAGE });
  };
}
