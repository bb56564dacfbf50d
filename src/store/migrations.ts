/**
 * Schema migrations, in code (no files on disk to ship or lose). Each is numbered, runs once,
 * and is recorded in `kysely_migration`; the open of every store runs the pending ones.
 *
 * Rules for adding one: append, never edit or renumber a released migration; use the schema
 * builder with portable types (`text`, `integer`, `bigint`) so SQLite and PostgreSQL share it;
 * take `Kysely<unknown>` because a migration must not depend on today's row types.
 */
import { randomBytes } from 'node:crypto';
import { userNameKey } from '../core/user-names.js';
import {
  Migrator,
  SqliteAdapter,
  sql,
  type CreateTableBuilder,
  type Kysely,
  type Migration,
  type MigrationProvider,
} from 'kysely';

export const MIGRATIONS: Readonly<Record<string, Migration>> = {
  '0001_api_keys_and_meta': {
    async up(db: Kysely<unknown>): Promise<void> {
      await db.schema
        .createTable('api_keys')
        .addColumn('id', 'text', (c) => c.primaryKey())
        .addColumn('name', 'text', (c) => c.notNull())
        .addColumn('prefix', 'text', (c) => c.notNull())
        .addColumn('hash', 'text', (c) => c.notNull().unique())
        .addColumn('created_at', 'bigint', (c) => c.notNull())
        .addColumn('last_used_at', 'bigint')
        .addColumn('expires_at', 'bigint')
        .addColumn('revoked_at', 'bigint')
        .addColumn('allowed_models', 'text', (c) => c.notNull().defaultTo('[]'))
        .addColumn('note', 'text', (c) => c.notNull().defaultTo(''))
        .addColumn('rpm', 'integer')
        .addColumn('tpm', 'integer')
        .addColumn('max_concurrent', 'integer')
        .execute();
      await db.schema.createIndex('api_keys_prefix_idx').on('api_keys').column('prefix').execute();
      await db.schema
        .createTable('meta')
        .addColumn('key', 'text', (c) => c.primaryKey())
        .addColumn('value', 'text', (c) => c.notNull())
        .execute();
    },
  },
  '0002_admin_sessions': {
    async up(db: Kysely<unknown>): Promise<void> {
      await db.schema
        .createTable('admin_sessions')
        .addColumn('id', 'text', (c) => c.primaryKey())
        .addColumn('token_hash', 'text', (c) => c.notNull().unique())
        .addColumn('created_at', 'bigint', (c) => c.notNull())
        .addColumn('last_seen_at', 'bigint', (c) => c.notNull())
        .addColumn('expires_at', 'bigint', (c) => c.notNull())
        .execute();
    },
  },
  '0003_usage': {
    async up(db: Kysely<unknown>): Promise<void> {
      await db.schema
        .createTable('usage_requests')
        .addColumn('id', 'text', (c) => c.primaryKey())
        .addColumn('at', 'bigint', (c) => c.notNull())
        .$call(usageRequestColumnsAfterAt)
        .execute();
      // Newest-first pages (keyset on at, id) and the retention prune; then the two filters.
      await db.schema.createIndex('usage_requests_at_idx').on('usage_requests').columns(['at', 'id']).execute();
      await db.schema
        .createIndex('usage_requests_key_idx')
        .on('usage_requests')
        .columns(['key_id', 'at', 'id'])
        .execute();
      await db.schema
        .createIndex('usage_requests_model_idx')
        .on('usage_requests')
        .columns(['model', 'at', 'id'])
        .execute();
      for (const table of ['usage_minutes', 'usage_hours']) {
        let create = db.schema
          .createTable(table)
          .addColumn('bucket', 'bigint', (c) => c.notNull())
          .addColumn('key_id', 'text', (c) => c.notNull())
          .addColumn('key_name', 'text')
          .addColumn('model', 'text', (c) => c.notNull())
          .addColumn('requests', 'integer', (c) => c.notNull())
          .addColumn('errors', 'integer', (c) => c.notNull())
          .addColumn('aborted', 'integer', (c) => c.notNull())
          .addColumn('input_tokens', 'bigint', (c) => c.notNull())
          .addColumn('output_tokens', 'bigint', (c) => c.notNull())
          .addColumn('cached_tokens', 'bigint', (c) => c.notNull())
          .addColumn('duration_ms_sum', 'double precision', (c) => c.notNull());
        // 31 latency bounds + overflow (store.ts USAGE_LATENCY_BOUNDS_MS), frozen here on purpose.
        for (let i = 0; i < 32; i++)
          create = create.addColumn(`lat_${String(i).padStart(2, '0')}`, 'integer', (c) => c.notNull().defaultTo(0));
        await create.addPrimaryKeyConstraint(`${table}_pk`, ['bucket', 'key_id', 'model']).execute();
      }
    },
  },
  /**
   * The request log keyed by (at, id): the primary key is now the time-ordered index that pages
   * and prunes use, instead of a key on `id` plus a separate (at, id) index, and the key filter's
   * index skips calls made without a key (open mode writes no entry in it). One index fewer to
   * maintain per recorded call, two in open mode. A call is still found by its id: ids begin
   * with the call's time (usage-id.ts), which gives the `at` to look in.
   */
  '0004_usage_requests_keyed_by_time': {
    async up(db: Kysely<unknown>): Promise<void> {
      if (db.getExecutor().adapter instanceof SqliteAdapter) {
        // SQLite cannot change a table's primary key: copy into a new table (every row kept).
        await db.schema
          .createTable('usage_requests_next')
          .addColumn('id', 'text', (c) => c.notNull())
          .addColumn('at', 'bigint', (c) => c.notNull())
          .$call(usageRequestColumnsAfterAt)
          .addPrimaryKeyConstraint('usage_requests_pk', ['at', 'id'])
          .execute();
        // The old table's columns in the same order, so `select *` lines up.
        await sql`insert into usage_requests_next select * from usage_requests`.execute(db);
        await db.schema.dropTable('usage_requests').execute();
        await db.schema.alterTable('usage_requests_next').renameTo('usage_requests').execute();
        await db.schema
          .createIndex('usage_requests_model_idx')
          .on('usage_requests')
          .columns(['model', 'at', 'id'])
          .execute();
      } else {
        await sql`alter table usage_requests drop constraint usage_requests_pkey`.execute(db);
        await sql`alter table usage_requests add constraint usage_requests_pk primary key (at, id)`.execute(db);
        await db.schema.dropIndex('usage_requests_at_idx').execute();
        await db.schema.dropIndex('usage_requests_key_idx').execute();
      }
      await db.schema
        .createIndex('usage_requests_key_idx')
        .on('usage_requests')
        .columns(['key_id', 'at', 'id'])
        .where(sql.ref('key_id'), 'is not', null)
        .execute();
    },
  },
  /** A key's place in the admission queue: higher goes first (-10..10). */
  '0005_api_key_priority': {
    async up(db: Kysely<unknown>): Promise<void> {
      await db.schema
        .alterTable('api_keys')
        .addColumn('priority', 'integer', (c) => c.notNull().defaultTo(0))
        .execute();
    },
  },
  /** Time each call waited for its turn (admission queue, a key's concurrency slot). */
  '0006_usage_queue_ms': {
    async up(db: Kysely<unknown>): Promise<void> {
      await db.schema.alterTable('usage_requests').addColumn('queue_ms', 'double precision').execute();
    },
  },
  /** A key's budget per calendar period, and each call's GPU time (what a GPU-seconds budget counts). */
  '0007_key_budget_and_gpu_ms': {
    async up(db: Kysely<unknown>): Promise<void> {
      // One column per statement: SQLite's ALTER TABLE adds one at a time.
      for (const column of ['budget_tokens', 'budget_requests', 'budget_gpu_seconds'])
        await db.schema.alterTable('api_keys').addColumn(column, 'bigint').execute();
      await db.schema
        .alterTable('api_keys')
        .addColumn('budget_period', 'text', (c) => c.notNull().defaultTo('day'))
        .execute();
      await db.schema.alterTable('usage_requests').addColumn('gpu_ms', 'double precision').execute();
    },
  },
  /** Who changed what in the admin API: newest-first pages, by action too, and the retention prune. */
  '0008_audit_log': {
    async up(db: Kysely<unknown>): Promise<void> {
      await db.schema
        .createTable('audit_log')
        .addColumn('id', 'text', (c) => c.notNull())
        .addColumn('at', 'bigint', (c) => c.notNull())
        .addColumn('actor_kind', 'text', (c) => c.notNull())
        .addColumn('actor_id', 'text')
        .addColumn('actor_name', 'text')
        .addColumn('client', 'text')
        .addColumn('action', 'text', (c) => c.notNull())
        .addColumn('target_kind', 'text')
        .addColumn('target_id', 'text')
        .addColumn('target_name', 'text')
        .addColumn('target_version', 'text')
        .addColumn('outcome', 'text', (c) => c.notNull().check(sql`outcome in ('success', 'failure')`))
        .addColumn('reason', 'text')
        .addPrimaryKeyConstraint('audit_log_pk', ['at', 'id'])
        .execute();
      await db.schema.createIndex('audit_log_action_idx').on('audit_log').columns(['action', 'at', 'id']).execute();
    },
  },
  /**
   * People instead of one password: users with roles, invitations, an owner per key and a user
   * per session. An existing admin password becomes the first admin user (`admin`), and every
   * existing session becomes theirs, so nobody is signed out by the upgrade.
   */
  '0009_users': {
    async up(db: Kysely<unknown>): Promise<void> {
      await db.schema
        .createTable('users')
        .addColumn('id', 'text', (c) => c.primaryKey())
        .addColumn('name', 'text', (c) => c.notNull().unique())
        .addColumn('email', 'text')
        .addColumn('role', 'text', (c) => c.notNull())
        .addColumn('sign_in', 'text', (c) => c.notNull())
        .addColumn('password_hash', 'text')
        .addColumn('oidc_issuer', 'text')
        .addColumn('oidc_subject', 'text')
        .addColumn('created_at', 'bigint', (c) => c.notNull())
        .addColumn('disabled_at', 'bigint')
        .addColumn('allowed_models', 'text', (c) => c.notNull().defaultTo('[]'))
        .execute();
      // NULLs never collide in a unique index (both engines), so password users need no pair.
      await db.schema
        .createIndex('users_oidc_idx')
        .on('users')
        .columns(['oidc_issuer', 'oidc_subject'])
        .unique()
        .execute();
      await db.schema
        .createTable('user_invites')
        .addColumn('token_hash', 'text', (c) => c.primaryKey())
        .addColumn('user_id', 'text', (c) => c.notNull())
        .addColumn('created_at', 'bigint', (c) => c.notNull())
        .addColumn('expires_at', 'bigint', (c) => c.notNull())
        .execute();
      await db.schema.createIndex('user_invites_user_idx').on('user_invites').column('user_id').execute();
      await db.schema.alterTable('api_keys').addColumn('owner_id', 'text').execute();
      await db.schema.createIndex('api_keys_owner_idx').on('api_keys').column('owner_id').execute();
      await db.schema.alterTable('admin_sessions').addColumn('user_id', 'text').execute();

      const { rows } = await sql<{
        value: string;
      }>`select value from meta where key = ${'admin.password_hash'}`.execute(db);
      const passwordHash = rows[0]?.value;
      if (passwordHash === undefined) return;
      const id = `usr_${randomBytes(9).toString('base64url')}`;
      await sql`insert into users (id, name, role, sign_in, password_hash, created_at, allowed_models)
        values (${id}, ${'admin'}, ${'admin'}, ${'password'}, ${passwordHash}, ${Date.now()}, ${'[]'})`.execute(db);
      await sql`insert into meta (key, value) values (${'admin.first_user_id'}, ${id})`.execute(db);
      await sql`delete from meta where key = ${'admin.password_hash'}`.execute(db);
      await sql`update admin_sessions set user_id = ${id}`.execute(db);
    },
  },
  /** The `manage` scope: the key may list, load and unload models (`/models*`); off for every existing key. */
  '0010_api_key_manage': {
    async up(db: Kysely<unknown>): Promise<void> {
      await db.schema
        .alterTable('api_keys')
        .addColumn('manage', 'integer', (c) => c.notNull().defaultTo(0))
        .execute();
    },
  },
  /** The most a member's keys may hold in budgets together; null period: no cap (every existing user). */
  '0011_user_max_budget': {
    async up(db: Kysely<unknown>): Promise<void> {
      // One column per statement: SQLite's ALTER TABLE adds one at a time.
      for (const column of ['max_budget_tokens', 'max_budget_requests', 'max_budget_gpu_seconds'])
        await db.schema.alterTable('users').addColumn(column, 'bigint').execute();
      await db.schema.alterTable('users').addColumn('max_budget_period', 'text').execute();
    },
  },
  /** What a user action changed, from → to (`AuditChanges` as JSON). */
  '0012_audit_changes': {
    async up(db: Kysely<unknown>): Promise<void> {
      await db.schema.alterTable('audit_log').addColumn('changes', 'text').execute();
    },
  },
  /**
   * The limits and expiry an admin set on a key, which its member owner may only tighten. Who set
   * an existing key's values is unknown, so they all become ceilings: a member may still tighten
   * them, and an admin's next change moves them.
   */
  '0013_api_key_ceilings': {
    async up(db: Kysely<unknown>): Promise<void> {
      for (const column of ['ceiling_rpm', 'ceiling_tpm', 'ceiling_concurrent'])
        await db.schema.alterTable('api_keys').addColumn(column, 'integer').execute();
      await db.schema.alterTable('api_keys').addColumn('ceiling_expires_at', 'bigint').execute();
      await sql`update api_keys set ceiling_rpm = rpm, ceiling_tpm = tpm, ceiling_concurrent = max_concurrent,
        ceiling_expires_at = expires_at`.execute(db);
    },
  },
  /**
   * Names compare by a key (`core/user-names.ts`: NFKC, invisible characters dropped, case
   * folded), unique, so a look-alike of a taken name is taken. Existing users get theirs, oldest
   * first; one whose key an older user already has keeps none (null never collides) and is still
   * found by its exact name.
   */
  '0014_user_name_key': {
    async up(db: Kysely<unknown>): Promise<void> {
      await db.schema.alterTable('users').addColumn('name_key', 'text').execute();
      const { rows } = await sql<{ id: string; name: string }>`select id, name from users
        order by created_at, id`.execute(db);
      const taken = new Set<string>();
      for (const { id, name } of rows) {
        const key = userNameKey(name);
        if (taken.has(key)) continue;
        taken.add(key);
        await sql`update users set name_key = ${key} where id = ${id}`.execute(db);
      }
      await db.schema.createIndex('users_name_key_idx').on('users').column('name_key').unique().execute();
    },
  },
};

/**
 * usage_requests' columns after `id` and `at`, as migration 0003 created them. Migration 0004 rebuilds
 * the SQLite table with the same columns in the same order (it copies with `select *`), so both
 * take them from here. Frozen with those migrations: a new column goes in a new migration.
 */
function usageRequestColumnsAfterAt<TB extends string, C extends string>(table: CreateTableBuilder<TB, C>) {
  return table
    .addColumn('request_id', 'text', (c) => c.notNull())
    .addColumn('key_id', 'text')
    .addColumn('key_name', 'text')
    .addColumn('model', 'text')
    .addColumn('method', 'text', (c) => c.notNull())
    .addColumn('endpoint', 'text', (c) => c.notNull())
    .addColumn('status', 'integer', (c) => c.notNull())
    .addColumn('streamed', 'integer', (c) => c.notNull())
    .addColumn('input_tokens', 'integer')
    .addColumn('output_tokens', 'integer')
    .addColumn('cached_tokens', 'integer')
    .addColumn('tokens_source', 'text')
    .addColumn('ttfb_ms', 'double precision')
    .addColumn('ttft_ms', 'double precision')
    .addColumn('duration_ms', 'double precision', (c) => c.notNull())
    .addColumn('bytes_in', 'bigint', (c) => c.notNull())
    .addColumn('bytes_out', 'bigint', (c) => c.notNull())
    .addColumn('client_aborted', 'integer', (c) => c.notNull())
    .addColumn('error_class', 'text')
    .addColumn('request_body', 'text')
    .addColumn('response_body', 'text');
}

const provider: MigrationProvider = {
  getMigrations: () => Promise.resolve(MIGRATIONS),
};

class MigrationError extends Error {
  override name = 'MigrationError';
}

/**
 * Brings the schema up to date and returns the names of the migrations it applied. The
 * caller holds whatever cross-process lock its dialect needs.
 */
export async function migrateToLatest(
  db: Kysely<unknown>,
  options: { migrationTableSchema?: string; disableTransactions?: boolean } = {},
): Promise<string[]> {
  return migrateUpTo(db, undefined, options);
}

/**
 * Applies the pending migrations up to `last` (every one when undefined). Tests use a name to
 * build a database as an older version left it, then open it with this one.
 */
export async function migrateUpTo(
  db: Kysely<unknown>,
  last: string | undefined,
  options: { migrationTableSchema?: string; disableTransactions?: boolean } = {},
): Promise<string[]> {
  if (last !== undefined && !(last in MIGRATIONS)) throw new MigrationError(`there is no migration named ${last}`);
  const migrator = new Migrator({ db, provider, ...options });
  const { error, results = [] } =
    last === undefined ? await migrator.migrateToLatest() : await migrator.migrateTo(last);
  const failed = results.find((r) => r.status === 'Error');
  if (error !== undefined || failed) {
    const what = failed ? `migration ${failed.migrationName} failed` : 'migrating the store failed';
    throw new MigrationError(`${what}: ${error instanceof Error ? error.message : String(error)}`, { cause: error });
  }
  return results.filter((r) => r.status === 'Success').map((r) => r.migrationName);
}
