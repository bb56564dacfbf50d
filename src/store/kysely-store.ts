/**
 * The store's queries, written once for every dialect. Only portable SQL lives here; what
 * differs between SQLite and PostgreSQL (opening, locking, change notification) is passed in
 * as `DialectHooks` by `sqlite.ts` / `postgres.ts`.
 */
import { sql, type Insertable, type Kysely, type Selectable, type Updateable } from 'kysely';
import type { AdminSessionsTable, ApiKeysTable, Database } from './schema.js';
import { createAuditStore } from './audit-queries.js';
import { createUsageStore, type AppendUsage } from './usage-queries.js';
import { createInviteStore, createUserStore } from './user-queries.js';
import {
  AmbiguousKeyReferenceError,
  type AdminSessionStore,
  type KeyStore,
  type MetaStore,
  type Store,
} from './store.js';
import {
  BUDGET_PERIODS,
  type BudgetPeriod,
  type AdminSessionRecord,
  type KeyPatch,
  type KeyRecord,
} from './records.js';

export interface DialectHooks {
  kind: Store['kind'];
  migrationsApplied: readonly string[];
  /**
   * Runs a write to `api_keys` whose change other processes must hear about. PostgreSQL wraps
   * it in a transaction that also NOTIFYs; SQLite needs nothing (other connections see the
   * commit through `PRAGMA data_version`).
   */
  writeKeys<T>(db: Kysely<Database>, write: (db: Kysely<Database>) => Promise<T>): Promise<T>;
  /**
   * Runs `work` on one connection inside one transaction (`writeKeys` inside it joins it).
   * SQLite begins IMMEDIATE: a deferred transaction that reads first could not take the write
   * lock later once another connection (the CLI, another process) had committed.
   */
  transaction<T>(db: Kysely<Database>, work: (db: Kysely<Database>) => Promise<T>): Promise<T>;
  /**
   * `StoreTransaction.lockKeyOwner` on the transaction `db`: an advisory lock on PostgreSQL, nothing
   * on SQLite, whose transactions already hold the one write lock.
   */
  lockKeyOwner(db: Kysely<Database>, ownerId: string): Promise<void>;
  watchKeys(onChange: () => void): () => void;
  /** Writes a batch of usage records and its rollups in one transaction. */
  appendUsage: AppendUsage;
  /** `UsageStore.maxAppendRecords`. */
  maxAppendRecords: number;
  /** Stops watchers; the shared code destroys the Kysely instance afterwards. */
  stop(): Promise<void>;
}

/** How many characters of a reference are needed before it is matched as a prefix. */
const MIN_PREFIX_REFERENCE = { 'sk-': 4, key_: 5 } as const;

export function createKyselyStore(db: Kysely<Database>, hooks: DialectHooks): Store {
  const keys: KeyStore = {
    async create(record) {
      await hooks.writeKeys(db, (w) => w.insertInto('api_keys').values(toRow(record)).execute());
      return structuredClone(record);
    },

    async list(filter) {
      let query = db.selectFrom('api_keys').selectAll();
      if (filter) query = query.where('owner_id', '=', filter.ownerId);
      const rows = await query.orderBy('created_at').orderBy('id').execute();
      return rows.map(toRecord);
    },

    async get(id) {
      const row = await db.selectFrom('api_keys').selectAll().where('id', '=', id).executeTakeFirst();
      return row && toRecord(row);
    },

    async findByIdOrPrefix(reference) {
      const exact = await keys.get(reference);
      if (exact) return exact;
      const column = reference.startsWith('sk-') ? 'prefix' : reference.startsWith('key_') ? 'id' : undefined;
      if (!column || reference.length < MIN_PREFIX_REFERENCE[column === 'prefix' ? 'sk-' : 'key_']) return undefined;
      // substr rather than LIKE: LIKE is case-insensitive in SQLite and keys are base62.
      const rows = await db
        .selectFrom('api_keys')
        .selectAll()
        .where(sql<string>`substr(${sql.ref(column)}, 1, ${reference.length})`, '=', reference)
        .orderBy('created_at')
        .limit(10)
        .execute();
      if (rows.length > 1) throw new AmbiguousKeyReferenceError(reference, rows.map(toRecord));
      return rows[0] && toRecord(rows[0]);
    },

    async update(id, patch) {
      const values = toUpdate(patch);
      if (Object.keys(values).length === 0) return keys.get(id);
      const row = await hooks.writeKeys(db, (w) =>
        w.updateTable('api_keys').set(values).where('id', '=', id).returningAll().executeTakeFirst(),
      );
      return row && toRecord(row);
    },

    async delete(id) {
      const result = await hooks.writeKeys(db, (w) => w.deleteFrom('api_keys').where('id', '=', id).executeTakeFirst());
      return Number(result.numDeletedRows) > 0;
    },

    async count() {
      const row = await db
        .selectFrom('api_keys')
        .select((eb) => eb.fn.countAll().as('n'))
        .executeTakeFirstOrThrow();
      return Number(row.n);
    },

    async touchLastUsed(lastUsed) {
      if (lastUsed.size === 0) return;
      // Not a `writeKeys`: last-use times do not change what a key may do, so other
      // processes need not reload for them.
      await db.transaction().execute(async (trx) => {
        for (const [id, at] of lastUsed) {
          await trx
            .updateTable('api_keys')
            .set({ last_used_at: at })
            .where('id', '=', id)
            .where((eb) => eb.or([eb('last_used_at', 'is', null), eb('last_used_at', '<', at)]))
            .execute();
        }
      });
    },
  };

  const meta: MetaStore = {
    async get(key) {
      const row = await db.selectFrom('meta').select('value').where('key', '=', key).executeTakeFirst();
      return row?.value;
    },
    async set(key, value) {
      await db
        .insertInto('meta')
        .values({ key, value })
        .onConflict((oc) => oc.column('key').doUpdateSet({ value }))
        .execute();
    },
    async delete(key) {
      await db.deleteFrom('meta').where('key', '=', key).execute();
    },
    async deleteIfEquals(key, value) {
      const result = await db.deleteFrom('meta').where('key', '=', key).where('value', '=', value).executeTakeFirst();
      return Number(result.numDeletedRows) > 0;
    },
  };

  const sessions: AdminSessionStore = {
    async create(record) {
      await db
        .insertInto('admin_sessions')
        .values({
          id: record.id,
          token_hash: record.tokenHash,
          created_at: record.createdAt,
          last_seen_at: record.lastSeenAt,
          expires_at: record.expiresAt,
          user_id: record.userId,
        })
        .execute();
    },
    async findByTokenHash(tokenHash) {
      const row = await db
        .selectFrom('admin_sessions')
        .selectAll()
        .where('token_hash', '=', tokenHash)
        .executeTakeFirst();
      return row && toSessionRecord(row);
    },
    async touch(id, at) {
      await db
        .updateTable('admin_sessions')
        .set({ last_seen_at: at })
        .where('id', '=', id)
        .where('last_seen_at', '<', at)
        .execute();
    },
    async delete(id) {
      const result = await db.deleteFrom('admin_sessions').where('id', '=', id).executeTakeFirst();
      return Number(result.numDeletedRows) > 0;
    },
    async deleteAllExcept(keepId, userId) {
      let query = db.deleteFrom('admin_sessions');
      if (keepId !== null) query = query.where('id', '<>', keepId);
      if (userId !== undefined) query = query.where('user_id', '=', userId);
      const result = await query.executeTakeFirst();
      return Number(result.numDeletedRows);
    },
    async deleteExpired(now, idleBefore) {
      const result = await db
        .deleteFrom('admin_sessions')
        .where((eb) => eb.or([eb('expires_at', '<=', now), eb('last_seen_at', '<', idleBefore)]))
        .executeTakeFirst();
      return Number(result.numDeletedRows);
    },
    async count() {
      const row = await db
        .selectFrom('admin_sessions')
        .select((eb) => eb.fn.countAll().as('n'))
        .executeTakeFirstOrThrow();
      return Number(row.n);
    },
  };

  let closing: Promise<void> | undefined;
  return {
    kind: hooks.kind,
    migrationsApplied: Object.freeze([...hooks.migrationsApplied]),
    keys,
    meta,
    sessions,
    users: createUserStore(db, hooks.writeKeys),
    invites: createInviteStore(db),
    usage: createUsageStore(db, hooks.appendUsage, hooks.maxAppendRecords),
    audit: createAuditStore(db),
    transaction: (work) =>
      hooks.transaction(db, (conn) => {
        const scoped = createKyselyStore(conn, hooks);
        return work({
          keys: scoped.keys,
          meta: scoped.meta,
          users: scoped.users,
          invites: scoped.invites,
          sessions: scoped.sessions,
          audit: scoped.audit,
          lockKeyOwner: (ownerId) => hooks.lockKeyOwner(conn, ownerId),
        });
      }),
    watchKeys: (onChange) => hooks.watchKeys(onChange),
    close() {
      closing ??= (async () => {
        await hooks.stop();
        await db.destroy();
      })();
      return closing;
    },
  };
}

function toRow(record: KeyRecord): Insertable<ApiKeysTable> {
  return {
    id: record.id,
    name: record.name,
    prefix: record.prefix,
    hash: record.hash,
    created_at: record.createdAt,
    last_used_at: record.lastUsedAt,
    expires_at: record.expiresAt,
    revoked_at: record.revokedAt,
    allowed_models: JSON.stringify(record.models),
    note: record.note,
    rpm: record.limits.rpm,
    tpm: record.limits.tpm,
    max_concurrent: record.limits.concurrent,
    priority: record.priority,
    manage: record.manage ? 1 : 0,
    budget_tokens: record.budget.tokens,
    budget_requests: record.budget.requests,
    budget_gpu_seconds: record.budget.gpuSeconds,
    budget_period: record.budget.period,
    owner_id: record.ownerId,
    ceiling_rpm: record.ceilings.rpm,
    ceiling_tpm: record.ceilings.tpm,
    ceiling_concurrent: record.ceilings.concurrent,
    ceiling_expires_at: record.ceilings.expiresAt,
  };
}

function toUpdate(patch: KeyPatch): Updateable<ApiKeysTable> {
  const values: Updateable<ApiKeysTable> = {};
  if (patch.name !== undefined) values.name = patch.name;
  if (patch.models !== undefined) values.allowed_models = JSON.stringify(patch.models);
  if (patch.expiresAt !== undefined) values.expires_at = patch.expiresAt;
  if (patch.revokedAt !== undefined) values.revoked_at = patch.revokedAt;
  if (patch.note !== undefined) values.note = patch.note;
  if (patch.limits?.rpm !== undefined) values.rpm = patch.limits.rpm;
  if (patch.limits?.tpm !== undefined) values.tpm = patch.limits.tpm;
  if (patch.limits?.concurrent !== undefined) values.max_concurrent = patch.limits.concurrent;
  if (patch.priority !== undefined) values.priority = patch.priority;
  if (patch.manage !== undefined) values.manage = patch.manage ? 1 : 0;
  if (patch.budget?.tokens !== undefined) values.budget_tokens = patch.budget.tokens;
  if (patch.budget?.requests !== undefined) values.budget_requests = patch.budget.requests;
  if (patch.budget?.gpuSeconds !== undefined) values.budget_gpu_seconds = patch.budget.gpuSeconds;
  if (patch.budget?.period !== undefined) values.budget_period = patch.budget.period;
  if (patch.ceilings?.rpm !== undefined) values.ceiling_rpm = patch.ceilings.rpm;
  if (patch.ceilings?.tpm !== undefined) values.ceiling_tpm = patch.ceilings.tpm;
  if (patch.ceilings?.concurrent !== undefined) values.ceiling_concurrent = patch.ceilings.concurrent;
  if (patch.ceilings?.expiresAt !== undefined) values.ceiling_expires_at = patch.ceilings.expiresAt;
  return values;
}

function toRecord(row: Selectable<ApiKeysTable>): KeyRecord {
  return {
    id: row.id,
    name: row.name,
    prefix: row.prefix,
    hash: row.hash,
    createdAt: Number(row.created_at),
    lastUsedAt: nullableNumber(row.last_used_at),
    expiresAt: nullableNumber(row.expires_at),
    revokedAt: nullableNumber(row.revoked_at),
    models: parseModels(row.id, row.allowed_models),
    note: row.note,
    limits: {
      rpm: nullableNumber(row.rpm),
      tpm: nullableNumber(row.tpm),
      concurrent: nullableNumber(row.max_concurrent),
    },
    priority: Number(row.priority),
    manage: Number(row.manage) === 1,
    budget: {
      tokens: nullableNumber(row.budget_tokens),
      requests: nullableNumber(row.budget_requests),
      gpuSeconds: nullableNumber(row.budget_gpu_seconds),
      period: parsePeriod(row.id, row.budget_period),
    },
    ownerId: row.owner_id,
    ceilings: {
      rpm: nullableNumber(row.ceiling_rpm),
      tpm: nullableNumber(row.ceiling_tpm),
      concurrent: nullableNumber(row.ceiling_concurrent),
      expiresAt: nullableNumber(row.ceiling_expires_at),
    },
  };
}

/** A damaged period must not silently become another one: failing names the row to fix. */
function parsePeriod(id: string, text: string): BudgetPeriod {
  if (!(BUDGET_PERIODS as readonly string[]).includes(text))
    throw new Error(`api_keys.budget_period of ${id} is not day, week or month: ${JSON.stringify(text)}`);
  return text as BudgetPeriod;
}

function toSessionRecord(row: Selectable<AdminSessionsTable>): AdminSessionRecord {
  return {
    id: row.id,
    tokenHash: row.token_hash,
    createdAt: Number(row.created_at),
    lastSeenAt: Number(row.last_seen_at),
    expiresAt: Number(row.expires_at),
    userId: row.user_id,
  };
}

function nullableNumber(value: number | string | null): number | null {
  return value === null ? null : Number(value);
}

/**
 * A damaged list must not read as "[] = every model": that would widen the key's access.
 * Failing loudly names the row to fix.
 */
function parseModels(id: string, text: string): string[] {
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    parsed = undefined;
  }
  if (!Array.isArray(parsed) || !parsed.every((m) => typeof m === 'string')) {
    throw new Error(`api_keys.allowed_models of ${id} is not a JSON array of strings: ${JSON.stringify(text)}`);
  }
  return parsed;
}

/** A set of change listeners where one throwing listener cannot starve the others. */
export class ChangeListeners {
  readonly #listeners = new Set<() => void>();

  get size(): number {
    return this.#listeners.size;
  }

  add(listener: () => void): () => void {
    // A wrapper per subscription, so subscribing the same function twice needs two unsubscribes.
    const entry = (): void => listener();
    this.#listeners.add(entry);
    return () => {
      this.#listeners.delete(entry);
    };
  }

  notify(): void {
    for (const listener of [...this.#listeners]) {
      try {
        listener();
      } catch (error) {
        // Listeners are expected to handle their own failures; surface the bug without
        // breaking the watcher loop.
        process.emitWarning(`watchKeys listener threw: ${error instanceof Error ? error.message : String(error)}`);
      }
    }
  }
}
