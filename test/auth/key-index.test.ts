import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { newKeyRecord } from '../../src/auth/api-keys.js';
import { KeyIndex } from '../../src/auth/key-index.js';
import { openSqliteStore } from '../../src/store/sqlite.js';
import type { KeyStore, Store } from '../../src/store/store.js';
import { waitFor } from '../store/store-contract.js';

const root = mkdtempSync(join(tmpdir(), 'gatehouse-key-index-'));
afterAll(() => rmSync(root, { recursive: true, force: true }));

/**
 * The real store, with every `keys.*` call counted (and optionally failing) on the way
 * through: enough to see what the index asks of the store, without faking the store.
 */
function counted(store: Store) {
  const calls: Record<string, number> = {};
  const waiters: Array<{ prop: string; settled: () => void }> = [];
  let failTouches = 0;
  const keys = new Proxy(store.keys, {
    get(target, prop: keyof KeyStore) {
      const original = target[prop];
      if (typeof original !== 'function') return original;
      return (...args: unknown[]) => {
        calls[prop] = (calls[prop] ?? 0) + 1;
        if (prop === 'touchLastUsed' && failTouches > 0) {
          failTouches--;
          return Promise.reject(new Error('disk full'));
        }
        const result = (original as (...a: unknown[]) => unknown).apply(target, args);
        for (const waiter of waiters.filter((w) => w.prop === prop)) {
          waiters.splice(waiters.indexOf(waiter), 1);
          void Promise.resolve(result).then(waiter.settled, waiter.settled);
        }
        return result;
      };
    },
  });
  return {
    store: { ...store, keys, watchKeys: store.watchKeys, close: store.close } as Store,
    calls,
    failNextTouches: (n: number) => (failTouches = n),
    /** Resolves once the next call of `prop` has settled. */
    nextCall: (prop: keyof KeyStore) => new Promise<void>((settled) => waiters.push({ prop, settled })),
  };
}

let n = 0;
let store: Store;
let dataDir: string;
const cleanup: Array<() => Promise<void>> = [];

beforeEach(async () => {
  dataDir = join(root, `t${n++}`);
  store = await openSqliteStore({ dataDir });
  cleanup.push(() => store.close());
});

afterEach(async () => {
  while (cleanup.length) await cleanup.pop()!();
});

async function openIndex(target: Store, options: Parameters<typeof KeyIndex.open>[1] = {}): Promise<KeyIndex> {
  const index = await KeyIndex.open(target, options);
  cleanup.push(() => index.close());
  return index;
}

describe('KeyIndex', () => {
  it('reports no keys (open mode) only while no record exists at all', async () => {
    const index = await openIndex(store);
    expect(index.hasAnyKeys()).toBe(false);
    const revoked = newKeyRecord({ name: 'r' }, 1).record;
    await store.keys.create({ ...revoked, revokedAt: 2 });
    await index.reload();
    expect(index.hasAnyKeys()).toBe(true);
    await store.keys.update(revoked.id, { revokedAt: null, expiresAt: 3 });
    await index.reload();
    expect(index.hasAnyKeys()).toBe(true);
    await store.keys.delete(revoked.id);
    await index.reload();
    expect(index.hasAnyKeys()).toBe(false);
  });

  it('verifies a key by its hash and returns its record whatever its status', async () => {
    const good = newKeyRecord({ name: 'good' }, 1);
    const gone = newKeyRecord({ name: 'gone' }, 1);
    await store.keys.create(good.record);
    await store.keys.create({ ...gone.record, revokedAt: 5 });
    const index = await openIndex(store);
    expect(index.verify(good.secret)).toEqual({ ...good.record, ownerModels: [], ownedByNonAdmin: false });
    expect(index.verify(gone.secret)?.revokedAt).toBe(5);
    expect(index.verify('sk-unknown')).toBeUndefined();
    expect(index.verify(good.record.hash)).toBeUndefined();
  });

  it('answers verify from memory: thousands of checks make no store call', async () => {
    const keys = Array.from({ length: 2000 }, (_, i) => newKeyRecord({ name: `k${i}` }, i));
    for (const k of keys) await store.keys.create(k.record);
    const { store: watched, calls } = counted(store);
    const index = await openIndex(watched);
    expect(calls).toEqual({ list: 1 });
    for (let i = 0; i < 10_000; i++) {
      const k = keys[i % keys.length]!;
      expect(index.verify(i % 2 ? k.secret : `${k.secret}x`)?.id).toBe(i % 2 ? k.record.id : undefined);
    }
    expect(calls).toEqual({ list: 1 });
    expect(index.size).toBe(2000);
  });

  it('sees a key written through this process as soon as reload resolves', async () => {
    const index = await openIndex(store);
    const k = newKeyRecord({ name: 'new' }, 1);
    await store.keys.create(k.record);
    await index.reload();
    expect(index.verify(k.secret)?.id).toBe(k.record.id);
  });

  it('picks up a key created by another connection (the CLI) within a second', async () => {
    const index = await openIndex(store);
    const other = await openSqliteStore({ dataDir });
    cleanup.push(() => other.close());
    const k = newKeyRecord({ name: 'from the cli' }, 1);
    await other.keys.create(k.record);
    await waitFor(() => index.verify(k.secret) !== undefined, 1000, 'the index to load the new key');
    await other.keys.update(k.record.id, { revokedAt: 9 });
    await waitFor(() => index.verify(k.secret)?.revokedAt === 9, 1000, 'the index to see the revocation');
  });

  it('keeps concurrent reloads in order, ending with the latest state', async () => {
    const index = await openIndex(store);
    const k = newKeyRecord({ name: 'x' }, 1);
    const first = index.reload();
    await store.keys.create(k.record);
    const second = index.reload();
    await Promise.all([first, second]);
    expect(index.verify(k.secret)).toBeDefined();
  });

  describe('last use', () => {
    it('collects uses in memory and writes them in one batch, keeping the latest time per key', async () => {
      const a = newKeyRecord({ name: 'a' }, 1).record;
      const b = newKeyRecord({ name: 'b' }, 1).record;
      await store.keys.create(a);
      await store.keys.create(b);
      const { store: watched, calls } = counted(store);
      const index = await openIndex(watched, { flushIntervalMs: 60_000 });
      for (let i = 0; i < 1000; i++) index.markUsed(i % 2 ? a.id : b.id, 1000 + i);
      index.markUsed(a.id, 5); // late and older: must not rewind
      expect(calls.touchLastUsed).toBeUndefined();
      await index.flush();
      expect(calls.touchLastUsed).toBe(1);
      expect((await store.keys.get(a.id))?.lastUsedAt).toBe(1999);
      expect((await store.keys.get(b.id))?.lastUsedAt).toBe(1998);
      await index.flush();
      expect(calls.touchLastUsed).toBe(1);
    });

    it('flushes on its own every interval', async () => {
      const a = newKeyRecord({ name: 'a' }, 1).record;
      await store.keys.create(a);
      vi.useFakeTimers({ toFake: ['setInterval', 'clearInterval'] });
      try {
        const { store: watched, calls, nextCall } = counted(store);
        const index = await openIndex(watched, { flushIntervalMs: 5000, now: () => 4242 });
        index.markUsed(a.id);
        vi.advanceTimersByTime(4999);
        expect(calls.touchLastUsed).toBeUndefined();
        const flushed = nextCall('touchLastUsed');
        vi.advanceTimersByTime(1);
        await flushed;
        expect((await store.keys.get(a.id))?.lastUsedAt).toBe(4242);
      } finally {
        vi.useRealTimers();
      }
    });

    it('writes pending uses when closed', async () => {
      const a = newKeyRecord({ name: 'a' }, 1).record;
      await store.keys.create(a);
      const index = await KeyIndex.open(store, { flushIntervalMs: 60_000 });
      index.markUsed(a.id, 777);
      await index.close();
      expect((await store.keys.get(a.id))?.lastUsedAt).toBe(777);
    });

    it('keeps uses whose write failed for the next flush', async () => {
      const a = newKeyRecord({ name: 'a' }, 1).record;
      await store.keys.create(a);
      const { store: flaky, failNextTouches } = counted(store);
      const index = await openIndex(flaky, { flushIntervalMs: 60_000 });
      index.markUsed(a.id, 100);
      failNextTouches(1);
      await expect(index.flush()).rejects.toThrow('disk full');
      index.markUsed(a.id, 50);
      await index.flush();
      expect((await store.keys.get(a.id))?.lastUsedAt).toBe(100);
    });

    it('reports background failures to onError and keeps serving', async () => {
      const a = newKeyRecord({ name: 'a' }, 1);
      await store.keys.create(a.record);
      const { store: flaky, failNextTouches } = counted(store);
      const errors: string[] = [];
      const index = await openIndex(flaky, {
        flushIntervalMs: 30,
        onError: (e, during) => errors.push(`${during}: ${(e as Error).message}`),
      });
      failNextTouches(1);
      index.markUsed(a.record.id, 10);
      await waitFor(() => errors.length > 0, 1000, 'the flush failure to be reported');
      expect(errors[0]).toBe('flush: disk full');
      expect(index.verify(a.secret)?.id).toBe(a.record.id);
    });
  });
});
