/** Every audit action, for checking a filter; the typecheck fails when one is missing here. */
import type { AuditAction } from '../admin-api/types.js';

const ACTIONS = {
  'session.sign_in': true,
  'session.sign_in_failed': true,
  'session.sign_out': true,
  'setup.complete': true,
  'password.change': true,
  'key.create': true,
  'key.update': true,
  'key.revoke': true,
  'key.delete': true,
  'config.save': true,
  'config.format': true,
  'model.load': true,
  'model.unload': true,
  'model.unload_all': true,
  'user.create': true,
  'user.invite': true,
  'user.reinvite': true,
  'user.invite_accept': true,
  'user.role_change': true,
  'user.disable': true,
  'user.enable': true,
  'user.update': true,
} as const satisfies Record<AuditAction, true>;

export const AUDIT_ACTIONS = Object.keys(ACTIONS) as readonly AuditAction[];
