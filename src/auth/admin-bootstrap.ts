/**
 * What `gatehouse serve` does about the admin account at every start, before it listens:
 *
 * - `GATEHOUSE_ADMIN_PASSWORD` set: it becomes the first admin's password (hashed; the user is
 *   created when missing). When it differs from the stored one, that user's dashboard sessions
 *   are signed out (the line says so only when there was one).
 *   No setup link.
 * - otherwise, no password yet: a NEW one-time setup token is issued (the previous start's
 *   link stops working) and, once the address is known, printed as a link at warn level. That
 *   line is the only place the token ever appears.
 * - otherwise: any leftover setup token is dropped.
 */
import type { Logger } from 'pino';
import type { Store } from '../store/store.js';
import { AdminAccount } from './admin-account.js';
import type { ScryptCost } from './passwords.js';

export interface AdminBootstrap {
  /** The setup token to print, when the instance still needs its first password. */
  setupToken: string | undefined;
}

export async function prepareAdminAccess(input: {
  store: Store;
  adminPassword: string | undefined;
  passwordHashCost: Readonly<ScryptCost>;
  logger: Logger;
}): Promise<AdminBootstrap> {
  const { store, adminPassword, logger } = input;
  const account = new AdminAccount(store, { scryptCost: input.passwordHashCost });
  if (adminPassword !== undefined) {
    await account.clearSetupToken();
    const changed = await account.applyPassword(adminPassword);
    if (changed) {
      const ended = await store.sessions.deleteAllExcept(null, changed.id);
      logger.info(
        { admin: 'password_from_settings', sessions_ended: ended },
        ended > 0
          ? `Admin password set from GATEHOUSE_ADMIN_PASSWORD; ${ended} dashboard session(s) were signed out.`
          : 'Admin password set from GATEHOUSE_ADMIN_PASSWORD.',
      );
    }
    return { setupToken: undefined };
  }
  if (await account.hasPassword()) {
    await account.clearSetupToken();
    return { setupToken: undefined };
  }
  return { setupToken: await account.issueSetupToken() };
}

/** The first-run link: `<listen url>/setup#token=...`. A fragment never reaches a server log or a Referer. */
export function setupLink(listenUrl: string, token: string): string {
  const url = new URL(listenUrl);
  // 0.0.0.0 / :: are where we listen, not where anyone can browse to.
  if (url.hostname === '0.0.0.0' || url.hostname === '[::]') url.hostname = 'localhost';
  return `${url.origin}/setup#token=${token}`;
}

export function announceSetupLink(logger: Logger, listenUrl: string, token: string): void {
  logger.warn(
    { admin: 'setup_required' },
    `FIRST RUN: no admin password is set. Open ${setupLink(listenUrl, token)} to choose one ` +
      "(from another machine, put this machine's address in place of localhost). The link works once, " +
      'and only until the gateway restarts: each start prints a new one. To set the password without it, ' +
      'use GATEHOUSE_ADMIN_PASSWORD.',
  );
}
