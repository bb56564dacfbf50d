import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { openSqliteStore } from '../../src/store/sqlite.js';
import { createUsageWriteThread } from '../../src/store/sqlite-usage-thread.js';
import { usageRecord } from './usage-contract.js';

const root = mkdtempSync(join(tmpdir(), 'gatehouse-usage-thread-'));
afterAll(() => rmSync(root, { recursive: true, force: true }));

describe('the SQLite usage write thread', () => {
  it('rejects a batch its thread could not start for, and starts a new thread for the next batch', async () => {
    const file = join(root, 'late', 'gatehouse.db');
    const thread = createUsageWriteThread({ file, busyTimeoutMs: 1000 });
    try {
      await expect(thread.append([usageRecord()])).rejects.toThrow();
      const store = await openSqliteStore({ file });
      try {
        const record = usageRecord();
        await thread.append([record]);
        expect((await store.usage.get(record.id))?.requestId).toBe(record.requestId);
      } finally {
        await thread.close();
        await store.close();
      }
    } finally {
      await thread.close();
    }
  });

  it('finishes the batches in flight before it closes', async () => {
    const store = await openSqliteStore({ dataDir: join(root, 'closing') });
    const thread = createUsageWriteThread({ file: join(root, 'closing', 'gatehouse.db'), busyTimeoutMs: 1000 });
    const events: string[] = [];
    const batches = [0, 1, 2].map((n) =>
      thread.append([usageRecord(), usageRecord()]).then(() => events.push(`batch ${n} written`)),
    );
    await thread.close().then(() => events.push('closed'));
    await Promise.all(batches);
    expect(events).toEqual(['batch 0 written', 'batch 1 written', 'batch 2 written', 'closed']);
    expect(await store.usage.count()).toBe(6);
    await store.close();
  });

  it("keeps the driver's error code, so the writer can tell a permanent failure from a passing one", async () => {
    const store = await openSqliteStore({ dataDir: join(root, 'codes') });
    try {
      const record = usageRecord();
      await store.usage.append([record]);
      const error = await store.usage.append([record]).catch((e: unknown) => e as { code?: string });
      expect(error?.code).toBe('SQLITE_CONSTRAINT_PRIMARYKEY');
    } finally {
      await store.close();
    }
  });
});
