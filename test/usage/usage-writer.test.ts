/**
 * The usage write queue on its own: batches, retries what the store could not take, drops and
 * counts what it must, and never blocks on a batch the database refuses for its content.
 */
import { describe, expect, it } from 'vitest';
import type { UsageRecord } from '../../src/store/records.js';
import type { UsageStore } from '../../src/store/store.js';
import { newUsageId, usageIdTime } from '../../src/store/usage-id.js';
import { isPermanent, UsageWriter } from '../../src/usage/usage-writer.js';
import { usageRecord } from '../store/usage-contract.js';

function fakeStore(fail: () => Error | undefined): {
  store: Pick<UsageStore, 'append'>;
  written: UsageRecord[];
  batches: number[];
} {
  const written: UsageRecord[] = [];
  const batches: number[] = [];
  const store: Pick<UsageStore, 'append'> = {
    async append(records) {
      const error = fail();
      if (error) throw error;
      batches.push(records.length);
      written.push(...records);
    },
  };
  return { store, written, batches };
}

describe('usage writer', () => {
  it('writes in batches of at most batchSize, in arrival order', async () => {
    const { store, written, batches } = fakeStore(() => undefined);
    const writer = new UsageWriter(store, { batchSize: 3, maxBatchesPerWrite: 1, flushIntervalMs: 60_000 });
    const records = Array.from({ length: 7 }, (_, i) => usageRecord({ at: i }));
    for (const r of records) writer.push(r);
    await writer.flush();
    expect(batches).toEqual([3, 3, 1]);
    expect(written.map((r) => r.id)).toEqual(records.map((r) => r.id));
    await writer.close();
  });

  it('joins the batches that piled up behind a running write into the next write, up to maxBatchesPerWrite', async () => {
    const { store, written, batches } = fakeStore(() => undefined);
    const append = store.append.bind(store);
    let release: () => void = () => {};
    const firstWriteHeld = new Promise<void>((resolve) => (release = resolve));
    let first = true;
    store.append = async (records) => {
      if (first) {
        first = false;
        await firstWriteHeld;
      }
      return append(records);
    };
    const writer = new UsageWriter(store, { batchSize: 2, maxBatchesPerWrite: 3, flushIntervalMs: 60_000 });
    const records = Array.from({ length: 10 }, (_, i) => usageRecord({ at: i }));
    for (const r of records.slice(0, 2)) writer.push(r);
    const flushed = writer.flush();
    // Four more batches arrive while the first write is held.
    for (const r of records.slice(2)) writer.push(r);
    release();
    await flushed;
    await writer.flush();
    expect(batches).toEqual([2, 6, 2]);
    expect(written.map((r) => r.id)).toEqual(records.map((r) => r.id));
    await writer.close();
  });

  it('keeps a batch the store failed to take (busy) and writes it on the next try', async () => {
    let failing = true;
    const dropped: number[] = [];
    const { store, written } = fakeStore(() =>
      failing ? Object.assign(new Error('database is locked'), { code: 'SQLITE_BUSY' }) : undefined,
    );
    const writer = new UsageWriter(store, { flushIntervalMs: 60_000, onDropped: (n) => dropped.push(n) });
    writer.push(usageRecord());
    writer.push(usageRecord());
    await writer.flush();
    expect(writer.queued).toBe(2);
    failing = false;
    await writer.flush();
    expect(written).toHaveLength(2);
    expect(dropped).toEqual([]);
    await writer.close();
  });

  it('drops and counts a batch the database refuses for its content, instead of retrying it for ever', async () => {
    let calls = 0;
    const dropped: number[] = [];
    const { store, written } = fakeStore(() =>
      calls++ === 0
        ? Object.assign(new Error('UNIQUE constraint failed'), { code: 'SQLITE_CONSTRAINT_PRIMARYKEY' })
        : undefined,
    );
    const writer = new UsageWriter(store, {
      batchSize: 2,
      maxBatchesPerWrite: 1,
      flushIntervalMs: 60_000,
      onDropped: (n) => dropped.push(n),
    });
    for (let i = 0; i < 3; i++) writer.push(usageRecord());
    await writer.flush();
    expect(dropped).toEqual([2]);
    expect(written).toHaveLength(1);
    expect(writer.queued).toBe(0);
    await writer.close();
  });

  it('drops and counts what arrives while the queue is full, and keeps what it already holds', async () => {
    const dropped: number[] = [];
    const { store, written } = fakeStore(() => undefined);
    const writer = new UsageWriter(store, {
      batchSize: 2,
      maxQueue: 3,
      flushIntervalMs: 60_000,
      onDropped: (n) => dropped.push(n),
    });
    const records = Array.from({ length: 5 }, (_, i) => usageRecord({ at: i }));
    for (const r of records) writer.push(r);
    expect(writer.queued).toBe(3);
    expect(dropped).toEqual([1, 1]);
    await writer.flush();
    expect(written.map((r) => r.id)).toEqual(records.slice(0, 3).map((r) => r.id));
    await writer.close();
  });

  it('puts a failed batch back in front of newer records, so the order of arrival holds', async () => {
    let failing = true;
    const { store, written } = fakeStore(() =>
      failing ? Object.assign(new Error('connection terminated'), { code: '57P01' }) : undefined,
    );
    const writer = new UsageWriter(store, { batchSize: 2, flushIntervalMs: 60_000 });
    const records = Array.from({ length: 5 }, (_, i) => usageRecord({ at: i }));
    for (const r of records.slice(0, 3)) writer.push(r);
    await writer.flush();
    expect(writer.queued).toBe(3);
    for (const r of records.slice(3)) writer.push(r);
    failing = false;
    await writer.flush();
    expect(written.map((r) => r.id)).toEqual(records.map((r) => r.id));
    expect(writer.queued).toBe(0);
    await writer.close();
  });

  it('writes only full batches between timer ticks, so a busy gateway does not write a transaction per handful of calls', async () => {
    const batches: number[] = [];
    let release!: () => void;
    const started: Array<() => void> = [];
    const store: Pick<UsageStore, 'append'> = {
      append(records) {
        batches.push(records.length);
        return new Promise<void>((resolve) => {
          release = resolve;
          started.shift()?.();
        });
      },
    };
    const writer = new UsageWriter(store, { batchSize: 3, flushIntervalMs: 60_000 });
    const firstWrite = new Promise<void>((resolve) => started.push(resolve));
    for (let i = 0; i < 3; i++) writer.push(usageRecord({ at: i }));
    await firstWrite;
    // Arrive while the first batch is being written.
    writer.push(usageRecord({ at: 3 }));
    writer.push(usageRecord({ at: 4 }));
    release();
    await new Promise((resolve) => setImmediate(resolve));
    await new Promise((resolve) => setImmediate(resolve));
    expect(batches).toEqual([3]);
    expect(writer.queued).toBe(2);
    const flushed = writer.flush();
    await new Promise((resolve) => setImmediate(resolve));
    release();
    await flushed;
    expect(batches).toEqual([3, 2]);
    await writer.close();
  });

  it('writes what is queued on close, and drops and counts what arrives after', async () => {
    const dropped: number[] = [];
    const { store, written } = fakeStore(() => undefined);
    const writer = new UsageWriter(store, { flushIntervalMs: 60_000, onDropped: (n) => dropped.push(n) });
    writer.push(usageRecord());
    writer.push(usageRecord());
    await writer.close();
    expect(written).toHaveLength(2);
    writer.push(usageRecord());
    expect(dropped).toEqual([1]);
  });

  it('gives requests the event loop between two batches of one drain', async () => {
    const events: string[] = [];
    const { store } = fakeStore(() => undefined);
    const append = store.append.bind(store);
    store.append = (records) => {
      events.push(`batch of ${records.length}`);
      setImmediate(() => events.push('other work'));
      return append(records);
    };
    const writer = new UsageWriter(store, { batchSize: 2, maxBatchesPerWrite: 1, flushIntervalMs: 60_000 });
    for (let i = 0; i < 5; i++) writer.push(usageRecord());
    await writer.flush();
    expect(events).toEqual(['batch of 2', 'other work', 'batch of 2', 'other work', 'batch of 1']);
    await writer.close();
  });

  it('classifies permanent and transient failures of both engines', () => {
    for (const code of ['SQLITE_CONSTRAINT_UNIQUE', 'SQLITE_TOOBIG', '23505', '22003', '42P01'])
      expect(isPermanent({ code }), code).toBe(true);
    for (const code of ['SQLITE_BUSY', 'SQLITE_IOERR', 'ECONNREFUSED', '57P01', '08006'])
      expect(isPermanent({ code }), code).toBe(false);
    expect(isPermanent(new Error('no code'))).toBe(false);
  });

  it('makes unique ids that sort like the time they carry', () => {
    const ids = [newUsageId(2000), newUsageId(1000), newUsageId(1000), newUsageId(30_000_000_000_000)];
    expect(new Set(ids).size).toBe(4);
    expect([...ids].sort()).toEqual([ids[1], ids[2], ids[0], ids[3]]);
  });

  it('reads back the time an id begins with, and nothing from an id that is not one', () => {
    for (const at of [0, 1000, 1_795_563_181_355, 30_000_000_000_000]) expect(usageIdTime(newUsageId(at))).toBe(at);
    expect(usageIdTime(newUsageId(1234.9))).toBe(1234);
    for (const id of ['', 'nope', 'awk-0001', '000000rs-x', '000000RS0-x', '000000 rs-x', '00000000rs'])
      expect(usageIdTime(id), id).toBeUndefined();
  });
});
