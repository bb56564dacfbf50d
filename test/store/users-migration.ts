/**
 * A database as the one-password versions left it (before migration 0009_users): an admin
 * password in `meta`, a signed-in session, a key. Each engine's tests and the upgrade test
 * build it with this, then open it with today's code.
 */
import { sql, type Kysely } from 'kysely';
import { expect } from 'vitest';
import { hashSessionToken } from '../../src/auth/admin-sessions.js';
import { hashPassword } from '../../src/auth/passwords.js';
import { migrateUpTo } from '../../src/store/migrations.js';
import type { Store } from '../../src/store/store.js';

const BEFORE_USERS = '0006_usage_queue_ms';
export const OLD_PASSWORD = 'the one admin password of old';
/** A session cookie value the old version handed out. */
export const OLD_SESSION_TOKEN = 'O'.repeat(43);
export const OLD_KEY_ID = 'key_oldoldoldold';

export async function writeOneAdminDatabase(
  old: Kysely<unknown>,
  options: { migrationTableSchema?: string; disableTransactions?: boolean } = {},
  now = Date.now(),
): Promise<void> {
  await migrateUpTo(old, BEFORE_USERS, options);
  const hash = await hashPassword(OLD_PASSWORD, { N: 1024, r: 8, p: 1 });
  await sql`insert into meta (key, value) values ('admin.password_hash', ${hash})`.execute(old);
  await sql`insert into admin_sessions (id, token_hash, created_at, last_seen_at, expires_at)
    values ('old-session', ${hashSessionToken(OLD_SESSION_TOKEN)}, ${now}, ${now}, ${now + 86_400_000})`.execute(old);
  await sql`insert into api_keys (id, name, prefix, hash, created_at, allowed_models, note)
    values (${OLD_KEY_ID}, 'old key', 'sk-oldold', ${'a'.repeat(64)}, ${now}, '[]', '')`.execute(old);
}

/** The old admin is now the first admin user, holding the session; the key has no owner. */
export async function expectOneAdminMigrated(store: Store): Promise<void> {
  expect(store.migrationsApplied).toContain('0009_users');
  const users = await store.users.list();
  expect(users).toHaveLength(1);
  expect(users[0]).toMatchObject({ name: 'admin', role: 'admin', signIn: 'password', disabledAt: null });
  expect(users[0]!.passwordHash).toMatch(/^scrypt\$/);
  expect(await store.meta.get('admin.first_user_id')).toBe(users[0]!.id);
  expect(await store.meta.get('admin.password_hash')).toBeUndefined();
  expect((await store.sessions.findByTokenHash(hashSessionToken(OLD_SESSION_TOKEN)))?.userId).toBe(users[0]!.id);
  expect((await store.keys.get(OLD_KEY_ID))?.ownerId).toBeNull();
}

const BEFORE_MAX_BUDGET = '0010_api_key_manage';
const CAPLESS_USER_ID = 'usr_beforecapxx';
const LIMITED_KEY_ID = 'key_limitedxxxx';

/**
 * A database as the version before migration 0011_user_max_budget left it: a member with an
 * allowance, and a key of theirs with limits and an expiry (which migration 0013 makes ceilings).
 */
export async function writeUsersBeforeMaxBudget(
  old: Kysely<unknown>,
  options: { migrationTableSchema?: string; disableTransactions?: boolean } = {},
): Promise<void> {
  await migrateUpTo(old, BEFORE_MAX_BUDGET, options);
  await sql`insert into users (id, name, role, sign_in, created_at, allowed_models)
    values (${CAPLESS_USER_ID}, 'mia', 'member', 'password', ${Date.UTC(2030, 0, 1)}, '["qwen"]')`.execute(old);
  await sql`insert into api_keys (id, name, prefix, hash, created_at, expires_at, allowed_models, note, rpm, owner_id)
    values (${LIMITED_KEY_ID}, 'limited', 'sk-limits', ${'b'.repeat(64)}, ${Date.UTC(2030, 0, 1)},
      ${Date.UTC(2031, 0, 1)}, '[]', '', 7, ${CAPLESS_USER_ID})`.execute(old);
}

/**
 * The member is still there, unchanged, with no maximum budget; their key's limits and expiry are
 * ceilings, as nobody knows who set them.
 */
export async function expectUsersKeptWithoutCap(store: Store): Promise<void> {
  expect(store.migrationsApplied).toEqual([
    '0011_user_max_budget',
    '0012_audit_changes',
    '0013_api_key_ceilings',
    '0014_user_name_key',
  ]);
  expect((await store.keys.get(LIMITED_KEY_ID))?.ceilings).toEqual({
    rpm: 7,
    tpm: null,
    concurrent: null,
    expiresAt: Date.UTC(2031, 0, 1),
  });
  expect(await store.users.get(CAPLESS_USER_ID)).toMatchObject({
    name: 'mia',
    role: 'member',
    allowedModels: ['qwen'],
    maxBudget: null,
  });
}

const BEFORE_NAME_KEY = '0013_api_key_ceilings';

/**
 * A database as the version before migration 0014_user_name_key left it: look-alike names were
 * accepted, so `Bob` (oldest), `bob\u200b` and `BOB` are three users, next to `carol`.
 */
export async function writeUsersBeforeNameKey(
  old: Kysely<unknown>,
  options: { migrationTableSchema?: string; disableTransactions?: boolean } = {},
): Promise<void> {
  await migrateUpTo(old, BEFORE_NAME_KEY, options);
  const names = ['Bob', 'bob\u200b', 'carol', 'BOB'];
  for (const [i, name] of names.entries())
    await sql`insert into users (id, name, role, sign_in, created_at, allowed_models)
      values (${`usr_lookalike${i}`}, ${name}, 'member', 'password', ${Date.UTC(2030, 0, 1) + i}, '[]')`.execute(old);
}

/**
 * The oldest of the look-alikes holds the name: every look-alike finds it, and a new one is
 * refused; the younger ones are still found by their exact names.
 */
export async function expectNameKeysMigrated(store: Store): Promise<void> {
  expect(store.migrationsApplied).toEqual(['0014_user_name_key']);
  expect((await store.users.findByName('bob'))?.id).toBe('usr_lookalike0');
  expect((await store.users.findByName('ｂｏｂ'))?.id).toBe('usr_lookalike0');
  expect((await store.users.findByName('bob\u200b'))?.id).toBe('usr_lookalike1');
  expect((await store.users.findByName('BOB'))?.id).toBe('usr_lookalike3');
  expect((await store.users.findByName('CAROL'))?.id).toBe('usr_lookalike2');
  const another = { ...(await store.users.get('usr_lookalike2'))!, id: 'usr_lookalike9' };
  await expect(store.users.create({ ...another, name: 'bOb' })).rejects.toThrow();
  await expect(store.users.create({ ...another, name: 'Carol' })).rejects.toThrow();
  expect((await store.users.create({ ...another, name: 'dora' })).name).toBe('dora');
}
