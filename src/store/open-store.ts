/**
 * Opens the store the settings ask for: PostgreSQL when `databaseUrl` is set, otherwise the
 * embedded SQLite file in `dataDir`. Either way the schema is created and migrated during the
 * open, so a fresh data directory or an empty database just works.
 */
import { describePostgresUrl } from './postgres-url.js';
import type { Store } from './store.js';

/**
 * What `openStore` reads: `databaseUrl` (`postgres://...`) set means PostgreSQL, in
 * `databaseSchema` (default `public`); unset means SQLite in `dataDir`.
 */
export interface StoreSettings {
  dataDir: string;
  databaseUrl: string | undefined;
  databaseSchema?: string | undefined;
}

/** Opens the store the settings ask for, migrating it to the current schema. */
export async function openStore(settings: StoreSettings): Promise<Store> {
  if (settings.databaseUrl) {
    // Loaded on demand so the SQLite-only path never loads `pg`.
    const { openPostgresStore } = await import('./postgres.js');
    return openPostgresStore({
      url: settings.databaseUrl,
      ...(settings.databaseSchema ? { schema: settings.databaseSchema } : {}),
    });
  }
  const { openSqliteStore } = await import('./sqlite.js');
  return openSqliteStore({ dataDir: settings.dataDir });
}

/**
 * Where the store lives, for logs: the SQLite file, or PostgreSQL's host, port, database and
 * schema. Never the user, password or query string of the URL (it may carry a password).
 */
export function describeStoreLocation(settings: StoreSettings): string {
  if (!settings.databaseUrl) return `sqlite in ${settings.dataDir}`;
  return describePostgresUrl(settings.databaseUrl, settings.databaseSchema);
}
