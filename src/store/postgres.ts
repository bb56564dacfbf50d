/**
 * The PostgreSQL store (`GATEHOUSE_DATABASE_URL=postgres://...`): same queries as SQLite
 * (`kysely-store.ts`), plus what only a server database needs: an advisory lock so replicas
 * starting together migrate once, one per key owner so two cap checks never read the same sum,
 * and LISTEN/NOTIFY so every replica hears key changes.
 */
import { createHash, randomUUID } from 'node:crypto';
import { finished } from 'node:stream/promises';
import { Kysely, PostgresDialect, sql } from 'kysely';
import pg from 'pg';
import { from as copyFrom } from 'pg-copy-streams';
import { ChangeListeners, createKyselyStore } from './kysely-store.js';
import { migrateToLatest } from './migrations.js';
import { compileUsageSql, type AppendUsage } from './usage-queries.js';
import { COPY_REQUESTS_SQL, copyRows, ROLLUP_TABLES, rollupRows, type CellValue } from './usage-rows.js';
import type { Database } from './schema.js';
import { describePostgresUrl } from './postgres-url.js';
import type { Store } from './store.js';

export interface PostgresStoreOptions {
  url: string;
  /** Schema holding the tables (created if missing). Tests use one per run. */
  schema?: string;
  /** Safety-net reload interval for `watchKeys`, in case a notification was lost. */
  resyncIntervalMs?: number;
  poolSize?: number;
}

const SCHEMA_NAME = /^[a-z_][a-z0-9_]{0,39}$/;

export async function openPostgresStore(options: PostgresStoreOptions): Promise<Store> {
  const schema = options.schema ?? 'public';
  if (!SCHEMA_NAME.test(schema)) {
    throw new Error(`PostgreSQL schema "${schema}" must be lowercase letters, digits and _ (at most 40 characters)`);
  }
  // One channel per schema, so stores in different schemas of one database stay independent.
  const channel = schema === 'public' ? 'gatehouse_keys' : `gatehouse_keys__${schema}`;
  // Tags this store's own NOTIFYs so its watcher can skip them.
  const instanceId = randomUUID();

  const pool = new pg.Pool({
    connectionString: options.url,
    max: options.poolSize ?? 10,
    // How this store's connections show in pg_stat_activity.
    application_name: storeApplicationName(schema),
    // Unqualified table names resolve to the store's schema, in queries and migrations alike.
    options: `-c search_path=${schema}`,
  });
  // An idle client losing its connection must not crash the process; the pool replaces it.
  pool.on('error', () => {});
  const db = new Kysely<Database>({ dialect: new PostgresDialect({ pool }) });

  let migrationsApplied: string[];
  try {
    migrationsApplied = await migrateUnderAdvisoryLock(pool, db, schema);
  } catch (error) {
    await db.destroy();
    throw new Error(
      `opening the PostgreSQL store at ${describePostgresUrl(options.url, schema)} failed: ${errorText(error)}`,
      { cause: error },
    );
  }

  const watcher = notificationWatcher(options.url, channel, instanceId, options.resyncIntervalMs ?? 5000);
  return createKyselyStore(db, {
    kind: 'postgres',
    migrationsApplied,
    writeKeys: (conn, write) => {
      const writeAndNotify = async (trx: Kysely<Database>) => {
        const result = await write(trx);
        // Delivered on commit only, so listeners never reload before the change is visible.
        await sql`select pg_notify(${channel}, ${instanceId})`.execute(trx);
        return result;
      };
      // Inside `store.transaction` the write joins it (and notifies when it commits).
      return conn.isTransaction ? writeAndNotify(conn) : conn.transaction().execute(writeAndNotify);
    },
    transaction: (conn, work) => conn.transaction().execute(work),
    lockKeyOwner: async (trx, ownerId) => {
      // Named per schema, as the migration lock is: stores in other schemas never wait for it.
      const key = advisoryLockKey(`gatehouse:key-owner:${schema}:${ownerId}`);
      await sql`select pg_advisory_xact_lock(${key}::bigint)`.execute(trx);
    },
    appendUsage: usageAppender(pool, db),
    // One round trip per batch: large ones cost the event loop little.
    maxAppendRecords: 2000,
    watchKeys: watcher.watchKeys,
    stop: () => watcher.stop(),
  });
}

/** The `application_name` of a store's pooled connections, so an operator can tell them apart. */
export function storeApplicationName(schema: string): string {
  return `gatehouse (${schema})`;
}

/**
 * A usage batch in one transaction on a pooled connection: the request rows as one COPY (the
 * bulk path PostgreSQL parses fastest, and no parameter limit), then one upsert per rollup row.
 * The upserts are named prepared statements, so each connection plans them once.
 */
function usageAppender(pool: pg.Pool, db: Kysely<Database>): AppendUsage {
  const texts = compileUsageSql(db);
  const upserts = ROLLUP_TABLES.map(([table, bucketMs]) => ({
    name: `gatehouse_${table}_upsert`,
    text: texts.upsert[table],
    bucketMs,
  }));
  return async (records) => {
    const client = await pool.connect();
    let broken: Error | undefined;
    // A connection lost while checked out emits 'error' besides failing its query: heard here,
    // it must not become an uncaught exception.
    const lost = (error: Error): void => {
      broken = error;
    };
    client.on('error', lost);
    try {
      await client.query('begin');
      const copy = client.query(copyFrom(COPY_REQUESTS_SQL));
      copy.end(copyRows(records));
      await finished(copy);
      for (const { name, text, bucketMs } of upserts) {
        for (const row of rollupRows(records, bucketMs))
          await client.query({ name, text, values: row.map(withoutNul) });
      }
      await client.query('commit');
    } catch (error) {
      await client.query('rollback').catch((rollbackError: unknown) => {
        broken = rollbackError as Error;
      });
      throw error;
    } finally {
      client.off('error', lost);
      // A connection lost or unable to roll back is dropped from the pool, not handed out again.
      client.release(broken);
    }
  };
}

/**
 * PostgreSQL text cannot hold NUL (a client can put one in, say, a model name): it becomes
 * U+FFFD, as in the COPY rows, so one odd call cannot get its whole batch refused.
 */
function withoutNul(value: CellValue): CellValue {
  return typeof value === 'string' && value.includes('\0') ? value.replaceAll('\0', '\uFFFD') : value;
}

/**
 * A session-level advisory lock, held on its own connection for the whole migration, so the
 * schema creation and Kysely's bookkeeping tables are serialised too (Kysely's own lock only
 * covers running the migrations).
 */
async function migrateUnderAdvisoryLock(pool: pg.Pool, db: Kysely<Database>, schema: string): Promise<string[]> {
  const lockKey = advisoryLockKey(`gatehouse:migrate:${schema}`);
  const lockClient = await pool.connect();
  try {
    await lockClient.query('select pg_advisory_lock($1::bigint)', [lockKey]);
    try {
      // `create schema if not exists` needs CREATE on the database even when the schema
      // exists, which a least-privilege user lacks: look first.
      const existing = await lockClient.query('select 1 from pg_namespace where nspname = $1', [schema]);
      if (existing.rowCount === 0) await lockClient.query(`create schema if not exists "${schema}"`);
      for (let attempt = 1; ; attempt++) {
        try {
          return await migrateToLatest(db as Kysely<unknown>, { migrationTableSchema: schema });
        } catch (error) {
          if (attempt === MIGRATE_ATTEMPTS || !anotherSchemaVanished(error, schema)) throw error;
        }
      }
    } finally {
      await lockClient.query('select pg_advisory_unlock($1::bigint)', [lockKey]);
    }
  } finally {
    lockClient.release();
  }
}

const MIGRATE_ATTEMPTS = 5;

/**
 * What PostgreSQL raises when a catalog read meets another client's drop: the schema (3F000),
 * a table (42P01) or a column (42703) vanished under it, or its cache entry did (XX000).
 */
const VANISHED_UNDER_READ = new Set(['3F000', '42P01', '42703']);

/**
 * Kysely's migrator reads the tables and columns of every schema in the database; when another
 * client drops its schema during that read, PostgreSQL fails the read naming what vanished. Ours
 * exists (made above, under our lock) and a failed migration leaves nothing behind, so reading
 * again is right; an error that names our schema is ours and is thrown.
 */
function anotherSchemaVanished(error: unknown, schema: string): boolean {
  for (let e = error as { code?: string; message?: string; cause?: unknown } | undefined; e; e = e.cause as typeof e) {
    const message = e.message ?? '';
    const vanished =
      VANISHED_UNDER_READ.has(e.code ?? '') || (e.code === 'XX000' && message.includes('cache lookup failed'));
    if (vanished) return !message.includes(`"${schema}"`);
  }
  return false;
}

/** Node reports a refused dual-stack connect as an AggregateError with an empty message. */
function errorText(error: unknown): string {
  const e = error as Error & { code?: string; errors?: unknown[] };
  if (e.message) return e.message;
  const inner = e.errors?.map((x) => (x as Error).message).filter(Boolean) ?? [];
  return inner.length > 0 ? inner.join('; ') : (e.code ?? String(error));
}

/** A stable signed 64-bit key for `pg_advisory_lock`, as a decimal string. */
function advisoryLockKey(name: string): string {
  return createHash('sha256').update(name).digest().readBigInt64BE(0).toString();
}

/**
 * One dedicated LISTEN connection, opened while anyone watches. It reconnects after a
 * failure, and every (re)connection notifies once: changes made while it was not listening
 * would otherwise be missed. A periodic resync covers anything else.
 */
function notificationWatcher(url: string, channel: string, instanceId: string, resyncIntervalMs: number) {
  const listeners = new ChangeListeners();
  let client: pg.Client | undefined;
  let resyncTimer: NodeJS.Timeout | undefined;
  let retryTimer: NodeJS.Timeout | undefined;
  let retryDelayMs = 250;
  let stopped = false;

  const active = (): boolean => !stopped && listeners.size > 0;

  const drop = (c: pg.Client): void => {
    if (client !== c) return;
    client = undefined;
    c.end().catch(() => {});
    scheduleReconnect();
  };

  const scheduleReconnect = (): void => {
    if (!active() || retryTimer) return;
    retryTimer = setTimeout(() => {
      retryTimer = undefined;
      void connect();
    }, retryDelayMs);
    retryTimer.unref();
    retryDelayMs = Math.min(retryDelayMs * 2, 5000);
  };

  const connect = async (): Promise<void> => {
    const c = new pg.Client({ connectionString: url });
    c.on('notification', (message) => {
      if (message.channel === channel && message.payload !== instanceId) listeners.notify();
    });
    c.on('error', () => drop(c));
    c.on('end', () => drop(c));
    try {
      await c.connect();
      await c.query(`listen "${channel}"`);
    } catch {
      c.end().catch(() => {});
      scheduleReconnect();
      return;
    }
    if (!active() || client) {
      await c.end().catch(() => {});
      return;
    }
    client = c;
    retryDelayMs = 250;
    listeners.notify();
  };

  const shutdown = async (): Promise<void> => {
    if (resyncTimer) clearInterval(resyncTimer);
    if (retryTimer) clearTimeout(retryTimer);
    resyncTimer = retryTimer = undefined;
    const c = client;
    client = undefined;
    await c?.end().catch(() => {});
  };

  return {
    watchKeys(onChange: () => void): () => void {
      if (stopped) throw new Error('watchKeys: the store is closed');
      const first = listeners.size === 0;
      const remove = listeners.add(onChange);
      if (first) {
        resyncTimer = setInterval(() => listeners.notify(), resyncIntervalMs);
        resyncTimer.unref();
        void connect();
      }
      return () => {
        remove();
        if (listeners.size === 0) void shutdown();
      };
    },
    async stop(): Promise<void> {
      stopped = true;
      await shutdown();
    },
  };
}
