/**
 * `gatehouse backup <file>`: a consistent copy of the SQLite store, taken while the server
 * runs (SQLite's online backup API). PostgreSQL has its own tools (`pg_dump`), so with
 * `GATEHOUSE_DATABASE_URL` set this refuses and says so.
 *
 * Exit codes: 0 done, 1 refused or failed, 2 usage error.
 */
import { parseArgs } from 'node:util';
import { describePostgresUrl } from '../store/postgres-url.js';
import type { StoreSettings } from '../store/open-store.js';

export interface BackupCliIo {
  stdout: NodeJS.WritableStream;
  stderr: NodeJS.WritableStream;
}

const HELP = `Usage: gatehouse backup FILE

Copies the SQLite store (<GATEHOUSE_DATA_DIR>/gatehouse.db) to FILE while the server keeps
running: a consistent snapshot, checked, written under a temporary name and renamed into
place. FILE must not exist yet. To restore: stop the server, copy FILE to
<GATEHOUSE_DATA_DIR>/gatehouse.db, delete gatehouse.db-wal and gatehouse.db-shm, start.

With GATEHOUSE_DATABASE_URL set (PostgreSQL), use pg_dump instead.
`;

export async function runBackupCommand(argv: string[], io: BackupCliIo, settings: StoreSettings): Promise<number> {
  let positionals: string[];
  try {
    const parsed = parseArgs({
      args: argv,
      options: { help: { type: 'boolean', short: 'h' } },
      allowPositionals: true,
      strict: true,
    });
    if (parsed.values.help) {
      io.stdout.write(HELP);
      return 0;
    }
    positionals = parsed.positionals;
  } catch (error) {
    io.stderr.write(`gatehouse backup: ${(error as Error).message}\n\n${HELP}`);
    return 2;
  }
  if (positionals.length !== 1 || positionals[0] === '') {
    io.stderr.write(`gatehouse backup: expected exactly one FILE\n\n${HELP}`);
    return 2;
  }
  if (settings.databaseUrl) {
    io.stderr.write(
      `gatehouse backup copies the SQLite store, but this configuration uses PostgreSQL ` +
        `(${describePostgresUrl(settings.databaseUrl, settings.databaseSchema)}).\n` +
        'Back it up with pg_dump, e.g. pg_dump --format=custom --file=gatehouse.dump "$GATEHOUSE_DATABASE_URL"\n',
    );
    return 1;
  }
  // Loaded here so `gatehouse --help` never loads the native module.
  const { backupSqliteFile, sqliteFileIn } = await import('../store/sqlite.js');
  try {
    const result = await backupSqliteFile(sqliteFileIn(settings.dataDir), positionals[0]!);
    io.stdout.write(`Backed up ${result.source} to ${result.destination} (${result.pages} pages, integrity ok).\n`);
    return 0;
  } catch (error) {
    io.stderr.write(`gatehouse backup failed: ${error instanceof Error ? error.message : String(error)}\n`);
    return 1;
  }
}
