/**
 * The behaviour every `Store` backend must have. A backend's test file calls
 * `describeStoreContract(name, open)`, where each `open()` opens a NEW connection to the SAME
 * database, and the first call meets that database empty (fresh dir, fresh schema).
 */
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it, vi } from 'vitest';
import { newKeyRecord, type NewKeyInput } from '../../src/auth/api-keys.js';
import { MIGRATIONS } from '../../src/store/migrations.js';
import { AmbiguousKeyReferenceError, type Store } from '../../src/store/store.js';
import type { AdminSessionRecord, KeyRecord, UserRecord } from '../../src/store/records.js';
import { describeAuditContract } from './audit-contract.js';
import { describeUsageContract } from './usage-contract.js';

export const T0 = Date.UTC(2030, 0, 1);

let sessionSerial = 0;
function sessionRecord(overrides: Partial<AdminSessionRecord> = {}): AdminSessionRecord {
  sessionSerial++;
  return {
    id: `ses-${process.pid}-${sessionSerial}`,
    tokenHash: `${sessionSerial.toString(16).padStart(8, '0')}${'ab'.repeat(28)}`,
    createdAt: T0,
    lastSeenAt: T0,
    expiresAt: T0 + 30 * 86_400_000,
    userId: null,
    ...overrides,
  };
}

export function keyRecord(input: Partial<NewKeyInput> = {}, overrides: Partial<KeyRecord> = {}, at = T0): KeyRecord {
  return { ...newKeyRecord({ name: 'test key', ...input }, at).record, ...overrides };
}

/** Resolves once `predicate` holds, polling every 10 ms; rejects after `timeoutMs`. */
export async function waitFor(predicate: () => boolean, timeoutMs: number, what: string): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!predicate()) {
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 10));
  }
}

export function describeStoreContract(name: string, open: () => Promise<Store>): void {
  describe(`Store contract: ${name}`, () => {
    let store: Store;
    const others: Store[] = [];
    const openOther = async (): Promise<Store> => {
      const other = await open();
      others.push(other);
      return other;
    };

    // A failed open fails every test with its reason (a failing beforeAll would only show
    // them as skipped).
    let openFailure: Error | undefined;
    beforeAll(async () => {
      try {
        store = await open();
      } catch (error) {
        openFailure = error instanceof Error ? error : new Error(String(error));
      }
    });

    afterAll(async () => {
      await Promise.all(others.map((s) => s.close()));
      await store?.close();
    });

    beforeEach(async () => {
      if (openFailure !== undefined) throw openFailure;
      for (const key of await store.keys.list()) await store.keys.delete(key.id);
      await store.sessions.deleteAllExcept(null);
    });

    it('migrates a fresh database while opening it, with no separate step', () => {
      expect(store.migrationsApplied).toEqual(Object.keys(MIGRATIONS));
    });

    it('applies no migration when opened again, and keeps the data', async () => {
      const key = await store.keys.create(keyRecord());
      await store.meta.set('contract.reopen', 'kept');
      const again = await openOther();
      expect(again.migrationsApplied).toEqual([]);
      expect(await again.keys.get(key.id)).toEqual(key);
      expect(await again.meta.get('contract.reopen')).toBe('kept');
    });

    it('stores a key and reads back every field', async () => {
      const record = keyRecord(
        {
          name: 'all fields',
          models: ['qwen-7b', 'llama-3-8b'],
          expiresAt: T0 + 86_400_000,
          note: 'for the CI',
          limits: { rpm: 60, tpm: 100_000, concurrent: 2 },
        },
        { lastUsedAt: T0 + 5, revokedAt: T0 + 7 },
      );
      expect(await store.keys.create(record)).toEqual(record);
      expect(await store.keys.get(record.id)).toEqual(record);
    });

    it('reads back a key whose optional fields are all empty', async () => {
      const record = keyRecord({ name: 'bare' });
      await store.keys.create(record);
      expect(await store.keys.get(record.id)).toEqual({
        ...record,
        lastUsedAt: null,
        expiresAt: null,
        revokedAt: null,
        models: [],
        note: '',
        limits: { rpm: null, tpm: null, concurrent: null },
      });
    });

    it('keeps timestamps beyond 32 bits exactly', async () => {
      const far = Date.UTC(2200, 0, 1, 12, 34, 56, 789);
      const record = keyRecord({ expiresAt: far }, {}, far - 1);
      await store.keys.create(record);
      const back = await store.keys.get(record.id);
      expect(back?.createdAt).toBe(far - 1);
      expect(back?.expiresAt).toBe(far);
    });

    it('returns undefined for an unknown id', async () => {
      expect(await store.keys.get('key_doesnotexist')).toBeUndefined();
    });

    it('lists keys oldest first', async () => {
      const b = await store.keys.create(keyRecord({ name: 'b' }, {}, T0 + 2));
      const a = await store.keys.create(keyRecord({ name: 'a' }, {}, T0 + 1));
      const c = await store.keys.create(keyRecord({ name: 'c' }, {}, T0 + 3));
      expect((await store.keys.list()).map((k) => k.id)).toEqual([a.id, b.id, c.id]);
    });

    it('refuses a second key with the same hash', async () => {
      const first = await store.keys.create(keyRecord());
      await expect(store.keys.create(keyRecord({}, { hash: first.hash }))).rejects.toThrow();
      expect(await store.keys.count()).toBe(1);
    });

    it('counts keys, revoked and expired ones included', async () => {
      expect(await store.keys.count()).toBe(0);
      await store.keys.create(keyRecord());
      await store.keys.create(keyRecord({}, { revokedAt: T0 }));
      await store.keys.create(keyRecord({ expiresAt: T0 - 1 }));
      expect(await store.keys.count()).toBe(3);
    });

    describe('findByIdOrPrefix', () => {
      it('resolves an exact id, a display prefix, and the start of an id or prefix', async () => {
        const key = await store.keys.create(keyRecord({}, { id: 'key_Abc123def456', prefix: 'sk-Qw3rTy' }));
        await store.keys.create(keyRecord({}, { id: 'key_Zzz999zzz999', prefix: 'sk-Zzzzzz' }));
        expect((await store.keys.findByIdOrPrefix('key_Abc123def456'))?.id).toBe(key.id);
        expect((await store.keys.findByIdOrPrefix('sk-Qw3rTy'))?.id).toBe(key.id);
        expect((await store.keys.findByIdOrPrefix('sk-Qw3'))?.id).toBe(key.id);
        expect((await store.keys.findByIdOrPrefix('key_Abc'))?.id).toBe(key.id);
      });

      it('matches case-sensitively, as keys are base62', async () => {
        await store.keys.create(keyRecord({}, { prefix: 'sk-AbCdEf' }));
        expect(await store.keys.findByIdOrPrefix('sk-abcdef')).toBeUndefined();
        expect(await store.keys.findByIdOrPrefix('sk-ABCDEF')).toBeUndefined();
      });

      it('treats LIKE wildcards literally', async () => {
        await store.keys.create(keyRecord({}, { prefix: 'sk-AbCdEf' }));
        expect(await store.keys.findByIdOrPrefix('sk-%')).toBeUndefined();
        expect(await store.keys.findByIdOrPrefix('sk-_bCdEf')).toBeUndefined();
      });

      it('reports an ambiguous reference with every match', async () => {
        const one = await store.keys.create(keyRecord({ name: 'one' }, { prefix: 'sk-AAAAA1' }));
        const two = await store.keys.create(keyRecord({ name: 'two' }, { prefix: 'sk-AAAAA2' }));
        const error = await store.keys.findByIdOrPrefix('sk-AAAAA').catch((e: unknown) => e);
        expect(error).toBeInstanceOf(AmbiguousKeyReferenceError);
        expect((error as AmbiguousKeyReferenceError).matches.map((m) => m.id).sort()).toEqual([one.id, two.id].sort());
        expect((error as Error).message).toContain('matches 2 keys');
        expect((await store.keys.findByIdOrPrefix('sk-AAAAA2'))?.id).toBe(two.id);
      });

      it('does not guess from references that are too short or of no known form', async () => {
        await store.keys.create(keyRecord({}, { id: 'key_Abc123def456', prefix: 'sk-Qw3rTy' }));
        expect(await store.keys.findByIdOrPrefix('sk-')).toBeUndefined();
        expect(await store.keys.findByIdOrPrefix('key_')).toBeUndefined();
        expect(await store.keys.findByIdOrPrefix('Qw3rTy')).toBeUndefined();
        expect(await store.keys.findByIdOrPrefix('')).toBeUndefined();
      });
    });

    describe('update', () => {
      it('changes only the fields in the patch', async () => {
        const key = await store.keys.create(
          keyRecord({
            name: 'before',
            models: ['a'],
            note: 'n',
            limits: { rpm: 1, tpm: 2, concurrent: 3 },
            expiresAt: T0 + 10,
          }),
        );
        const updated = await store.keys.update(key.id, { name: 'after', limits: { tpm: 20 } });
        const expected = { ...key, name: 'after', limits: { rpm: 1, tpm: 20, concurrent: 3 } };
        expect(updated).toEqual(expected);
        expect(await store.keys.get(key.id)).toEqual(expected);
      });

      it('sets and clears nullable fields', async () => {
        const key = await store.keys.create(keyRecord({ expiresAt: T0 + 10, limits: { rpm: 5 } }));
        await store.keys.update(key.id, {
          expiresAt: null,
          revokedAt: T0 + 1,
          models: ['m1', 'm2'],
          note: 'x',
          limits: { rpm: null, concurrent: 4 },
        });
        expect(await store.keys.get(key.id)).toEqual({
          ...key,
          expiresAt: null,
          revokedAt: T0 + 1,
          models: ['m1', 'm2'],
          note: 'x',
          limits: { rpm: null, tpm: null, concurrent: 4 },
        });
      });

      it('keeps ceilings apart from the limits they bind, changing only those the patch names', async () => {
        const key = await store.keys.create(keyRecord({ expiresAt: T0 + 10, limits: { rpm: 5 } }));
        expect(key.ceilings).toEqual({ rpm: 5, tpm: null, concurrent: null, expiresAt: T0 + 10 });
        await store.keys.update(key.id, { limits: { rpm: 2 }, ceilings: { tpm: 900, expiresAt: null } });
        expect(await store.keys.get(key.id)).toEqual({
          ...key,
          limits: { rpm: 2, tpm: null, concurrent: null },
          ceilings: { rpm: 5, tpm: 900, concurrent: null, expiresAt: null },
        });
      });

      it('returns undefined for an unknown id, with or without changes', async () => {
        expect(await store.keys.update('key_unknown', { name: 'x' })).toBeUndefined();
        expect(await store.keys.update('key_unknown', {})).toBeUndefined();
      });
    });

    it('deletes a key once', async () => {
      const key = await store.keys.create(keyRecord());
      const other = await store.keys.create(keyRecord());
      expect(await store.keys.delete(key.id)).toBe(true);
      expect(await store.keys.delete(key.id)).toBe(false);
      expect(await store.keys.get(key.id)).toBeUndefined();
      expect((await store.keys.list()).map((k) => k.id)).toEqual([other.id]);
    });

    describe('touchLastUsed', () => {
      it('records last use for many keys in one call', async () => {
        const keys = await Promise.all(
          Array.from({ length: 50 }, (_, i) => store.keys.create(keyRecord({ name: `k${i}` }))),
        );
        const batch = new Map(keys.map((k, i) => [k.id, T0 + 1000 + i]));
        await store.keys.touchLastUsed(batch);
        for (const [i, key] of keys.entries()) expect((await store.keys.get(key.id))?.lastUsedAt).toBe(T0 + 1000 + i);
      });

      it('only moves last use forward, and ignores unknown ids', async () => {
        const key = await store.keys.create(keyRecord());
        await store.keys.touchLastUsed(new Map([[key.id, T0 + 500]]));
        await store.keys.touchLastUsed(
          new Map([
            [key.id, T0 + 100],
            ['key_gone', T0],
          ]),
        );
        expect((await store.keys.get(key.id))?.lastUsedAt).toBe(T0 + 500);
        await store.keys.touchLastUsed(new Map());
        expect((await store.keys.get(key.id))?.lastUsedAt).toBe(T0 + 500);
      });
    });

    it('stores, overwrites and deletes meta values', async () => {
      expect(await store.meta.get('contract.meta')).toBeUndefined();
      await store.meta.set('contract.meta', 'one');
      expect(await store.meta.get('contract.meta')).toBe('one');
      await store.meta.set('contract.meta', 'two');
      expect(await store.meta.get('contract.meta')).toBe('two');
      await store.meta.delete('contract.meta');
      expect(await store.meta.get('contract.meta')).toBeUndefined();
      await store.meta.delete('contract.meta');
    });

    it('deletes a meta value only while it still holds the expected value, once', async () => {
      await store.meta.set('contract.once', 'v1');
      expect(await store.meta.deleteIfEquals('contract.once', 'v0')).toBe(false);
      expect(await store.meta.get('contract.once')).toBe('v1');
      const other = await openOther();
      const results = await Promise.all([
        store.meta.deleteIfEquals('contract.once', 'v1'),
        other.meta.deleteIfEquals('contract.once', 'v1'),
      ]);
      expect(results.sort()).toEqual([false, true]);
      expect(await store.meta.get('contract.once')).toBeUndefined();
      expect(await store.meta.deleteIfEquals('contract.missing', 'v1')).toBe(false);
    });

    describe('admin sessions', () => {
      it('stores a session and finds it by token hash with every field, from another connection too', async () => {
        const far = Date.UTC(2200, 0, 1);
        const record = sessionRecord({ createdAt: far - 10, lastSeenAt: far - 5, expiresAt: far });
        await store.sessions.create(record);
        expect(await store.sessions.findByTokenHash(record.tokenHash)).toEqual(record);
        expect(await (await openOther()).sessions.findByTokenHash(record.tokenHash)).toEqual(record);
        expect(await store.sessions.findByTokenHash('0'.repeat(64))).toBeUndefined();
        expect(await store.sessions.count()).toBe(1);
      });

      it('refuses a second session with the same token hash', async () => {
        const first = sessionRecord();
        await store.sessions.create(first);
        await expect(store.sessions.create(sessionRecord({ tokenHash: first.tokenHash }))).rejects.toThrow();
        expect(await store.sessions.count()).toBe(1);
      });

      it('only moves last-seen forward', async () => {
        const record = sessionRecord({ lastSeenAt: T0 + 100 });
        await store.sessions.create(record);
        await store.sessions.touch(record.id, T0 + 500);
        await store.sessions.touch(record.id, T0 + 200);
        await store.sessions.touch('ses-unknown', T0 + 900);
        expect((await store.sessions.findByTokenHash(record.tokenHash))?.lastSeenAt).toBe(T0 + 500);
      });

      it('deletes one session, or every session but one, or all of them', async () => {
        const [a, b, c, d] = [sessionRecord(), sessionRecord(), sessionRecord(), sessionRecord()];
        for (const r of [a, b, c, d]) await store.sessions.create(r);
        expect(await store.sessions.delete(a.id)).toBe(true);
        expect(await store.sessions.delete(a.id)).toBe(false);
        expect(await store.sessions.deleteAllExcept(c.id)).toBe(2);
        expect(await store.sessions.findByTokenHash(c.tokenHash)).toEqual(c);
        expect(await store.sessions.findByTokenHash(b.tokenHash)).toBeUndefined();
        expect(await store.sessions.deleteAllExcept(null)).toBe(1);
        expect(await store.sessions.count()).toBe(0);
      });

      it('deletes the sessions past their absolute end or idle too long, and keeps the others', async () => {
        const now = T0 + 1_000_000;
        const live = sessionRecord({ lastSeenAt: now - 10, expiresAt: now + 10 });
        const ended = sessionRecord({ lastSeenAt: now - 10, expiresAt: now });
        const idle = sessionRecord({ lastSeenAt: now - 5001, expiresAt: now + 10 });
        for (const r of [live, ended, idle]) await store.sessions.create(r);
        expect(await store.sessions.deleteExpired(now, now - 5000)).toBe(2);
        expect(await store.sessions.findByTokenHash(live.tokenHash)).toEqual(live);
        expect(await store.sessions.count()).toBe(1);
      });
    });

    describe('users and invitations', () => {
      const user = (overrides: Partial<UserRecord> = {}): UserRecord => ({
        id: `usr_${++sessionSerial}${process.pid}`,
        name: `person ${sessionSerial}`,
        email: null,
        role: 'member',
        signIn: 'password',
        passwordHash: null,
        oidcIssuer: null,
        oidcSubject: null,
        createdAt: T0,
        disabledAt: null,
        allowedModels: [],
        maxBudget: null,
        ...overrides,
      });

      it('stores a user, finds them by name and by provider subject, and updates them', async () => {
        const oidc = user({
          signIn: 'oidc',
          oidcIssuer: 'https://id.example',
          oidcSubject: 's-1',
          allowedModels: ['qwen*'],
        });
        await store.users.create(oidc);
        expect(await store.users.get(oidc.id)).toEqual(oidc);
        expect(await store.users.findByName(oidc.name)).toEqual(oidc);
        expect(await store.users.findByOidc('https://id.example', 's-1')).toEqual(oidc);
        expect(await store.users.findByOidc('https://other.example', 's-1')).toBeUndefined();
        const updated = await store.users.update(oidc.id, { role: 'viewer', disabledAt: T0 + 1 });
        expect(updated).toEqual({ ...oidc, role: 'viewer', disabledAt: T0 + 1 });
        await expect(store.users.create(user({ name: oidc.name }))).rejects.toThrow();
        await expect(
          store.users.create(user({ signIn: 'oidc', oidcIssuer: 'https://id.example', oidcSubject: 's-1' })),
        ).rejects.toThrow();
      });

      it('finds a user by any name that compares equal, and refuses a look-alike of a taken name', async () => {
        const ann = await store.users.create(user({ name: 'Ann Straße' }));
        for (const lookAlike of ['ANN STRASSE', 'ａｎｎ straße', 'ann\u200b  strasse', 'Ann\u202e Straße'])
          expect((await store.users.findByName(lookAlike))?.id, lookAlike).toBe(ann.id);
        await expect(store.users.create(user({ name: 'ann strasse' }))).rejects.toThrow();
        await store.users.update(ann.id, { name: 'Ann Other' });
        expect((await store.users.findByName('ann other'))?.id).toBe(ann.id);
        expect(await store.users.findByName('ann strasse')).toBeUndefined();
        expect((await store.users.create(user({ name: 'ann strasse' }))).name).toBe('ann strasse');
      });

      it("stores a member's maximum budget beyond 32 bits, changes it and clears it", async () => {
        const cap = { tokens: 5_000_000_000_000, requests: null, gpuSeconds: 3600, period: 'week' as const };
        const member = await store.users.create(user({ maxBudget: cap }));
        expect(await store.users.get(member.id)).toEqual({ ...member, maxBudget: cap });
        const monthly = { tokens: null, requests: 10, gpuSeconds: null, period: 'month' as const };
        expect((await store.users.update(member.id, { maxBudget: monthly }))?.maxBudget).toEqual(monthly);
        expect((await store.users.update(member.id, { role: 'admin' }))?.maxBudget).toEqual(monthly);
        expect((await store.users.update(member.id, { maxBudget: null }))?.maxBudget).toBeNull();
        expect((await store.users.get(member.id))?.maxBudget).toBeNull();
      });

      it('lets exactly one of two racing requests take an invitation', async () => {
        const invited = await store.users.create(user());
        const invite = { tokenHash: 'cd'.repeat(32), userId: invited.id, createdAt: T0, expiresAt: T0 + 1000 };
        await store.invites.create(invite);
        const taken = await Promise.all([store.invites.take(invite.tokenHash), store.invites.take(invite.tokenHash)]);
        expect(taken.filter(Boolean)).toEqual([invite]);
      });

      it("finds a user's invitation that lasts longest, whatever its age", async () => {
        const invited = await store.users.create(user());
        expect(await store.invites.findForUser(invited.id)).toBeUndefined();
        const old = { tokenHash: 'e1'.repeat(32), userId: invited.id, createdAt: T0, expiresAt: T0 + 10 };
        const newer = { tokenHash: 'e2'.repeat(32), userId: invited.id, createdAt: T0 + 5, expiresAt: T0 + 20 };
        await store.invites.create(newer);
        await store.invites.create(old);
        expect(await store.invites.findForUser(invited.id)).toEqual(newer);
        await store.invites.deleteForUser(invited.id);
        expect(await store.invites.findForUser(invited.id)).toBeUndefined();
      });

      it("lists a user's keys and ends only their sessions", async () => {
        const owner = await store.users.create(user());
        const mine = await store.keys.create(keyRecord({ ownerId: owner.id }));
        await store.keys.create(keyRecord());
        expect((await store.keys.list({ ownerId: owner.id })).map((k) => k.id)).toEqual([mine.id]);
        await store.sessions.create(sessionRecord({ userId: owner.id }));
        await store.sessions.create(sessionRecord({ userId: null }));
        expect(await store.sessions.deleteAllExcept(null, owner.id)).toBe(1);
        expect(await store.sessions.count()).toBe(1);
      });
    });

    describeUsageContract(() => store, openOther);
    describeAuditContract(() => store);

    describe('watchKeys', () => {
      // SQLite's watcher polls on setInterval and PostgreSQL's resyncs on one: with a fake
      // interval, "within a second" is one second of fake time and no resync adds to a count.
      beforeEach(() => {
        vi.useFakeTimers({ toFake: ['setInterval', 'clearInterval'] });
      });
      afterEach(() => {
        vi.useRealTimers();
      });

      /** Counts notifications; `above(n)` resolves once the count is over n. */
      function subscribe(target: Store) {
        let n = 0;
        let waiters: Array<{ over: number; wake: () => void }> = [];
        const stop = target.watchKeys(() => {
          n++;
          const woken = waiters.filter((w) => n > w.over);
          waiters = waiters.filter((w) => n <= w.over);
          for (const w of woken) w.wake();
        });
        const above = (over: number) =>
          n > over ? Promise.resolve() : new Promise<void>((wake) => waiters.push({ over, wake }));
        return { count: () => n, reset: () => (n = 0), above, stop };
      }

      /**
       * Runs another connection's write, moves the clock by the second the stores promise, and
       * waits for the notification it causes.
       */
      async function noticed(watcher: ReturnType<typeof subscribe>, write: () => Promise<unknown>): Promise<void> {
        const before = watcher.count();
        await write();
        vi.advanceTimersByTime(1000);
        await watcher.above(before);
      }

      /**
       * Subscribes and waits until the watcher follows other connections' writes, counting from
       * zero. PostgreSQL's watcher announces its LISTEN connection with one notification;
       * SQLite's follows from the moment it subscribes.
       */
      async function watch(target: Store): Promise<ReturnType<typeof subscribe>> {
        const watcher = subscribe(target);
        if (target.kind === 'postgres') await watcher.above(0);
        watcher.reset();
        return watcher;
      }

      it('notices within a second when another connection creates, changes or deletes a key', async () => {
        const other = await openOther();
        const watcher = await watch(store);
        try {
          const key = keyRecord();
          await noticed(watcher, () => other.keys.create(key));
          await noticed(watcher, () => other.keys.update(key.id, { revokedAt: T0 }));
          await noticed(watcher, () => other.keys.delete(key.id));
        } finally {
          watcher.stop();
        }
      });

      it("does not report the store's own writes", async () => {
        const other = await openOther();
        const watcher = await watch(store);
        try {
          const key = await store.keys.create(keyRecord());
          await store.keys.update(key.id, { name: 'renamed' });
          await store.keys.delete(key.id);
          vi.advanceTimersByTime(1000);
          expect(watcher.count()).toBe(0);
          // Notifications arrive in commit order: another connection's write is reported after
          // any report of the store's own writes would have been.
          await noticed(watcher, () => other.keys.create(keyRecord()));
          expect(watcher.count()).toBe(1);
        } finally {
          watcher.stop();
        }
      });

      it('stops notifying after unsubscribing', async () => {
        const other = await openOther();
        const stays = await watch(store);
        const leaves = subscribe(store);
        try {
          leaves.stop();
          await noticed(stays, () => other.keys.create(keyRecord()));
          expect(stays.count()).toBe(1);
          expect(leaves.count()).toBe(0);
        } finally {
          stays.stop();
        }
      });
    });

    it('closes idempotently', async () => {
      const extra = await open();
      await extra.close();
      await extra.close();
    });
  });
}
