/**
 * The request log and its rollups, for both dialects (portable SQL only).
 *
 * Why rollups: the summary API must not scan the request log. With SQLite the driver runs on
 * the proxy's event loop, so a 30-day percentile over millions of rows would stall every
 * stream. Each batch written also adds its calls to per-minute and per-hour sums (with a fixed
 * latency histogram), and summaries read those: at most a few thousand small rows.
 *
 * Writing a batch is the dialect's (`AppendUsage`: prepared statements on SQLite, COPY on
 * PostgreSQL); this file compiles the SQL texts it runs, once, from the column table.
 */
import { sql, type Kysely, type RawBuilder } from 'kysely';
import type { Database } from './schema.js';
import type { UsageBucket, UsageListRow, UsageRecord } from './records.js';
import type { UsageStore } from './store.js';
import { usageIdTime } from './usage-id.js';
import {
  BODY_COLUMNS,
  LATENCY_COLUMNS,
  recordFromRow,
  REQUEST_COLUMNS,
  ROLLUP_COLUMNS,
  SUM_COLUMNS,
  type RollupTable,
} from './usage-rows.js';

/** Writes records and adds them to both rollups, in one transaction. */
export type AppendUsage = (records: readonly UsageRecord[]) => Promise<void>;

/** The rollup tables seen with their column names as plain strings (32 generated columns). */
type LooseRollups = Kysely<Record<RollupTable, Record<string, string | number | null>>>;

/** The SQL texts of a batch write, with the dialect's placeholders; parameters in column-table order. */
export interface UsageWriteSql {
  /** One request row (`REQUEST_COLUMNS`). */
  insertRequest: string;
  /** One rollup row (`ROLLUP_COLUMNS`), added to what the table holds for its key. */
  upsert: Record<RollupTable, string>;
}

/** Compiles the batch write's statements for `db`'s dialect. */
export function compileUsageSql(db: Kysely<Database>): UsageWriteSql {
  const rollups = db as unknown as LooseRollups;
  // Placeholder values: only the SQL text is kept, with one parameter per column in table order.
  const sample = Object.fromEntries(REQUEST_COLUMNS.map(({ name }) => [name, null]));
  const rollupSample = Object.fromEntries(ROLLUP_COLUMNS.map((name) => [name, null]));
  const upsert = (table: RollupTable): string =>
    rollups
      .insertInto(table)
      .values(rollupSample)
      .onConflict((oc) => oc.columns(['bucket', 'key_id', 'model']).doUpdateSet(addExcluded(table)))
      .compile().sql;
  return {
    insertRequest: db
      .insertInto('usage_requests')
      .values(sample as never)
      .compile().sql,
    upsert: { usage_minutes: upsert('usage_minutes'), usage_hours: upsert('usage_hours') },
  };
}

/** The columns `list` reads: all but the captured bodies. */
const LIST_COLUMNS = REQUEST_COLUMNS.map(({ name }) => name).filter((name) => !BODY_COLUMNS.includes(name));

export function createUsageStore(db: Kysely<Database>, appendUsage: AppendUsage, maxAppendRecords: number): UsageStore {
  const rollups = db as unknown as LooseRollups;

  return {
    maxAppendRecords,
    append(records) {
      return records.length === 0 ? Promise.resolve() : appendUsage(records);
    },

    async list(query) {
      let q = db
        .selectFrom('usage_requests')
        .select([
          ...LIST_COLUMNS,
          sql<number>`case when request_body is null and response_body is null then 0 else 1 end`.as('captured'),
        ]);
      if (query.keyId !== undefined) q = q.where('key_id', '=', query.keyId);
      if (query.keyIds !== undefined) {
        if (query.keyIds.length === 0) return [];
        q = q.where('key_id', 'in', [...query.keyIds]);
      }
      if (query.model !== undefined) q = q.where('model', '=', query.model);
      if (query.status !== undefined)
        q = q.where('status', '>=', query.status.min).where('status', '<=', query.status.max);
      if (query.from !== undefined) q = q.where('at', '>=', query.from);
      if (query.to !== undefined) q = q.where('at', '<', query.to);
      const past = query.oldestFirst ? '>' : '<';
      const order = query.oldestFirst ? 'asc' : 'desc';
      const after = query.after;
      if (after !== undefined) {
        q = q.where((eb) =>
          eb.or([eb('at', past, after.at), eb.and([eb('at', '=', after.at), eb('id', past, after.id)])]),
        );
      }
      const rows = await q.orderBy('at', order).orderBy('id', order).limit(query.limit).execute();
      return rows.map((row): UsageListRow => {
        const { requestBody: _request, responseBody: _response, ...rest } = recordFromRow(row);
        return { ...rest, captured: Number(row.captured) === 1 };
      });
    },

    async get(id) {
      // The table is keyed by (at, id): the id gives the time to look in.
      const at = usageIdTime(id);
      if (at === undefined) return undefined;
      const row = await db
        .selectFrom('usage_requests')
        .selectAll()
        .where('at', '=', at)
        .where('id', '=', id)
        .executeTakeFirst();
      return row && recordFromRow(row);
    },

    async rollup(query) {
      const table: RollupTable = query.resolution === 'minute' ? 'usage_minutes' : 'usage_hours';
      const step = query.stepMs;
      if (!Number.isSafeInteger(step) || step < 1) throw new Error('rollup: stepMs must be a positive integer');
      const groupColumn = query.groupBy === 'key' ? 'key_id' : query.groupBy === 'model' ? 'model' : undefined;
      // The step as a literal, not a parameter: PostgreSQL matches the GROUP BY expression to the
      // selected one by its text, and two parameters ($1, $5) are different texts.
      const t = sql<number | string>`cast(bucket / ${sql.lit(step)} as bigint) * ${sql.lit(step)}`;
      const sums = SUM_COLUMNS.map((column) => sql<number | string>`sum(${sql.ref(column)})`.as(column));
      const groupExpr = groupColumn ? sql<string>`${sql.ref(groupColumn)}` : sql<string | null>`null`;
      let q = rollups
        .selectFrom(table)
        .select([t.as('t'), groupExpr.as('grp'), sql<string | null>`max(key_name)`.as('key_name_max'), ...sums])
        .where('bucket', '>=', query.from)
        .where('bucket', '<', query.to)
        .groupBy(t);
      if (query.keyIds !== undefined) {
        if (query.keyIds.length === 0) return [];
        q = q.where('key_id', 'in', [...query.keyIds]);
      }
      if (groupColumn) q = q.groupBy(groupColumn);
      const rows = (await q.orderBy('t').orderBy('grp').execute()) as unknown as Array<
        Record<string, number | string | null>
      >;
      return rows.map((row): UsageBucket => {
        const group = row.grp === null || row.grp === undefined || row.grp === '' ? null : String(row.grp);
        return {
          bucket: Number(row.t),
          group,
          keyName: typeof row.key_name_max === 'string' ? row.key_name_max : null,
          requests: Number(row.requests),
          errors: Number(row.errors),
          aborted: Number(row.aborted),
          inputTokens: Number(row.input_tokens),
          outputTokens: Number(row.output_tokens),
          cachedTokens: Number(row.cached_tokens),
          durationMsSum: Number(row.duration_ms_sum),
          latency: LATENCY_COLUMNS.map((column) => Number(row[column] ?? 0)),
        };
      });
    },

    async prune(cutoffs, limit) {
      const deleted = await db.transaction().execute(async (trx) => [
        // A subquery with LIMIT keeps each delete small on both engines (no DELETE ... LIMIT in PG).
        await trx
          .deleteFrom('usage_requests')
          .where(({ eb, refTuple, selectFrom }) =>
            eb(
              refTuple('at', 'id'),
              'in',
              selectFrom('usage_requests')
                .select(['at', 'id'])
                .where('at', '<', cutoffs.requestsBefore)
                .orderBy('at')
                .limit(limit)
                .$asTuple('at', 'id'),
            ),
          )
          .executeTakeFirst(),
        // Rollups are small (one row per minute or hour per key and model): no batching needed.
        await trx.deleteFrom('usage_minutes').where('bucket', '<', cutoffs.minutesBefore).executeTakeFirst(),
        await trx.deleteFrom('usage_hours').where('bucket', '<', cutoffs.hoursBefore).executeTakeFirst(),
      ]);
      return deleted.reduce((sum, result) => sum + Number(result.numDeletedRows), 0);
    },

    async keyTotals(keyId, from, to) {
      const row = await db
        .selectFrom('usage_requests')
        .select([
          sql<number | string>`count(gpu_ms)`.as('requests'),
          sql<number | string | null>`sum(coalesce(input_tokens, 0) + coalesce(output_tokens, 0))`.as('tokens'),
          sql<number | string | null>`sum(gpu_ms)`.as('gpu_ms'),
        ])
        .where('key_id', '=', keyId)
        .where('at', '>=', from)
        .where('at', '<', to)
        .executeTakeFirstOrThrow();
      return { requests: Number(row.requests), tokens: Number(row.tokens ?? 0), gpuMs: Number(row.gpu_ms ?? 0) };
    },

    async count() {
      const row = await db
        .selectFrom('usage_requests')
        .select((eb) => eb.fn.countAll().as('n'))
        .executeTakeFirstOrThrow();
      return Number(row.n);
    },
  };
}

/** `column = <table>.column + excluded.column` for every sum; the newest key name wins. */
function addExcluded(table: RollupTable): Record<string, RawBuilder<number | string | null>> {
  const set: Record<string, RawBuilder<number | string | null>> = { key_name: sql`excluded.key_name` };
  for (const column of SUM_COLUMNS)
    set[column] = sql`${sql.ref(`${table}.${column}`)} + ${sql.ref(`excluded.${column}`)}`;
  return set;
}
