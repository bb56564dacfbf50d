/** Audit page logic: what each action, actor and target reads as, and the filters from the URL. */
import type { AuditAction, AuditActor, AuditChanges, AuditEntry, AuditTarget, AuditValue } from '../api/index.js';
import { capText } from './budget.js';
import { localInputToIso } from './usage.js';

/** Every action with its label, in the order the filter lists them (the typecheck wants all). */
export const ACTION_LABELS = {
  'session.sign_in': 'Signed in',
  'session.sign_in_failed': 'Sign-in failed',
  'session.sign_out': 'Signed out',
  'setup.complete': 'First-run setup',
  'password.change': 'Password changed',
  'key.create': 'Key created',
  'key.update': 'Key changed',
  'key.revoke': 'Key revoked',
  'key.delete': 'Key deleted',
  'config.save': 'Config saved',
  'config.format': 'Config formatted',
  'model.load': 'Model loaded',
  'model.unload': 'Model unloaded',
  'model.unload_all': 'All models unloaded',
  'user.create': 'User created',
  'user.invite': 'User invited',
  'user.reinvite': 'New invitation link',
  'user.invite_accept': 'Invitation accepted',
  'user.role_change': 'Role changed',
  'user.disable': 'User disabled',
  'user.enable': 'User enabled',
  'user.update': 'User changed',
} as const satisfies Record<AuditAction, string>;

export const ACTION_CHOICES = Object.entries(ACTION_LABELS).map(([value, label]) => ({
  value: value as AuditAction,
  label,
}));

export interface AuditFilterState {
  /** '' = every action. */
  action: AuditAction | '';
  /** A `datetime-local` value (local time): entries before it; '' = up to now. */
  before: string;
}

export function parseAuditFilters(query: URLSearchParams): AuditFilterState {
  const action = query.get('action') ?? '';
  return {
    action: action in ACTION_LABELS ? (action as AuditAction) : '',
    before: query.get('before') ?? '',
  };
}

/** The API query for the filters (an unreadable time is left out rather than sent). */
export function toAuditQuery(state: AuditFilterState): { action?: AuditAction; before?: string } {
  const before = localInputToIso(state.before);
  return { ...(state.action ? { action: state.action } : {}), ...(before ? { before } : {}) };
}

export function actorLabel(actor: AuditActor): string {
  switch (actor.kind) {
    case 'session':
      return actor.id === null ? 'Browser, not signed in' : `Session ${actor.id.slice(0, 8)}`;
    case 'admin-token':
      return 'Admin token';
    case 'user':
      return actor.name ?? actor.id ?? 'User';
    case 'cli':
      return actor.name ? `CLI (${actor.name})` : 'CLI';
    case 'api-key':
      return actor.id === null ? 'Client, no key (open mode)' : `API key ${actor.name ?? actor.id}`;
  }
}

export function targetLabel(target: AuditTarget | null): string {
  if (target === null) return '—';
  if (target.kind === 'key' || target.kind === 'user') return target.name ? `${target.name} (${target.id})` : target.id;
  if (target.kind === 'config') return target.version ? `${target.id} @ ${target.version}` : target.id;
  return target.id;
}

export function outcomeText(entry: Pick<AuditEntry, 'outcome' | 'reason'>): string {
  return entry.outcome === 'success' ? 'success' : `failed${entry.reason ? `: ${entry.reason}` : ''}`;
}

/** What a user action changed, one line per field: `Role: member → admin`. */
export function changeLines(changes: AuditChanges | null): string[] {
  if (changes === null) return [];
  return Object.entries(changes).map(([field, { from, to }]) => {
    const label = FIELD_LABELS[field] ?? field;
    return `${label}: ${valueText(field, from)} → ${valueText(field, to)}`;
  });
}

const FIELD_LABELS: Record<string, string> = {
  name: 'Name',
  email: 'Email',
  role: 'Role',
  status: 'Status',
  signIn: 'Sign-in',
  allowedModels: 'Models',
  maxBudget: 'Maximum budget',
};

function valueText(field: string, value: AuditValue): string {
  if (field === 'signIn' && value === 'oidc') return 'identity provider';
  if (Array.isArray(value)) return value.length === 0 ? 'every model' : value.join(', ');
  if (value !== null && typeof value === 'object') return capText(value);
  if (value === null) return field === 'maxBudget' ? 'No cap' : '—';
  return String(value);
}
