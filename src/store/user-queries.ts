/**
 * The `users` and `user_invites` queries, written once for both engines. Names are found and kept
 * unique by their comparison key (`core/user-names.ts`), so look-alikes are one name. A user write that
 * can change what a key may do (disabling, a new role) runs through `writeKeys`, so every
 * replica's key index reloads (`watchKeys`).
 */
import type { Insertable, Kysely, Selectable, Updateable } from 'kysely';
import { userNameKey } from '../core/user-names.js';
import type { Database, UserInvitesTable, UsersTable } from './schema.js';
import type { InviteRecord, KeyBudget, UserRecord, UserRole, SignInMethod } from './records.js';
import type { InviteStore, UserStore } from './store.js';
import { BUDGET_PERIODS, USER_ROLES } from './records.js';

type WriteKeys = <T>(db: Kysely<Database>, write: (db: Kysely<Database>) => Promise<T>) => Promise<T>;

export function createUserStore(db: Kysely<Database>, writeKeys: WriteKeys): UserStore {
  const users: UserStore = {
    async create(record) {
      await writeKeys(db, (w) => w.insertInto('users').values(toUserRow(record)).execute());
      return structuredClone(record);
    },
    async list() {
      const rows = await db.selectFrom('users').selectAll().orderBy('created_at').orderBy('id').execute();
      return rows.map(toUserRecord);
    },
    async get(id) {
      const row = await db.selectFrom('users').selectAll().where('id', '=', id).executeTakeFirst();
      return row && toUserRecord(row);
    },
    async findByName(name) {
      // One query whether the name exists or not. The exact name wins: an older look-alike kept
      // from before migration 0014 has no key. Both unique, so at most two rows.
      const rows = await db
        .selectFrom('users')
        .selectAll()
        .where((eb) => eb.or([eb('name', '=', name), eb('name_key', '=', userNameKey(name))]))
        .execute();
      const row = rows.find((r) => r.name === name) ?? rows[0];
      return row && toUserRecord(row);
    },
    async findByOidc(issuer, subject) {
      const row = await db
        .selectFrom('users')
        .selectAll()
        .where('oidc_issuer', '=', issuer)
        .where('oidc_subject', '=', subject)
        .executeTakeFirst();
      return row && toUserRecord(row);
    },
    async update(id, patch) {
      const values: Updateable<UsersTable> = {};
      if (patch.name !== undefined) Object.assign(values, { name: patch.name, name_key: userNameKey(patch.name) });
      if (patch.email !== undefined) values.email = patch.email;
      if (patch.role !== undefined) values.role = patch.role;
      if (patch.passwordHash !== undefined) values.password_hash = patch.passwordHash;
      if (patch.disabledAt !== undefined) values.disabled_at = patch.disabledAt;
      if (patch.allowedModels !== undefined) values.allowed_models = JSON.stringify(patch.allowedModels);
      if (patch.maxBudget !== undefined) Object.assign(values, maxBudgetColumns(patch.maxBudget));
      if (patch.oidc !== undefined) {
        values.sign_in = 'oidc';
        values.oidc_issuer = patch.oidc.issuer;
        values.oidc_subject = patch.oidc.subject;
      }
      if (Object.keys(values).length === 0) return users.get(id);
      const row = await writeKeys(db, (w) =>
        w.updateTable('users').set(values).where('id', '=', id).returningAll().executeTakeFirst(),
      );
      return row && toUserRecord(row);
    },
    async count() {
      const row = await db
        .selectFrom('users')
        .select((eb) => eb.fn.countAll().as('n'))
        .executeTakeFirstOrThrow();
      return Number(row.n);
    },
  };
  return users;
}

export function createInviteStore(db: Kysely<Database>): InviteStore {
  return {
    async create(record) {
      await db
        .insertInto('user_invites')
        .values({
          token_hash: record.tokenHash,
          user_id: record.userId,
          created_at: record.createdAt,
          expires_at: record.expiresAt,
        })
        .execute();
    },
    async take(tokenHash) {
      const row = await db
        .deleteFrom('user_invites')
        .where('token_hash', '=', tokenHash)
        .returningAll()
        .executeTakeFirst();
      return row && toInviteRecord(row);
    },
    async deleteForUser(userId) {
      const result = await db.deleteFrom('user_invites').where('user_id', '=', userId).executeTakeFirst();
      return Number(result.numDeletedRows);
    },
    async findForUser(userId) {
      const row = await db
        .selectFrom('user_invites')
        .selectAll()
        .where('user_id', '=', userId)
        .orderBy('expires_at', 'desc')
        .executeTakeFirst();
      return row && toInviteRecord(row);
    },
  };
}

function toUserRow(record: UserRecord): Insertable<UsersTable> {
  return {
    id: record.id,
    name: record.name,
    name_key: userNameKey(record.name),
    email: record.email,
    role: record.role,
    sign_in: record.signIn,
    password_hash: record.passwordHash,
    oidc_issuer: record.oidcIssuer,
    oidc_subject: record.oidcSubject,
    created_at: record.createdAt,
    disabled_at: record.disabledAt,
    allowed_models: JSON.stringify(record.allowedModels),
    ...maxBudgetColumns(record.maxBudget),
  };
}

function maxBudgetColumns(budget: KeyBudget | null) {
  return {
    max_budget_tokens: budget?.tokens ?? null,
    max_budget_requests: budget?.requests ?? null,
    max_budget_gpu_seconds: budget?.gpuSeconds ?? null,
    max_budget_period: budget?.period ?? null,
  } satisfies Updateable<UsersTable>;
}

function toUserRecord(row: Selectable<UsersTable>): UserRecord {
  return {
    id: row.id,
    name: row.name,
    email: row.email,
    role: readRole(row),
    signIn: row.sign_in === 'oidc' ? 'oidc' : ('password' satisfies SignInMethod),
    passwordHash: row.password_hash,
    oidcIssuer: row.oidc_issuer,
    oidcSubject: row.oidc_subject,
    createdAt: Number(row.created_at),
    disabledAt: row.disabled_at === null ? null : Number(row.disabled_at),
    allowedModels: readModels(row),
    maxBudget: readMaxBudget(row),
  };
}

/** A damaged period must not read as "no cap" (that would lift the member's limit): failing names the row. */
function readMaxBudget(row: Selectable<UsersTable>): KeyBudget | null {
  if (row.max_budget_period === null) return null;
  const period = BUDGET_PERIODS.find((p) => p === row.max_budget_period);
  if (!period)
    throw new Error(`users.max_budget_period of ${row.id} is not day, week or month: ${row.max_budget_period}`);
  const amount = (value: number | string | null) => (value === null ? null : Number(value));
  return {
    tokens: amount(row.max_budget_tokens),
    requests: amount(row.max_budget_requests),
    gpuSeconds: amount(row.max_budget_gpu_seconds),
    period,
  };
}

/** An unknown role must not read as some role: failing names the row to fix. */
function readRole(row: Selectable<UsersTable>): UserRole {
  const role = USER_ROLES.find((r) => r === row.role);
  if (!role) throw new Error(`users.role of ${row.id} is not one of ${USER_ROLES.join(', ')}: ${row.role}`);
  return role;
}

/** A damaged list must not read as "[] = every model" (that would widen what the member may allow). */
function readModels(row: Selectable<UsersTable>): string[] {
  let parsed: unknown;
  try {
    parsed = JSON.parse(row.allowed_models);
  } catch {
    parsed = undefined;
  }
  if (!Array.isArray(parsed) || !parsed.every((m) => typeof m === 'string'))
    throw new Error(`users.allowed_models of ${row.id} is not a JSON array of strings`);
  return parsed;
}

function toInviteRecord(row: Selectable<UserInvitesTable>): InviteRecord {
  return {
    tokenHash: row.token_hash,
    userId: row.user_id,
    createdAt: Number(row.created_at),
    expiresAt: Number(row.expires_at),
  };
}
