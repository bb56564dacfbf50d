/**
 * The usage part of the store contract (request log, rollups, retention), run by
 * `describeStoreContract` on every backend.
 */
import { beforeEach, describe, expect, it } from 'vitest';
import { USAGE_LATENCY_BOUNDS_MS, type UsageRecord } from '../../src/store/records.js';
import type { Store } from '../../src/store/store.js';

const T0 = Date.UTC(2030, 0, 1);

let usageSerial = 0;
/** A usage record at `at` (default T0); ids sort like arrival when `at` is equal. */
export function usageRecord(overrides: Partial<UsageRecord> = {}): UsageRecord {
  usageSerial++;
  const at = overrides.at ?? T0;
  return {
    id: `${at.toString(36).padStart(9, '0')}-contract-${String(usageSerial).padStart(6, '0')}`,
    at,
    requestId: `req-${usageSerial}`,
    keyId: 'key_contract01',
    keyName: 'contract',
    model: 'qwen',
    method: 'POST',
    endpoint: '/v1/chat/completions',
    status: 200,
    streamed: false,
    inputTokens: 10,
    outputTokens: 5,
    cachedTokens: 2,
    tokensSource: 'usage',
    ttfbMs: 1.5,
    ttftMs: 2.25,
    durationMs: 40,
    bytesIn: 120,
    bytesOut: 2_000,
    clientAborted: false,
    errorClass: null,
    queueMs: 0.5,
    gpuMs: 30.25,
    requestBody: null,
    responseBody: null,
    ...overrides,
  };
}

export function describeUsageContract(current: () => Store, openOther: () => Promise<Store>): void {
  describe('usage', () => {
    let store: Store;
    const EVERYTHING = {
      requestsBefore: Number.MAX_SAFE_INTEGER,
      minutesBefore: Number.MAX_SAFE_INTEGER,
      hoursBefore: Number.MAX_SAFE_INTEGER,
    };
    beforeEach(async () => {
      store = current();
      while ((await store.usage.prune(EVERYTHING, 10_000)) > 0);
    });
    const withoutBodies = ({ requestBody: _q, responseBody: _s, ...rest }: UsageRecord) => rest;

    it('stores a record and reads back every field, bodies only from get', async () => {
      const full = usageRecord({
        at: Date.UTC(2200, 0, 1),
        streamed: true,
        clientAborted: true,
        errorClass: 'client_abort',
        tokensSource: 'estimate',
        requestBody: '{"model":"qwen"} ✓',
        responseBody: 'data: x',
      });
      const bare = usageRecord({
        keyId: null,
        keyName: null,
        model: null,
        inputTokens: null,
        outputTokens: null,
        cachedTokens: null,
        tokensSource: null,
        ttfbMs: null,
        ttftMs: null,
        status: 499,
      });
      await store.usage.append([full, bare]);
      expect(await store.usage.get(full.id)).toEqual(full);
      expect(await (await openOther()).usage.get(bare.id)).toEqual(bare);
      expect(await store.usage.list({ limit: 10 })).toEqual([
        { ...withoutBodies(full), captured: true },
        { ...withoutBodies(bare), captured: false },
      ]);
      expect(await store.usage.get('nope')).toBeUndefined();
      expect(await store.usage.count()).toBe(2);
      // A second batch reuses the prepared statements: same fields back.
      const again = [
        usageRecord({ ...full, id: `${full.id}-2` }),
        usageRecord({ ...bare, id: `${bare.id}-2`, errorClass: 'upstream_status' }),
      ];
      await store.usage.append(again);
      expect(await store.usage.get(again[0]!.id)).toEqual(again[0]);
      expect(await store.usage.get(again[1]!.id)).toEqual(again[1]);
    });

    it("refuses a batch that repeats a stored id with the engine's constraint code, writing none of it", async () => {
      const first = usageRecord();
      await store.usage.append([first]);
      const fresh = usageRecord();
      const error = await store.usage.append([fresh, usageRecord({ id: first.id })]).then(
        () => undefined,
        (e: unknown) => e as { code?: string },
      );
      // The usage writer drops such a batch (isPermanent) instead of retrying it for ever.
      expect(error?.code).toMatch(/^(SQLITE_CONSTRAINT|23505)/);
      expect(await store.usage.get(fresh.id)).toBeUndefined();
      expect(await store.usage.count()).toBe(1);
    });

    it('keeps text that COPY and SQL escape exactly as sent, in a large batch', async () => {
      const awkward = [
        '',
        'NULL',
        'null',
        '"quoted"',
        'back\\slash',
        '{braces}',
        'a,b',
        "it's",
        ' lead and trail ',
        'tab\tnew\nline',
        'ünïcødé ✓ 🦙',
      ];
      const records = Array.from({ length: 600 }, (_, i) =>
        usageRecord({
          // Ids begin with the call's time (store/usage-id.ts): that is how get() finds a row.
          id: `${(1_000_000 + i).toString(36).padStart(9, '0')}-awk-${String(i).padStart(4, '0')}`,
          at: 1_000_000 + i,
          requestId: awkward[i % awkward.length]!,
          keyName: awkward[(i + 1) % awkward.length]!,
          model: awkward[(i + 2) % awkward.length]!,
          errorClass: i % 3 === 0 ? null : awkward[(i + 3) % awkward.length]!,
          requestBody: i % 2 === 0 ? null : awkward[(i + 4) % awkward.length]!,
          responseBody: awkward[(i + 5) % awkward.length]!,
          ttfbMs: i % 5 === 0 ? null : i / 7,
          durationMs: i + 0.125,
        }),
      );
      await store.usage.append(records);
      expect(await store.usage.count()).toBe(600);
      for (const i of [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 255, 256, 599])
        expect(await store.usage.get(records[i]!.id)).toEqual(records[i]);
    });

    it('writes a batch holding a NUL character (PostgreSQL text cannot: it is stored as U+FFFD there)', async () => {
      const odd = usageRecord({ model: 'bad\u0000model', keyName: 'a\u0000b' });
      const fine = usageRecord();
      await store.usage.append([fine, odd]);
      expect(await store.usage.get(fine.id)).toEqual(fine);
      const back = await store.usage.get(odd.id);
      expect(['bad\u0000model', 'bad\uFFFDmodel']).toContain(back?.model);
      expect(['a\u0000b', 'a\uFFFDb']).toContain(back?.keyName);
    });

    it('lists newest first and pages with a keyset cursor, ties on time included, without gaps or repeats', async () => {
      const records = [T0, T0 + 1, T0 + 1, T0 + 1, T0 + 2, T0 + 5, T0 + 5].map((at) => usageRecord({ at }));
      await store.usage.append(records);
      const expected = [...records].sort((a, b) => b.at - a.at || (a.id < b.id ? 1 : -1)).map((r) => r.id);
      const seen: string[] = [];
      let after: { at: number; id: string } | undefined;
      for (;;) {
        const page = await store.usage.list({ limit: 2, ...(after ? { after } : {}) });
        seen.push(...page.map((r) => r.id));
        const last = page.at(-1);
        if (page.length < 2 || !last) break;
        after = { at: last.at, id: last.id };
      }
      expect(seen).toEqual(expected);
    });

    it('pages oldest first with the same cursor when asked, filters included', async () => {
      const records = [T0 + 5, T0 + 1, T0 + 1, T0 + 1, T0 + 2, T0, T0 + 5].map((at, i) =>
        usageRecord({ at, model: i === 4 ? 'other' : 'qwen' }),
      );
      await store.usage.append(records);
      const expected = records
        .filter((r) => r.model === 'qwen')
        .sort((a, b) => a.at - b.at || (a.id < b.id ? -1 : 1))
        .map((r) => r.id);
      const seen: string[] = [];
      let after: { at: number; id: string } | undefined;
      for (;;) {
        const page = await store.usage.list({
          limit: 2,
          model: 'qwen',
          oldestFirst: true,
          ...(after ? { after } : {}),
        });
        seen.push(...page.map((r) => r.id));
        const last = page.at(-1);
        if (page.length < 2 || !last) break;
        after = { at: last.at, id: last.id };
      }
      expect(seen).toEqual(expected);
    });

    it('filters by key, model, status range and time', async () => {
      const a = usageRecord({ at: T0 + 10, keyId: 'key_a', model: 'm1', status: 200 });
      const b = usageRecord({ at: T0 + 20, keyId: 'key_b', model: 'm1', status: 429 });
      const c = usageRecord({ at: T0 + 30, keyId: 'key_a', model: 'm2', status: 502 });
      await store.usage.append([a, b, c]);
      const ids = async (q: Parameters<Store['usage']['list']>[0]) => (await store.usage.list(q)).map((r) => r.id);
      expect(await ids({ limit: 10, keyId: 'key_a' })).toEqual([c.id, a.id]);
      expect(await ids({ limit: 10, model: 'm1' })).toEqual([b.id, a.id]);
      expect(await ids({ limit: 10, status: { min: 400, max: 599 } })).toEqual([c.id, b.id]);
      expect(await ids({ limit: 10, status: { min: 429, max: 429 } })).toEqual([b.id]);
      expect(await ids({ limit: 10, from: T0 + 20, to: T0 + 30 })).toEqual([b.id]);
      expect(await ids({ limit: 10, keyId: 'key_a', model: 'm2', status: { min: 500, max: 599 }, from: T0 })).toEqual([
        c.id,
      ]);
    });

    it('sums calls into minute and hour rollups, grouped by key or model, adding up across batches and connections', async () => {
      const minute = 60_000;
      const base = Date.UTC(2030, 0, 1, 10, 0, 0);
      await store.usage.append([
        usageRecord({ at: base + 1000, keyId: 'key_a', keyName: 'old name', model: 'm1', durationMs: 4 }),
        usageRecord({
          at: base + 2000,
          keyId: 'key_a',
          keyName: 'new name',
          model: 'm2',
          durationMs: 250,
          status: 502,
          errorClass: 'upstream_status',
        }),
        usageRecord({
          at: base + minute,
          keyId: null,
          keyName: null,
          model: null,
          durationMs: 999_999,
          clientAborted: true,
          errorClass: 'client_abort',
          inputTokens: null,
        }),
      ]);
      await (
        await openOther()
      ).usage.append([
        usageRecord({
          at: base + 3000,
          keyId: 'key_a',
          keyName: 'new name',
          model: 'm1',
          durationMs: 4,
          outputTokens: 7,
        }),
      ]);

      const byKey = await store.usage.rollup({
        resolution: 'minute',
        from: base,
        to: base + 2 * minute,
        stepMs: minute,
        groupBy: 'key',
      });
      const bucket = (b: { latency: number[] }) => b.latency.findIndex((n) => n > 0);
      expect(byKey.map((b) => ({ ...b, latency: b.latency.reduce((x, y) => x + y, 0) }))).toEqual([
        {
          bucket: base,
          group: 'key_a',
          keyName: 'new name',
          requests: 3,
          errors: 1,
          aborted: 0,
          inputTokens: 30,
          outputTokens: 17,
          cachedTokens: 6,
          durationMsSum: 258,
          latency: 3,
        },
        {
          bucket: base + minute,
          group: null,
          keyName: null,
          requests: 1,
          errors: 0,
          aborted: 1,
          inputTokens: 0,
          outputTokens: 5,
          cachedTokens: 2,
          durationMsSum: 999_999,
          latency: 1,
        },
      ]);
      expect(byKey[0]!.latency[USAGE_LATENCY_BOUNDS_MS.indexOf(5)]).toBe(2); // 4 ms twice: the (3, 5] bucket
      expect(byKey[0]!.latency[USAGE_LATENCY_BOUNDS_MS.indexOf(300)]).toBe(1); // 250 ms
      expect(bucket(byKey[1]!)).toBe(USAGE_LATENCY_BOUNDS_MS.length); // overflow

      const byModel = await store.usage.rollup({
        resolution: 'hour',
        from: base,
        to: base + 3_600_000,
        stepMs: 3_600_000,
        groupBy: 'model',
      });
      expect(byModel.map((b) => [b.group, b.requests])).toEqual(
        [
          [null, 1],
          ['m1', 2],
          ['m2', 1],
        ].sort((x, y) => String(x[0] ?? '').localeCompare(String(y[0] ?? ''))),
      );
      const overall = await store.usage.rollup({
        resolution: 'minute',
        from: base,
        to: base + 2 * minute,
        stepMs: 2 * minute,
        groupBy: null,
      });
      expect(overall.map((b) => [b.bucket, b.group, b.requests, b.errors, b.aborted])).toEqual([[base, null, 4, 1, 1]]);
    });

    it('prunes old records in batches and old rollups by their own cutoffs', async () => {
      const hour = 3_600_000;
      const old = Array.from({ length: 5 }, (_, i) => usageRecord({ at: T0 + i }));
      const recent = usageRecord({ at: T0 + 10 * hour });
      await store.usage.append([...old, recent]);
      const cutoffs = { requestsBefore: T0 + hour, minutesBefore: T0 + 5 * hour, hoursBefore: T0 + hour };
      expect(await store.usage.prune(cutoffs, 2)).toBe(2 + 1 + 1); // 2 requests, the old minute and hour rollups
      expect(await store.usage.prune(cutoffs, 2)).toBe(2);
      expect(await store.usage.prune(cutoffs, 2)).toBe(1);
      expect(await store.usage.prune(cutoffs, 2)).toBe(0);
      expect((await store.usage.list({ limit: 10 })).map((r) => r.id)).toEqual([recent.id]);
      const left = await store.usage.rollup({
        resolution: 'hour',
        from: 0,
        to: Number.MAX_SAFE_INTEGER,
        stepMs: hour,
        groupBy: null,
      });
      expect(left.map((b) => b.requests)).toEqual([1]);
    });
  });
}
