/**
 * The audit log and `Store.transaction`, as every backend must keep them (run by
 * store-contract.ts against SQLite and PostgreSQL).
 */
import { beforeEach, describe, expect, it } from 'vitest';
import { newKeyRecord } from '../../src/auth/api-keys.js';
import type { AuditRecord } from '../../src/store/records.js';
import type { Store } from '../../src/store/store.js';
import { newUsageId } from '../../src/store/usage-id.js';

const T0 = Date.UTC(2031, 5, 1);

function auditRecord(overrides: Partial<AuditRecord> = {}): AuditRecord {
  const at = overrides.at ?? T0;
  return {
    id: newUsageId(at),
    at,
    actor: { kind: 'session', id: 'ses-1', name: null },
    client: '192.0.2.7',
    action: 'key.create',
    target: { kind: 'key', id: 'key_abcdefghijkl', name: 'laptop', version: null },
    outcome: 'success',
    reason: null,
    changes: null,
    ...overrides,
  };
}

export function describeAuditContract(current: () => Store): void {
  describe('audit log', () => {
    let store: Store;
    beforeEach(async () => {
      store = current();
      while ((await store.audit.prune(Number.MAX_SAFE_INTEGER, 10_000)) > 0);
    });

    it('stores an entry and reads back every field, with and without a target', async () => {
      const full = auditRecord({
        actor: { kind: 'user', id: 'usr_1', name: 'Ada Lovelace ✓' },
        target: { kind: 'config', id: '/etc/llama-swap/config.yaml', name: null, version: '1-2-3' },
        outcome: 'failure',
        reason: 'config_conflict',
      });
      const bare = auditRecord({
        at: T0 + 1,
        actor: { kind: 'cli', id: null, name: null },
        client: null,
        action: 'model.unload_all',
        target: null,
      });
      await store.audit.append(full);
      await store.audit.append(bare);
      expect(await store.audit.list({ limit: 10 })).toEqual([bare, full]);
    });

    it('stores what a user action changed, from → to, with lists, budgets and nulls as they were', async () => {
      const changed = auditRecord({
        action: 'user.update',
        target: { kind: 'user', id: 'usr_abcdefghijkl', name: 'Ada', version: null },
        changes: {
          role: { from: 'viewer', to: 'member' },
          allowedModels: { from: [], to: ['qwen', 'llama-*'] },
          maxBudget: { from: null, to: { tokens: 1000, requests: null, gpuSeconds: 3.5, period: 'week' } },
          email: { from: 'ada@example.com', to: null },
        },
      });
      await store.audit.append(changed);
      expect(await store.audit.list({ limit: 10 })).toEqual([changed]);
    });

    it('pages newest first with before (an entry or a time) and filters by action', async () => {
      // Three entries in one millisecond: the id (time, then a per-process counter) orders them.
      const entries = [
        auditRecord({ at: T0, action: 'session.sign_in' }),
        auditRecord({ at: T0 + 10, action: 'key.create' }),
        auditRecord({ at: T0 + 10, action: 'key.delete' }),
        auditRecord({ at: T0 + 10, action: 'key.create' }),
        auditRecord({ at: T0 + 20, action: 'session.sign_out' }),
      ];
      for (const entry of entries) await store.audit.append(entry);
      const newestFirst = [...entries].reverse();

      const first = await store.audit.list({ limit: 2 });
      expect(first).toEqual(newestFirst.slice(0, 2));
      const last = first.at(-1)!;
      expect(await store.audit.list({ limit: 10, before: { at: last.at, id: last.id } })).toEqual(newestFirst.slice(2));
      expect(await store.audit.list({ limit: 10, before: { at: T0 + 10 } })).toEqual([entries[0]]);
      expect(await store.audit.list({ limit: 10, action: 'key.create' })).toEqual([entries[3], entries[1]]);
      expect(
        await store.audit.list({ limit: 10, action: 'key.create', before: { at: T0 + 10, id: entries[3]!.id } }),
      ).toEqual([entries[1]]);
    });

    it('prunes only entries older than the cutoff, at most the given number per call', async () => {
      for (let i = 0; i < 5; i++) await store.audit.append(auditRecord({ at: T0 + i }));
      expect(await store.audit.prune(T0 + 3, 2)).toBe(2);
      expect(await store.audit.prune(T0 + 3, 2)).toBe(1);
      expect(await store.audit.prune(T0 + 3, 2)).toBe(0);
      expect((await store.audit.list({ limit: 10 })).map((e) => e.at)).toEqual([T0 + 4, T0 + 3]);
    });

    it('refuses an outcome other than success or failure', async () => {
      await expect(store.audit.append(auditRecord({ outcome: 'maybe' as never }))).rejects.toThrow();
      expect(await store.audit.list({ limit: 10 })).toEqual([]);
    });

    it('commits a key write and its entry together', async () => {
      const { record } = newKeyRecord({ name: 'in a transaction' }, T0);
      const entry = auditRecord({ target: { kind: 'key', id: record.id, name: record.name, version: null } });
      await store.transaction(async (tx) => {
        await tx.keys.create(record);
        await tx.audit.append(entry);
      });
      expect(await store.keys.get(record.id)).toEqual(record);
      expect(await store.audit.list({ limit: 10 })).toEqual([entry]);
    });

    it('rolls back every write of a transaction whose entry is refused, and rethrows', async () => {
      const { record } = newKeyRecord({ name: 'never stored' }, T0);
      await store.meta.set('audit.contract', 'before');
      const failed = store.transaction(async (tx) => {
        await tx.keys.create(record);
        await tx.meta.set('audit.contract', 'after');
        await tx.sessions.deleteAllExcept(null);
        await tx.audit.append(auditRecord({ outcome: 'maybe' as never }));
      });
      await expect(failed).rejects.toThrow();
      expect(await store.keys.get(record.id)).toBeUndefined();
      expect(await store.meta.get('audit.contract')).toBe('before');
      expect(await store.audit.list({ limit: 10 })).toEqual([]);
      // The store is usable afterwards: the connection left no transaction open.
      await store.keys.create(record);
      expect(await store.keys.get(record.id)).toEqual(record);
    });
  });
}
