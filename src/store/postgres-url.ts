/** Names a PostgreSQL store for logs and errors without anything that could be a credential. */

/** `postgres://host:5432/db (schema public)`: nothing that could be a credential. */
export function describePostgresUrl(url: string, schema?: string): string {
  let where: string;
  try {
    const parsed = new URL(url);
    const host = parsed.host || new URLSearchParams(parsed.search).get('host') || 'localhost';
    const database = decodeURIComponent(parsed.pathname.replace(/^\//, '')) || '(default database)';
    where = `postgres://${host}/${database}`;
  } catch {
    where = 'postgres://(unparseable URL)';
  }
  return `${where} (schema ${schema ?? 'public'})`;
}
