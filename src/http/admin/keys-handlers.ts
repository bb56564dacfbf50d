/**
 * Admin API for API keys: `GET/POST /api/keys`, `PATCH/DELETE /api/keys/:id`. Routes and the
 * admin-session chain are declared in the route table; these are only the handlers. The list is
 * oldest first (the store's order); the dashboard shows it newest first.
 *
 * Owners: a key made in a signed-in dashboard belongs to that user, one made with the admin
 * token to nobody. A member sees and changes only their own keys (others are 404, as if absent),
 * only with models inside the allowance an admin set for them and budgets inside their maximum
 * budget, limits and expiry an admin set only tightened (`auth/key-ceilings.ts`), never the queue
 * priority, and never deletes the last key (that would open the API to everyone).
 *
 * Responses never carry a key's hash; the raw key appears once, in the answer to the POST
 * that created it. Every write commits with its audit entry (`audited.ts`); after it the key
 * index reloads before the handler answers, so the next `/v1` request already sees the change.
 */
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { CreatedKey, DeletedKey, KeyList, UpdatedKey } from '../../admin-api/types.js';
import type { AdminIdentity } from '../../auth/admin-identity.js';
import { newKeyRecord, toKeyView } from '../../auth/api-keys.js';
import { keyInputRules, type KeyInputKind } from '../../auth/key-input.js';
import type { KeyIndex } from '../../auth/key-index.js';
import { outsideAllowance, type ModelCatalog } from '../../auth/model-access.js';
import { budgetCapRefusal } from '../../auth/budget-cap.js';
import { ceilingRefusals, ceilingsSetBy, NO_CEILINGS } from '../../auth/key-ceilings.js';
import type { KeyBudget, KeyRecord, UserRecord } from '../../store/records.js';
import type { Store, StoreTransaction } from '../../store/store.js';
import { GatewayError } from '../../core/errors.js';
import type { AuditedHandler, AuditScope } from './audited.js';

export interface KeysHandlerDeps {
  store: Store;
  index: Pick<KeyIndex, 'reload' | 'flush'>;
  /** llama-swap's models, to tell whether a member's key stays inside their allowance. */
  catalog?: () => Promise<ModelCatalog | undefined>;
  now?: () => number;
}

/** The member a request acts for, or undefined for admins and the admin token. */
function memberOf(identity: AdminIdentity | null): UserRecord | undefined {
  return identity?.via === 'session' && identity.user.role === 'member' ? identity.user : undefined;
}

/** The owner a new key gets: the signed-in user; nobody for the admin token. */
function ownerOf(identity: AdminIdentity | null): string | null {
  return identity?.via === 'session' ? identity.user.id : null;
}

type Handler = (request: FastifyRequest, reply: FastifyReply) => Promise<unknown>;

export interface KeysHandlers {
  list: Handler;
  create: AuditedHandler;
  update: AuditedHandler;
  remove: AuditedHandler;
}

/** An audit entry's target: the key's id and its name (never its secret or hash). */
function keyTarget(audit: AuditScope, key: Pick<KeyRecord, 'id' | 'name'>): void {
  audit.target = { kind: 'key', id: key.id, name: key.name, version: null };
}

export function createKeyHandlers({ store, index, catalog, now = Date.now }: KeysHandlerDeps): KeysHandlers {
  const findOr404 = async (request: FastifyRequest) => {
    const id = (request.params as { id?: unknown } | undefined)?.id;
    const key = typeof id === 'string' ? await store.keys.get(id) : undefined;
    const member = memberOf(request.adminIdentity);
    // Another user's key is answered as absent: a member learns nothing about it.
    if (!key || (member && key.ownerId !== member.id))
      throw new GatewayError('not_found', { message: `No API key with id ${JSON.stringify(id ?? '')}.` });
    return key;
  };

  /** Refuses a member's model list outside their allowance, and any priority or manage scope they set. */
  const checkMemberInput = async (
    member: UserRecord | undefined,
    input: { models?: string[]; priority?: number; manage?: boolean },
    creating: boolean,
  ) => {
    if (!member) return;
    // Loading and unloading models is an admin's: a member's key may not be given it either.
    if (input.manage === true)
      throw new GatewayError('admin_forbidden', {
        message: 'Only an admin gives a key the manage scope.',
        details: [{ path: '/manage', message: 'admin only' }],
      });
    if (input.priority !== undefined && input.priority !== 0)
      throw new GatewayError('admin_forbidden', {
        message: "Only an admin sets a key's queue priority.",
        details: [{ path: '/priority', message: 'admin only' }],
      });
    if (input.models === undefined && !creating) return;
    const outside = outsideAllowance(member.allowedModels, input.models ?? [], await catalog?.());
    if (outside.length > 0)
      throw new GatewayError('admin_forbidden', {
        message: `Your keys may allow only these models: ${member.allowedModels.join(', ')}.`,
        details: outside.map((model) => ({ path: '/models', message: `${model} is outside your allowance` })),
      });
    // The maximum budget is checked by `fitBudgetCap` inside the write's transaction, under the
    // member's owner lock, where their other keys are read together with the write.
  };

  const owners = async (keys: readonly KeyRecord[]): Promise<ReadonlyMap<string, string>> => {
    if (!keys.some((key) => key.ownerId !== null)) return new Map();
    return new Map((await store.users.list()).map((user) => [user.id, user.name]));
  };

  return {
    async list(request) {
      // Opportunistic: lets the list show uses from the last few seconds. A failure here is
      // reported by the index's periodic flush; the list must not fail because of it.
      await index.flush().catch(() => {});
      const at = now();
      const member = memberOf(request.adminIdentity);
      const keys = await store.keys.list(member ? { ownerId: member.id } : undefined);
      const names = await owners(keys);
      return { keys: keys.map((key) => toKeyView(key, at, names)) } satisfies KeyList;
    },

    async create(request, reply, audit) {
      const at = now();
      const input = readKeyInput('create', request.body, at);
      const member = memberOf(request.adminIdentity);
      await checkMemberInput(member, input, true);
      const { record, secret } = newKeyRecord({ ...input, ownerId: ownerOf(request.adminIdentity) }, at);
      // A member's own limits bind nobody: they may loosen them later.
      if (member) record.ceilings = { ...NO_CEILINGS };
      keyTarget(audit, record);
      await audit.commit(async (tx) => {
        await fitBudgetCap(tx, member, record.budget);
        return tx.keys.create(record);
      });
      await index.reload();
      reply.code(201);
      return { key: toKeyView(record, at, await owners([record])), secret } satisfies CreatedKey;
    },

    async update(request, _reply, audit) {
      const at = now();
      const { patch, revoke } = readKeyInput('update', request.body, at);
      if (revoke) audit.action = 'key.revoke';
      const existing = await findOr404(request);
      keyTarget(audit, { id: existing.id, name: patch.name ?? existing.name });
      const member = memberOf(request.adminIdentity);
      await checkMemberInput(member, patch, false);
      if (member) {
        const above = ceilingRefusals(existing.ceilings, patch);
        if (above.length > 0)
          throw new GatewayError('admin_forbidden', {
            message: 'An admin set limits on this key: you may tighten them, not raise or clear them.',
            details: above,
          });
      } else patch.ceilings = ceilingsSetBy(patch);
      // A revoked key (or one being revoked) holds no share of the cap, whatever its budget.
      const capped = patch.budget !== undefined && !revoke && existing.revokedAt === null;
      // Revoking twice keeps the first revocation time.
      if (revoke) patch.revokedAt = existing.revokedAt ?? at;
      const updated = await audit.commit(async (tx) => {
        if (capped) await fitBudgetCap(tx, member, { ...existing.budget, ...patch.budget }, existing.id);
        return tx.keys.update(existing.id, patch);
      });
      if (!updated)
        throw new GatewayError('not_found', { message: `No API key with id ${JSON.stringify(existing.id)}.` });
      await index.reload();
      return { key: toKeyView(updated, at, await owners([updated])) } satisfies UpdatedKey;
    },

    async remove(request, _reply, audit) {
      const key = await findOr404(request);
      keyTarget(audit, key);
      const count = await store.keys.count();
      if (count <= 1 && memberOf(request.adminIdentity))
        throw new GatewayError('admin_forbidden', {
          message: `${key.id} is the last API key: deleting it would open the API to everyone. Revoke it instead.`,
        });
      if (count <= 1 && !lastKeyConfirmed(request)) {
        throw new GatewayError('conflict', {
          message:
            `${key.id} is the last API key. Deleting it reopens the API: every client will be let in without a key. ` +
            'Repeat the request with ?confirm=last (or header "x-confirm: last") to delete it anyway, or ' +
            'revoke it instead.',
          details: [{ path: '/confirm', message: 'required to delete the last key: "last"' }],
        });
      }
      await audit.commit((tx) => tx.keys.delete(key.id));
      await index.reload();
      const remaining = await store.keys.count();
      return (
        remaining === 0
          ? {
              deleted: true,
              remaining,
              warning: 'That was the last API key: the API is now open, every client is let in without a key.',
            }
          : { deleted: true, remaining }
      ) satisfies DeletedKey;
    },
  };
}

/**
 * Refuses a member's key budget that does not fit their maximum beside their other non-revoked
 * keys (`auth/budget-cap.ts`). `tx` is the write's transaction, so the sum is of what it commits with.
 */
async function fitBudgetCap(
  tx: Pick<StoreTransaction, 'keys' | 'lockKeyOwner'>,
  member: UserRecord | undefined,
  budget: KeyBudget,
  keyId?: string,
): Promise<void> {
  if (!member?.maxBudget) return;
  // Two writes of one member at once would otherwise both read the same sum and both fit (on
  // PostgreSQL): the second waits here until the first commits, then reads its key too.
  await tx.lockKeyOwner(member.id);
  const others = (await tx.keys.list({ ownerId: member.id })).filter((k) => k.revokedAt === null && k.id !== keyId);
  const refusal = budgetCapRefusal(member.maxBudget, budget, others);
  if (refusal) throw new GatewayError('admin_forbidden', refusal);
}

function lastKeyConfirmed(request: FastifyRequest): boolean {
  const query = request.query as Record<string, unknown> | undefined;
  const header = request.headers['x-confirm'];
  return query?.confirm === 'last' || header === 'last';
}

/** The body's fields once the route schema passed it, or `422 validation_failed` with every issue. */
function readKeyInput<K extends KeyInputKind>(kind: K, body: unknown, nowMs: number) {
  const checked = keyInputRules(kind, body as never, nowMs);
  if (!checked.ok) throw new GatewayError('validation_failed', { details: checked.issues });
  return checked.input;
}
